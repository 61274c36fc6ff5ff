/**
 * A node whose slurmctld does not answer: 22.05's scontrol (no listjobs) that
 * prints slurm_strerror's "Unable to contact slurm controller" for any query.
 * The reconciler then keeps the bindings it has, so a run a test opened with
 * recordStart stays open as the prolog left it. For tests and benchmarks that
 * need Slurm attribution without a cluster.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Writes the stand-in under dir; returns the ini lines that point the daemon at it ([daemon] attribution and state_dir, [slurm]). */
export function slurmControllerDown(dir: string, node: string): { daemon: string; slurm: string; state: string } {
  const bin = join(dir, 'bin');
  mkdirSync(bin, { recursive: true });
  writeFileSync(
    join(bin, 'scontrol'),
    `#!/bin/sh\n[ "$1" = listjobs ] && { echo 'invalid keyword: listjobs' >&2; exit 1; }\necho ` +
      `'slurm_load_jobs error: Unable to contact slurm controller (connect failure)' >&2; exit ` +
      `1\n`,
    { mode: 0o755 },
  );
  writeFileSync(join(dir, 'slurm.conf'), 'ClusterName=ci\n');
  const state = join(dir, 'state');
  return {
    state,
    daemon: `attribution = slurm\nstate_dir = ${state}\n`,
    slurm: `[slurm]\nslurm_conf = ${join(dir, 'slurm.conf')}\nnode_name = ${node}\nbin_dir = ${bin}\n`,
  };
}
