/**
 * Build step: every command's and topic's --help as oclif renders it (no
 * colour, 80 columns), written to dist/help.json, so bin/run.js prints help
 * without loading the CLI framework (3.4x bare node's start-up otherwise).
 * test/serial/cli.test.ts compares each text with oclif's own output. Beside it,
 * dist/commands.json: each command's entry from the command table (and the
 * version flags, the light entry's), the routes bin/run.js starts by.
 */
import { writeFileSync } from 'node:fs';

process.env.NO_COLOR = '1';
delete process.env.FORCE_COLOR;
const { Config } = await import('@oclif/core');
const { default: ManHelp } = await import('./help.js');
const { COMMANDS, VERSION_ARGS } = await import('./command-table.js');

const root = new URL('../../../', import.meta.url);
const config = await Config.load({ root: new URL('.', root).pathname });
const ids = [
  '',
  ...config.commands.filter((c) => !c.hidden).map((c) => c.id),
  ...config.topics.filter((t) => !t.hidden && !config.findCommand(t.name)).map((t) => t.name),
];
const texts: Record<string, string> = {};
const write = process.stdout.write.bind(process.stdout);
for (const id of ids) {
  let out = '';
  process.stdout.write = ((s: string | Uint8Array) => ((out += String(s)), true)) as typeof process.stdout.write;
  try {
    // a fresh Config each time: oclif's Help rewrites the ids of the commands it renders
    await new ManHelp(await Config.load({ root: new URL('.', root).pathname }), { stripAnsi: true }).showHelp(id ? id.split(':') : []);
  } finally {
    process.stdout.write = write;
  }
  // the root help's VERSION line names the node that runs it, filled in by bin/run.js
  texts[id.replace(/:/g, ' ')] = out.split(config.userAgent).join('\0UA\0');
}
writeFileSync(new URL('dist/help.json', root), JSON.stringify(texts));
const routes: Record<string, string> = Object.fromEntries([
  ...COMMANDS.map((c) => [c.id, c.entry]),
  ...VERSION_ARGS.map((a) => [a, 'version']),
]);
writeFileSync(new URL('dist/commands.json', root), JSON.stringify(routes));
