/**
 * `npm run package`: the offline artifacts of this machine's platform from the
 * built checkout, into dist/package/ (or --out DIR): a .deb, an .rpm and a
 * .tar.gz, each with the bundled Node.js runtime (runtime.ts) and the native
 * modules built for it (native.ts), none needing more than RHEL 8's glibc;
 * and the Kubernetes mode's container image as an oci-archive (image.ts),
 * where umoci is installed (--no-image: without it).
 * Flags: --out DIR; --no-image; --fast (lowest compression: what the tests build, the
 * same formats in a fraction of the time).
 */
import { rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildDeb } from './debian.js';
import { buildImage, umociPath } from './image.js';
import { assembleTree, readBuildInfo } from './release-tree.js';
import { buildRpm } from './rpm.js';
import { findRuntime } from './runtime.js';
import { buildTarball } from './tarball.js';

function main(argv: string[]): void {
  const root = fileURLToPath(new URL('../../../', import.meta.url));
  const flag = (name: string): string | undefined => {
    const at = argv.indexOf(name);
    return at >= 0 ? argv[at + 1] : undefined;
  };
  const fast = argv.includes('--fast');
  const outDir = resolve(flag('--out') ?? join(root, 'dist/package'));
  const work = join(outDir, '.work');
  const runtime = findRuntime(root);
  const info = readBuildInfo(root, runtime);
  const tree = join(work, 'tree');
  assembleTree(root, tree, info, runtime);
  const made = [
    buildDeb(tree, work, outDir, info, fast),
    buildRpm(tree, work, outDir, info, fast),
    buildTarball(tree, work, outDir, info, fast),
  ];
  if (argv.includes('--no-image')) process.stderr.write('no container image: --no-image\n');
  else if (!umociPath())
    process.stderr.write(
      'no container image: umoci is not installed (apt-get install umoci; dnf install umoci), the image is built with it\n',
    );
  else made.push(buildImage(tree, work, outDir, info));
  rmSync(work, { recursive: true, force: true });
  for (const f of made) process.stdout.write(`${f}  ${(statSync(f).size / 2 ** 20).toFixed(1)} MiB\n`);
  process.stdout.write(
    `l9gpu ${info.version} (${info.commit}) for ${info.platform}, on its own Node.js ${info.nodeVersion} (ABI ${info.nodeAbi})\n`,
  );
}

try {
  main(process.argv.slice(2));
} catch (e) {
  process.stderr.write(`npm run package: ${(e as Error).message}\n`);
  process.exitCode = 1;
}
