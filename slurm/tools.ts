/** Running Slurm's client commands from a CLI command, with the [slurm] settings (bin_dir, slurm_conf) the daemon uses. */
import type { Config } from '../src/core/config/load.js';
import { readSection } from '../src/core/config/read.js';
import { requireTool, runTool } from '../src/core/tool.js';
import { slurmConfPath } from './paths.js';
import { SLURM_SECTION } from './config.js';

/** Where Slurm's clients usually are, after PATH: slurmd, slurmctld and systemd give a short PATH. */
export const SLURM_DIRS = ['/usr/bin', '/usr/local/bin', '/opt/slurm/bin'];

export function slurmCommand(cfg: Config, name: string, args: readonly string[], extraEnv: Record<string, string> = {}): Promise<string> {
  const s = readSection(cfg, SLURM_SECTION);
  const conf = slurmConfPath(cfg);
  const path = requireTool(name, SLURM_DIRS, '[slurm] bin_dir', s.bin_dir ? [s.bin_dir] : []);
  return runTool(path, args, s.command_timeout * 1000, undefined, { ...(conf ? { SLURM_CONF: conf } : {}), ...extraEnv });
}
