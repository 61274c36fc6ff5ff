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
 * This file is the policy only: what to ask and what an answer changes.
 * How each Slurm release is asked is slurm-client.ts; the reads and writes
 * of the jobs and bindings tables are named functions of src/store/jobs.ts.
 */
import type { Logger } from '../src/core/log.js';
import type { Db } from '../src/store/open.js';
import {
  dropGresBindings,
  endsWithoutState,
  openBindingCount,
  openRunsBound,
  openSluidRun,
  recordEnd,
  recordEndState,
  recordStart,
  reopenRun,
  runsBoundSince,
  type JobRecord,
} from '../src/store/jobs.js';
import { setMeta } from '../src/store/meta.js';
import { hostname } from 'node:os';
import { LEARNED_NODE_KEY } from './node-name.js';
import { readGresLayout, type GresLayout } from './gres.js';
import { AmbiguousJobRecord, type SlurmJob } from './jobs-query.js';
import { ToolOutputTooLarge } from '../src/core/tool.js';
import { gresIndicesToGpus, storeInventory } from './resolve.js';
import { SlurmClient, type ListSource } from './slurm-client.js';

/** At most this many jobs in one sacct call, and this many scontrol calls per reconcile. */
const SACCT_BATCH = 100;
const SCONTROL_PER_TICK = 10;
const ACTIVE = new Set(['RUNNING', 'COMPLETING', 'CONFIGURING', 'SUSPENDED', 'STAGE_OUT', 'RESIZING', 'SIGNALING']);

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

export interface ReconcileResult {
  closed: number;
  states: number;
  source: ListSource;
}

/** slurmctld's answer about one job: running here, or not (ended, elsewhere, requeued), or forgotten. */
type Answer = { job: SlurmJob; here: boolean } | { job: null; here: false };

export class Reconciler {
  private failing = '';
  lastOk = 0;
  /** Jobs whose end state Slurm has answered (or can no longer answer): never asked again. */
  private readonly settled = new Set<string>();
  /** The node name Slurm confirmed, and until when that answer holds. */
  private confirmed = { name: '', until: 0 };
  /** Local source: when slurmctld last answered about a job id (ms), whether it ran here then, and whether a step here listed it. */
  private readonly answered = new Map<string, { at: number; here: boolean; listed: boolean }>();
  /** When the whole-queue source last said which job records it could not read. */
  private saidUnreadableAt = -Infinity;
  /** Jobs whose record the whole queue's text did not give, and when each was last asked about alone. */
  private readonly unreadableAsked = new Map<string, number>();
  private readonly slurm: SlurmClient;

  private readonly graceMs: number;

  constructor(private readonly o: ReconcilerOptions) {
    this.graceMs = o.graceMs ?? 30_000;
    this.slurm = new SlurmClient(o);
  }

  /** What slurmctld says of one job: does it run here now (with its GPU indices when it does)? */
  private async askJob(
    id: string,
    node: string,
    now: number,
    open: { runKey: string; bound: boolean } | undefined,
    listed: boolean,
  ): Promise<Answer> {
    let job = await this.slurm.queryJob(id, false);
    const runs = (j: SlurmJob | null) => !!j && ACTIVE.has(j.state) && j.nodes.includes(node);
    // 22.05's one-RPC answer has no GPU indices: a job, a run or a prolog record without a GPU binding needs them
    // (22.05's prolog sees no GPU in its environment for jobs started soon after slurmctld restarted)
    if (runs(job) && this.slurm.jobJson === false && (!open?.bound || open.runKey !== this.runKeyOf(job!)))
      job = await this.slurm.queryJob(id, true);
    const here = runs(job);
    this.answered.set(id, { at: now, here, listed });
    return job ? { job, here } : { job: null, here: false };
  }

  /**
   * Before any prolog has run here, the name is only the host name's guess:
   * ask Slurm which node has this host as its NodeHostName (`scontrol show
   * node -o`, once per 10 minutes at most), and record it as the hooks would.
   */
  private discovered = { until: 0, name: undefined as string | undefined };
  private async discoverNode(now: number): Promise<string | undefined> {
    if (now < this.discovered.until) return this.discovered.name;
    this.discovered = { until: now + 600_000, name: undefined };
    const hosts = new Set([hostname(), hostname().split('.')[0]!]);
    const found = (await this.slurm.nodeHosts()).find((n) => hosts.has(n.host));
    if (found) {
      this.discovered.name = found.name;
      setMeta(this.o.db, LEARNED_NODE_KEY, found.name);
      this.o.log.info("learned this node's name in Slurm", { node: found.name, host: found.host });
    }
    return this.discovered.name;
  }

  /**
   * Throws unless Slurm knows a node by this name: a wrong name (NodeName is
   * not the host name, and no prolog has run here yet to tell the real one)
   * matches no job, and closing every binding on its word would be wrong.
   */
  private async confirmNode(node: string, now: number): Promise<void> {
    if (this.confirmed.name === node && now < this.confirmed.until) return;
    if (!(await this.slurm.knowsNode(node))) {
      throw new Error(
        `this node's name in Slurm is not "${node}" (Slurm knows no such node): set [slurm] ` +
          `node_name, or wait for a prolog to run here; no binding is closed meanwhile`,
      );
    }
    this.confirmed = { name: node, until: now + 600_000 };
  }

  async reconcileOnce(now = Date.now()): Promise<ReconcileResult> {
    const db = this.o.db;
    const resolved = this.o.node();
    const node = resolved.guessed ? ((await this.discoverNode(now).catch(() => undefined)) ?? resolved.name) : resolved.name;
    const guessed = resolved.guessed && node === resolved.name;
    let result: ReconcileResult;
    try {
      result = this.o.source === 'squeue' ? await this.reconcileQueue(node, now) : await this.reconcileLocal(node, guessed, now);
    } catch (e) {
      const msg = (e as Error).message;
      if (msg !== this.failing) this.o.log.error('Slurm query failed: keeping the last known bindings', { error: msg });
      this.failing = msg;
      setMeta(db, 'reconcile.last_error', `${new Date(now).toISOString()} ${msg}`);
      throw e;
    }
    if (this.failing) this.o.log.info('Slurm answers again', { source: result.source });
    this.failing = '';
    result.states = await this.fillEndStates(now);
    this.lastOk = now;
    setMeta(db, 'reconcile.last_ok', String(now));
    return result;
  }

  /**
   * The key the hooks give this run: its SLUID where Slurm has them (25.11+;
   * 26.05 prints it, and a poll that runs before the prolog must use it too,
   * or it opens a phantom r<n> run beside the prolog's). 25.11's squeue does
   * not print it: an open SLUID run of the job is the hook's key.
   */
  private runKeyOf(j: SlurmJob): string {
    if (j.sluid) return `sluid:${j.sluid}`;
    return openSluidRun(this.o.db, j.jobId) ?? `r${j.restarts}`;
  }

  /** Opens (or fills in, or confirms) the run of a job Slurm says runs on this node. */
  private recordRunning(j: SlurmJob, node: string, now: number, gres: () => GresLayout, inv: ReturnType<typeof storeInventory>): void {
    const db = this.o.db;
    const rec: JobRecord = {
      jobId: j.jobId,
      runKey: this.runKeyOf(j),
      cluster: j.cluster,
      user: j.user,
      uid: j.uid,
      account: j.account,
      partition: j.partition,
      qos: j.qos,
      name: j.name,
      arrayJobId: j.arrayJobId,
      arrayTaskId: j.arrayTaskId,
      hetJobId: j.hetJobId,
      hetJobOffset: j.hetJobOffset,
      startTime: j.startTime,
    };
    const gpus = gresIndicesToGpus(j.gpuIdx[node] ?? [], j.sharedIdx[node] ?? [], gres, inv);
    recordStart(db, rec, gpus, 'poll', now);
    // a prolog that ran before the inventory existed left "gres:<i>" bindings: now resolved, they go
    if (gpus.some((g) => !g.uuid.startsWith('gres:'))) dropGresBindings(db, rec.jobId, rec.runKey);
  }

  /** Closes the open run of a job whose epilog did not run here; with Slurm's answer, its end too. */
  private closeRun(jobId: string, runKey: string, job: SlurmJob | null, now: number): void {
    const ended = job && !ACTIVE.has(job.state) && job.state !== 'PENDING' ? job : null;
    recordEnd(
      this.o.db,
      { jobId, runKey },
      { endTime: ended?.endTime ?? now, state: ended?.state, exitCode: ended?.exitCode ?? undefined },
      [],
      'poll',
      now,
    );
    if (ended) this.settled.add(jobId);
    this.o.log.info('closed the bindings of a job whose epilog did not run', {
      job: jobId,
      run: runKey,
      ...(ended ? { state: ended.state } : {}),
    });
  }

  private gresOf(node: string): () => GresLayout {
    let layout: GresLayout | undefined;
    // unreadable: gresIndicesToGpus falls back to gres:<i>
    return () => (layout ??= readGresLayout(this.o.gresConf, node));
  }

  /**
   * The cheap way: the step daemons say which jobs run here; slurmctld is
   * asked about single jobs only, at most SCONTROL_PER_TICK a reconcile, in
   * this order: jobs running here that the store does not know (a prolog
   * that failed), open runs no step shows any more (an epilog that did not
   * run), open runs never confirmed (the job name, array ids and QOS the
   * prolog cannot see), and open runs last confirmed over recheck ago (a node
   * failure slurmctld saw while a step daemon lingers).
   */
  private async reconcileLocal(node: string, guessed: boolean, now: number): Promise<ReconcileResult> {
    const db = this.o.db;
    const listed = await this.slurm.localJobIds(node, guessed);
    const recheck = this.o.recheckMs ?? 300_000;
    // open runs, GPU or not: a prolog records every job of the node
    const open = openRunsBound(db);
    const openIds = new Set(open.map((r) => r.jobId));
    const last = (id: string) => this.answered.get(id);
    for (const id of this.answered.keys()) if (!listed.ids.has(id) && !openIds.has(id)) this.answered.delete(id);

    const queue: string[] = [];
    const add = (ids: Iterable<string>) => {
      for (const id of ids) if (!queue.includes(id)) queue.push(id);
    };
    // a job running here that the store does not know; one Slurm said is not ours while a step here listed it
    // (a lingering step daemon) is asked again only after recheck; one that was not listed then (a requeued job
    // back on this node) is news
    add(
      [...listed.ids].filter(
        (id) => !openIds.has(id) && !(last(id) && !last(id)!.here && last(id)!.listed && now - last(id)!.at < recheck),
      ),
    );
    // no step shows it any more: ended, or completing, or a step-less allocation (asked at most once a grace period)
    const absent = open.filter(
      (r) => !listed.ids.has(r.jobId) && r.start < now - this.graceMs && !(last(r.jobId) && now - last(r.jobId)!.at < this.graceMs),
    );
    // a wrong node name lists no step at all: closing on its word would close everything
    if (absent.length) await this.confirmNode(node, now);
    add(absent.map((r) => r.jobId));
    add(open.filter((r) => !last(r.jobId)).map((r) => r.jobId));
    add(
      open
        .filter((r) => now - (last(r.jobId)?.at ?? 0) >= recheck)
        .sort((a, b) => (last(a.jobId)?.at ?? 0) - (last(b.jobId)?.at ?? 0))
        .map((r) => r.jobId),
    );

    const gres = this.gresOf(node);
    const inv = storeInventory(db);
    let closed = 0;
    for (const id of queue.slice(0, SCONTROL_PER_TICK)) {
      const run = open.find((r) => r.jobId === id);
      const asked = Date.now();
      let a: Answer;
      try {
        a = await this.askJob(id, node, now, run, listed.ids.has(id));
      } catch (e) {
        // its owner's text poses as fields (22.05's text answer), or its answer is over the tool runner's bound (an
        // array's thousands of split tasks with long names): nothing of it is read, the store keeps what the hooks
        // wrote, the other jobs are asked on; said again, and asked again, after a recheck period
        if (!(e instanceof AmbiguousJobRecord) && !(e instanceof ToolOutputTooLarge)) throw e;
        this.answered.set(id, { at: now, here: true, listed: listed.ids.has(id) });
        this.o.log.warn("a job's record in Slurm is not read", { job: id, error: (e as Error).message });
        continue;
      }
      if (a.here) {
        // its steps run here and slurmctld, asked after the epilog closed this run, says RUNNING: that epilog was
        // an earlier run's (requeue), late
        if (!run && listed.ids.has(id) && a.job.state === 'RUNNING' && reopenRun(db, id, this.runKeyOf(a.job), asked, now)) {
          this.o.log.info("reopened a run an earlier run's late epilog closed (requeue)", { job: id, run: this.runKeyOf(a.job) });
        }
        this.recordRunning(a.job, node, now, gres, inv);
        continue;
      }
      const runs = open.filter((r) => r.jobId === id);
      if (runs.length === 0) continue;
      // a step daemon still lists it (slurmd died, the job with it): only slurmctld's word ends it
      await this.confirmNode(node, now);
      for (const r of runs) {
        this.closeRun(r.jobId, r.runKey, a.job, now);
        closed++;
      }
    }
    return { closed, states: 0, source: listed.source };
  }

  /** The old way, for nodes where the step daemons cannot be asked: the whole queue every reconcile. */
  private async reconcileQueue(node: string, now: number): Promise<ReconcileResult> {
    const db = this.o.db;
    const listed = await this.slurm.jobsOnNode(node);
    // nothing of ours runs here by this name, yet bindings are open: make sure the name is right first
    if (listed.jobs.length === 0 && openBindingCount(db) > 0) await this.confirmNode(node, now);
    const running = listed.jobs.filter((j) => ACTIVE.has(j.state));
    const gres = this.gresOf(node);
    const inv = storeInventory(db);
    for (const j of running) this.recordRunning(j, node, now, gres, inv);

    // records a user's text made unreadable (its own, or a neighbour's posing as another job): said in one line once a
    // recheck period, however many
    if (listed.unreadable.size && now - this.saidUnreadableAt >= (this.o.recheckMs ?? 300_000)) {
      this.saidUnreadableAt = now;
      const [first, why] = listed.unreadable.entries().next().value!;
      this.o.log.warn("job records in Slurm's answer are not read", { jobs: listed.unreadable.size, first, error: why });
    }
    // runs with open bindings that Slurm no longer lists as running here: their epilog never ran
    const alive = new Set(running.map((j) => j.jobId));
    const stale = runsBoundSince(db, now - this.graceMs);
    // an unreadable job is asked about alone (its own answer holds no other job's text): one with a run open here
    // first, every reconcile, then the others once a recheck period, at most SCONTROL_PER_TICK in all; a run not asked
    // yet, and one whose own answer is ambiguous too, is kept
    const staleIds = new Set(stale.map((s) => s.jobId));
    const recheck = this.o.recheckMs ?? 300_000;
    for (const id of this.unreadableAsked.keys()) if (!listed.unreadable.has(id)) this.unreadableAsked.delete(id);
    const ask = [...listed.unreadable.keys()]
      .filter((id) => staleIds.has(id) || now - (this.unreadableAsked.get(id) ?? -Infinity) >= recheck)
      .sort((a, b) => Number(staleIds.has(b)) - Number(staleIds.has(a)));
    for (const [k, id] of ask.entries()) {
      if (k >= SCONTROL_PER_TICK) {
        if (staleIds.has(id)) alive.add(id);
        continue;
      }
      this.unreadableAsked.set(id, now);
      try {
        const j = await this.slurm.queryJob(id, true);
        if (j && ACTIVE.has(j.state) && j.nodes.includes(node)) {
          this.recordRunning(j, node, now, gres, inv);
          alive.add(id);
        }
      } catch (e) {
        if (!(e instanceof AmbiguousJobRecord)) throw e;
        alive.add(id);
      }
    }
    let closed = 0;
    for (const s of stale) {
      // a running job's older runs (requeue) were closed by recordStart above
      if (alive.has(s.jobId)) continue;
      this.closeRun(s.jobId, s.runKey, null, now);
      closed++;
    }
    return { closed, states: 0, source: listed.source };
  }

  /**
   * End state and exit code of recently ended runs whose epilog could not tell
   * (cancelled jobs also end 0:0; a failed one may be OUT_OF_MEMORY or
   * TIMEOUT). Bounded: one sacct call for at most SACCT_BATCH jobs, else at
   * most SCONTROL_PER_TICK scontrol calls; a job Slurm answered for (FAILED
   * included) or forgot is never asked about again.
   */
  private async fillEndStates(now: number): Promise<number> {
    const db = this.o.db;
    const todo = endsWithoutState(db, now - 86_400_000).filter((id) => !this.settled.has(id));
    if (todo.length === 0) return 0;
    let filled = 0;
    const apply = (job: string, state: string, exitCode: number | null, exitSignal: number | null, endTime: number | null) => {
      if (!state || ACTIVE.has(state) || state === 'PENDING') return;
      this.settled.add(job);
      filled += recordEndState(db, job, { state, exitCode, exitSignal, endTime }, now);
    };
    const recs = await this.slurm.endStates(todo.slice(0, SACCT_BATCH), now);
    if (recs) {
      for (const r of recs) apply(r.jobIdRaw, r.state, r.exitCode, r.exitSignal, r.end);
      return filled;
    }
    for (const id of todo.slice(0, SCONTROL_PER_TICK)) {
      let j: SlurmJob | null = null;
      try {
        j = await this.slurm.queryJob(id, false);
      } catch {
        /* Slurm not answering: the state stays unknown for now */
      }
      if (j) apply(id, j.state, j.exitCode, null, j.endTime);
      // aged out of slurmctld (MinJobAge): the state stays unknown, and asking again will not help
      else this.settled.add(id);
    }
    return filled;
  }
}
