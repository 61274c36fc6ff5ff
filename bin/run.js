#!/usr/bin/env node
// `l9gpu daemon` is a long-running process: it starts without the CLI framework
// (see src/cli/daemon-main.ts). Everything else, and all help, goes through oclif.
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
const help = args.includes('--help') || args.includes('-h');
if (args[0] === 'slurm' && (args[1] === 'prolog' || args[1] === 'epilog') && !help) {
  // the hooks run on every job start and end: the single-file bundle, never the CLI framework
  const hook = fileURLToPath(new URL('../dist/hook/hook.cjs', import.meta.url));
  process.argv.splice(1, 2, hook);
  createRequire(import.meta.url)(hook);
} else if (args[0] === 'daemon' && !help) {
  const { main } = await import('../dist/src/cli/daemon-main.js');
  await main(args.slice(1));
} else {
  const { execute } = await import('@oclif/core');
  await execute({ dir: import.meta.url });
}
