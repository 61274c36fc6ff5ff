/**
 * <state_dir>/ctld-fast: what slurm/ctld-epilog's shell path needs to decide
 * and queue an ended job without starting Node (a few ms and a few MB
 * instead of ~80 ms and ~50 MB for each of thousands of ends a minute): the
 * state dir as the configuration resolved it, the configuration file and
 * slurm.conf (with its Include files) with their mtimes, and slurm.conf's
 * nodes with and without GPUs. The shell trusts it only while every one of
 * those is as recorded (the same file, the same mtime, the same
 * L9GPU_STATE_DIR); anything else, and it runs the Node epilog, which writes
 * the file again. Tab-separated lines: `state DIR`, `env VALUE|-`,
 * `config PATH MTIME`, `file PATH MTIME`, `gpu NODE`, `cpu NODE`.
 */
import { renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NodeGres } from './ctld-gpu-jobs.js';

export const FAST_FILE = 'ctld-fast';

const mtime = (p: string) => Math.floor(statSync(p).mtimeMs / 1000);
/** A value the shell reads whole: no tab, newline or quote in it. */
const plain = (s: string) => !/[\t\n'"\\]/.test(s);

/** Writes the file (whole: tmp then rename); false where the shell could not use it (a path it cannot read safely). */
export function writeFastPath(stateDir: string, configPath: string, env: NodeJS.ProcessEnv, known: NodeGres): boolean {
  const paths = [stateDir, configPath, ...known.files];
  if (!paths.every(plain) || ![...known.all].every(plain)) return false;
  const lines = [`state\t${stateDir}`, `env\t${env.L9GPU_STATE_DIR ?? '-'}`, `config\t${configPath}\t${mtime(configPath)}`];
  for (const f of known.files) lines.push(`file\t${f}\t${mtime(f)}`);
  for (const n of known.all) lines.push(`${known.gpu.has(n) ? 'gpu' : 'cpu'}\t${n}`);
  const tmp = join(stateDir, `${FAST_FILE}.${process.pid}`);
  writeFileSync(tmp, `${lines.join('\n')}\n`, { mode: 0o640 });
  renameSync(tmp, join(stateDir, FAST_FILE));
  return true;
}
