/**
 * NVIDIA's own libnvidia-ml and nvml.h, no GPU needed: Debian non-free's
 * packages as test/setup/install-test-deps.sh unpacks them into
 * .cache/nvidia-ml/<suite>/ (with a `packages` file naming each package and
 * version).
 */
import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './paths.js';

const DIR = join(ROOT, '.cache', 'nvidia-ml');

export interface RealNvmlLibrary {
  /** The Debian suite it came from (bookworm: R535, trixie: R550). */
  suite: string;
  /** Package name -> Debian version. */
  packages: Record<string, string>;
  /** libnvidia-ml.so.1, the name the plugin loads. */
  library: string;
  /** The driver version its file is named after (libnvidia-ml.so.<version>). */
  version: string;
}

function suite(name: string): { root: string; packages: Record<string, string> } {
  const root = join(DIR, name);
  const list = join(root, 'packages');
  if (!existsSync(list))
    throw new Error(`NVIDIA's NVML (Debian ${name}) is not in ${root}: run \`sudo bash test/setup/install-test-deps.sh\``);
  const packages = Object.fromEntries(
    readFileSync(list, 'utf8')
      .trim()
      .split('\n')
      .map((l) => l.split(' ') as [string, string]),
  );
  return { root, packages };
}

/** The libraries of bookworm (R535) and trixie (R550). */
export function realNvmlLibraries(): RealNvmlLibrary[] {
  return ['bookworm', 'trixie'].map((name) => {
    const { root, packages } = suite(name);
    const lib = join(root, 'usr', 'lib');
    const arch = readdirSync(lib).find((d) => existsSync(join(lib, d, 'nvidia', 'current', 'libnvidia-ml.so.1')));
    if (!arch) throw new Error(`no nvidia/current/libnvidia-ml.so.1 under ${lib}`);
    const library = join(lib, arch, 'nvidia', 'current', 'libnvidia-ml.so.1');
    return { suite: name, packages, library, version: readlinkSync(library).replace(/^libnvidia-ml\.so\./, '') };
  });
}

/** trixie's nvml.h (libnvidia-ml-dev, CUDA 12.4): the newest header Debian's stable suites have. */
export function realNvmlHeader(): { header: string; package: string } {
  const { root, packages } = suite('trixie');
  const header = join(root, 'usr', 'include', 'nvml.h');
  if (!existsSync(header)) throw new Error(`no nvml.h in ${root}: run \`sudo bash test/setup/install-test-deps.sh\``);
  return { header, package: `libnvidia-ml-dev ${packages['libnvidia-ml-dev']}` };
}
