/**
 * Polling reconciles; it does not replace the hooks. Every interval it asks
 * Slurm which jobs run on this node and:
 *  - opens bindings a prolog missed (no PrologFlags=Alloc, hook failure),
 *  - closes bindings of job runs that are gone (epilog never ran: node crash,
 *    slurmd killed, daemon down meanwhile),
 *  - fills what the prolog environment lacks (job name, array ids, QOS),
 *  - resolves "gres:<index>" bindings once the inventory knows the GPU,
 *  - records the end state of ended jobs from sacct (or scontrol within
 *    MinJobAge when there is no accounting).
 * It is cheap at 10,000 nodes: by default the node's own step daemons say
 * which jobs run here (no slurmctld RPC), and slurmctld is asked about single
 * jobs only (new, ending, unconfirmed), a bounded number a reconcile; what it
 * costs does not grow with the queue. `[slurm] reconcile_source = squeue`
 * keeps the old whole-queue query for nodes whose step daemons cannot be
 * asked.
 * Slurm being down changes nothing in the store: last known bindings stay,
 * and the failure is visible in doctor and l9gpu.slurm.reconcile.age.
 *
 * This file is the policy's frame: the options read once, which list
 * strategy runs (list-strategy.ts: reconcile-local.ts or reconcile-queue.ts),
 * the node's name (node-identity.ts), the runs written (reconcile-runs.ts),
 * the end states filled in (end-states.ts), and how a failure is told. How
 * each Slurm release is asked is slurm-client.ts; the reads and writes of
 * the jobs and bindings tables are named functions of src/store/jobs.ts.
 */
import type { Logger } from '../src/core/log.js';
import type { Db } from '../src/store/open.js';
import { setMeta } from '../src/store/meta.js';
import { EndStateBackfill } from './end-states.js';
import type { ListContext, ListStrategy } from './list-strategy.js';
import { NodeIdentity } from './node-identity.js';
import { LocalList } from './reconcile-local.js';
import { QueueList } from './reconcile-queue.js';
import { ReconcileRuns } from './reconcile-runs.js';
import { SlurmClient, type ListSource } from './slurm-client.js';

export type ReconcileSource = 'local' | 'squeue';

export interface ReconcilerOptions {
  db: Db;
  /** This node's name in Slurm, asked at every reconcile (the hooks may have taught it since); guessed: only the host name. */
  node: () => { name: string; guessed: boolean };
  gresConf: string;
  binDir: string | null;
  slurmConf: string | null;
  commandTimeoutMs: number;
  /** local: node-local job list, slurmctld asked about single jobs; squeue: the whole queue every reconcile. */
  source?: ReconcileSource;
  /** How long a job run Slurm confirmed running here is not asked about again (local source). */
  recheckMs?: number;
  /** A binding younger than this is never closed by polling: Slurm's answers may lag a prolog that just ran. */
  graceMs?: number;
  log: Logger;
}

/** `[slurm] job_recheck` and `reconcile_grace`'s defaults, for a reconciler made without them (the tests). */
const DEFAULT_RECHECK_MS = 300_000;
const DEFAULT_GRACE_MS = 30_000;

export interface ReconcileResult {
  closed: number;
  states: number;
  source: ListSource;
}

export class Reconciler {
  private failing = '';
  lastOk = 0;
  private readonly identity: NodeIdentity;
  private readonly list: ListStrategy;
  private readonly endStates: EndStateBackfill;

  constructor(private readonly o: ReconcilerOptions) {
    const slurm = new SlurmClient(o);
    this.identity = new NodeIdentity(o.db, slurm, o.log);
    this.endStates = new EndStateBackfill(o.db, slurm);
    const context: ListContext = {
      db: o.db,
      slurm,
      identity: this.identity,
      runs: new ReconcileRuns(o.db, o.log, (jobId) => this.endStates.settle(jobId)),
      gresConf: o.gresConf,
      recheckMs: o.recheckMs ?? DEFAULT_RECHECK_MS,
      graceMs: o.graceMs ?? DEFAULT_GRACE_MS,
      log: o.log,
    };
    this.list = o.source === 'squeue' ? new QueueList(context) : new LocalList(context);
  }

  async reconcileOnce(now = Date.now()): Promise<ReconcileResult> {
    const db = this.o.db;
    const { node, guessed } = await this.identity.resolve(this.o.node(), now);
    let result: ReconcileResult;
    try {
      const { closed, source } = await this.list.reconcile(node, guessed, now);
      result = { closed, states: 0, source };
    } catch (e) {
      const msg = (e as Error).message;
      if (msg !== this.failing) this.o.log.error('Slurm query failed: keeping the last known bindings', { error: msg });
      this.failing = msg;
      setMeta(db, 'reconcile.last_error', `${new Date(now).toISOString()} ${msg}`);
      throw e;
    }
    if (this.failing) this.o.log.info('Slurm answers again', { source: result.source });
    this.failing = '';
    result.states = await this.endStates.fill(now);
    this.lastOk = now;
    setMeta(db, 'reconcile.last_ok', String(now));
    return result;
  }
}
