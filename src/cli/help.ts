/**
 * `--help` in the shape of a man page: oclif's USAGE, ARGUMENTS, FLAGS,
 * DESCRIPTION and EXAMPLES, then EXIT STATUS, FILES, ENVIRONMENT and SEE
 * ALSO for each command, from its row of the command table
 * (command-table.ts). (package.json oclif.helpClass)
 */
import { Help, type Command } from '@oclif/core';
import { COMMANDS } from './command-table.js';

export default class ManHelp extends Help {
  protected override formatCommand(command: Command.Loadable): string {
    const base = super.formatCommand(command);
    const m = COMMANDS.find((c) => c.id === command.id.replace(/:/g, ' '))?.man;
    if (!m) return base;
    const parts = [base, this.section('EXIT STATUS', m.exit)];
    if (m.files) parts.push(this.section('FILES', m.files));
    if (m.env) parts.push(this.section('ENVIRONMENT', m.env));
    parts.push(this.section('SEE ALSO', m.see.join(', ')));
    return parts.join('\n\n');
  }
}

/** Command ids with a man table (a test holds every command to having one). */
export const MAN_COMMANDS = COMMANDS.map((c) => c.id);
