#!/usr/bin/env node
// `l9gpu daemon` is a long-running process: it starts without the CLI framework
// (see src/cli/daemon-main.ts). Everything else, and all help, goes through oclif.
const args = process.argv.slice(2);
if (args[0] === 'daemon' && !args.includes('--help') && !args.includes('-h')) {
  const { main } = await import('../dist/src/cli/daemon-main.js');
  await main(args.slice(1));
} else {
  const { execute } = await import('@oclif/core');
  await execute({ dir: import.meta.url });
}
