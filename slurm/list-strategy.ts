/**
 * How a reconcile learns which jobs run on this node, and closes the runs
 * that no longer do: the node's step daemons with single-job questions to
 * slurmctld (reconcile-local.ts), or the whole queue (reconcile-queue.ts).
 * One is chosen from `[slurm] reconcile_source` when the reconciler is made.
 */
import type { Logger } from '../src/core/log.js';
import type { Db } from '../src/store/open.js';
import type { NodeIdentity } from './node-identity.js';
import type { ReconcileRuns } from './reconcile-runs.js';
import type { ListSource, SlurmClient } from './slurm-client.js';

export interface ListStrategy {
  /** Opens, fills in and closes this node's runs on Slurm's word; guessed: the node name is only the host name. */
  reconcile(node: string, guessed: boolean, now: number): Promise<{ closed: number; source: ListSource }>;
}

/** What either strategy works with, its settings resolved (no defaults left to apply). */
export interface ListContext {
  db: Db;
  slurm: SlurmClient;
  identity: NodeIdentity;
  runs: ReconcileRuns;
  gresConf: string;
  /** How long a job run Slurm confirmed running here is not asked about again. */
  recheckMs: number;
  /** A binding younger than this is never closed by polling: Slurm's answers may lag a prolog that just ran. */
  graceMs: number;
  log: Logger;
}
