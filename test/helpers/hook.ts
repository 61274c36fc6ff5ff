import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { PRODUCT } from './paths.js';

/**
 * A Slurm hook (slurm/prolog, slurm/epilog) of the product under test, in
 * slurmd's environment: no PATH, no HOME, only what the test gives. A release
 * tree's hooks run its own node/ and must ignore L9GPU_NODE (this Node.js could
 * not load the tree's native module).
 */
export function runHook(kind: 'prolog' | 'epilog', env: Record<string, string>): { status: number | null; stderr: string } {
  const r = spawnSync(join(PRODUCT.root, 'slurm', kind), [], { env: { L9GPU_NODE: process.execPath, ...env }, encoding: 'utf8' });
  return { status: r.status, stderr: r.stderr };
}
