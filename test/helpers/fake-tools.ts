/**
 * amd-smi and hl-smi stand-ins: executables on PATH that print recorded
 * real-format output (plugins/<name>/testdata) and log how they were called.
 */
import { chmodSync, copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, tempDir } from './paths.js';

export const AMD_TD = join(ROOT, 'plugins', 'amdsmi', 'testdata');
export const HL_TD = join(ROOT, 'plugins', 'hlsmi', 'testdata');

export class FakeTools {
  readonly bin: string;
  readonly data: string;
  constructor() {
    const dir = tempDir('l9gpu-tools-');
    this.bin = join(dir, 'bin');
    this.data = join(dir, 'data');
    mkdirSync(this.bin);
    mkdirSync(this.data);
    const script = (name: string, body: string) => {
      writeFileSync(
        join(this.bin, name),
        `#!/bin/sh\nd='${this.data}'\necho "$@" >> "$d/${name}.calls"\nif [ -f "$d/${name}.fail" ]; ` +
          `then cat "$d/${name}.fail" >&2; exit 1; fi\n${body}`,
      );
      chmodSync(join(this.bin, name), 0o755);
    };
    script(
      'amd-smi',
      'case "$1" in\n  list|static|metric|process) exec cat "$d/amd-$1.json" ;;\n  *) echo ' +
        '"amd-smi: invalid choice: $1" >&2; exit 2 ;;\nesac\n',
    );
    script('hl-smi', '[ "$1" = "-Q" ] && [ "$3" = "-f" ] || { echo "hl-smi: bad arguments: $*" >&2; exit 2; }\nexec cat "$d/hl-smi.csv"\n');
  }

  /** Which recorded case amd-smi prints: `amd-smi <cmd> --json` prints testdata/<name>/<cmd>.json. */
  amd(name: string): this {
    for (const cmd of ['list', 'static', 'metric', 'process'])
      copyFileSync(join(AMD_TD, name, `${cmd}.json`), join(this.data, `amd-${cmd}.json`));
    return this;
  }

  /** `hl-smi -Q ... -f csv` prints testdata/<name>/hl-smi.csv. */
  hl(name: string): this {
    copyFileSync(join(HL_TD, name, 'hl-smi.csv'), join(this.data, 'hl-smi.csv'));
    return this;
  }

  /** Makes a tool fail with a recorded error message on stderr (exit code 1). */
  fail(tool: 'amd-smi' | 'hl-smi', stderrFile: string | undefined): this {
    const p = join(this.data, `${tool}.fail`);
    if (stderrFile) copyFileSync(stderrFile, p);
    else writeFileSync(p, '');
    return this;
  }

  calls(tool: string): string[] {
    try {
      return readFileSync(join(this.data, `${tool}.calls`), 'utf8')
        .trim()
        .split('\n');
    } catch {
      return [];
    }
  }

  env(): Record<string, string> {
    return { PATH: `${this.bin}:${process.env.PATH}` };
  }
}
