/**
 * `npm run package`: the offline artifacts of this machine's platform from the
 * built checkout, into dist/package/ (or --out DIR): a .deb and a .tar.gz, each
 * with the native modules built here. Build on the OS and Node major the nodes run.
 * Flag: --out DIR.
 */
import { rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildDeb } from './debian.js';
import { assembleTree, readBuildInfo } from './release-tree.js';
import { buildTarball } from './tarball.js';

function main(argv: string[]): void {
  const root = fileURLToPath(new URL('../../../', import.meta.url));
  const flag = (name: string): string | undefined => {
    const at = argv.indexOf(name);
    return at >= 0 ? argv[at + 1] : undefined;
  };
  const outDir = resolve(flag('--out') ?? join(root, 'dist/package'));
  const work = join(outDir, '.work');
  const info = readBuildInfo(root);
  const tree = join(work, 'tree');
  assembleTree(root, tree, info);
  const made = [buildDeb(tree, work, outDir, info), buildTarball(tree, work, outDir, info)];
  rmSync(work, { recursive: true, force: true });
  for (const f of made) process.stdout.write(`${f}  ${(statSync(f).size / 2 ** 20).toFixed(1)} MiB\n`);
  process.stdout.write(`l9gpu ${info.version} (${info.commit}) for ${info.platform}, Node.js ABI ${info.nodeAbi} (${info.nodeVersion}, at least ${info.nodeMin})\n`);
}

try {
  main(process.argv.slice(2));
} catch (e) {
  process.stderr.write(`npm run package: ${(e as Error).message}\n`);
  process.exitCode = 1;
}
