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
 */
import type { Logger } from '../src/core/log.js';
import type { Db } from '../src/store/open.js';
import { recordEnd, recordStart, reopenRun, type JobRecord } from '../src/store/jobs.js';
import { setMeta } from '../src/store/meta.js';
import { hostname } from 'node:os';
import { LEARNED_NODE_KEY } from './node-name.js';
import { requireTool, runTool } from '../src/core/tool.js';
import { readGresLayout, type GresLayout } from './gres.js';
import { SACCT_FIELDS, parseSacct, parseScontrolJobs, parseSqueueJson, type SlurmJob } from './jobs-query.js';
import { isNoSteps, isUnknownKeyword, parseListJobs, parseListPids } from './local-jobs.js';
import { gresIndicesToGpus, storeInventory } from './resolve.js';

import { SLURM_DIRS } from './tools.js';
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
  source: 'scontrol listjobs' | 'scontrol listpids' | 'squeue --json' | 'scontrol show job -d';
}

/** slurmctld's answer about one job: running here, or not (ended, elsewhere, requeued), or forgotten. */
type Answer = { job: SlurmJob; here: boolean } | { job: null; here: false };

export class Reconciler {
  private sacctUnavailableUntil = 0;
  private failing = '';
  lastOk = 0;
  /** Jobs whose end state Slurm has answered (or can no longer answer): never asked again. */
  private readonly settled = new Set<string>();
  /** The node name Slurm confirmed, and until when that answer holds. */
  private confirmed = { name: '', until: 0 };
  /** Local source: when slurmctld last answered about a job id (ms), whether it ran here then, and whether a step here listed it. */
  private readonly answered = new Map<string, { at: number; here: boolean; listed: boolean }>();
  /** listjobs is 24.05+: after "invalid keyword", listpids. */
  private listjobs = true;

  private readonly graceMs: number;

  constructor(private readonly o: ReconcilerOptions) {
    this.graceMs = o.graceMs ?? 30_000;
  }

  private run(name: string, args: string[]): Promise<string> {
    // without SLURM_CONF client commands try a DNS "configless" lookup
    return runTool(requireTool(name, SLURM_DIRS, '[slurm] bin_dir', this.o.binDir ? [this.o.binDir] : []), args, this.o.commandTimeoutMs, undefined, this.o.slurmConf ? { SLURM_CONF: this.o.slurmConf } : {});
  }

  /** Every job of the cluster from squeue --json, else scontrol's text (Slurm without JSON support): the squeue source. */
  async jobsOnNode(node: string): Promise<{ jobs: SlurmJob[]; source: ReconcileResult['source'] }> {
    let jobs: SlurmJob[];
    let source: ReconcileResult['source'] = 'squeue --json';
    try {
      jobs = parseSqueueJson(await this.run('squeue', ['--json']));
    } catch (e) {
      const msg = (e as Error).message;
      if (/not found in PATH/.test(msg)) throw e;
      source = 'scontrol show job -d';
      jobs = parseScontrolJobs(await this.run('scontrol', ['show', 'job', '-d']));
    }
    return { jobs: jobs.filter((j) => j.nodes.includes(node)), source };
  }

  /** Job ids with a step on this node, from the step daemons (no slurmctld RPC). */
  async localJobIds(node: string, guessed: boolean): Promise<{ ids: Set<string>; source: ReconcileResult['source'] }> {
    // a guessed name is scontrol's own guess too (NodeHostname= in slurm.conf maps it); a known one is passed
    const at = guessed ? [] : [node];
    const list = async (source: 'scontrol listjobs' | 'scontrol listpids', args: string[], parse: (t: string) => Set<string>) => {
      try {
        return { ids: parse(await this.run('scontrol', args)), source };
      } catch (e) {
        if (isNoSteps((e as Error).message)) return { ids: new Set<string>(), source };
        throw e;
      }
    };
    if (this.listjobs) {
      try {
        return await list('scontrol listjobs', ['listjobs', ...at], parseListJobs);
      } catch (e) {
        if (!isUnknownKeyword((e as Error).message)) throw e;
        this.listjobs = false;
      }
    }
    return list('scontrol listpids', ['listpids', ...(at.length ? ['*', ...at] : [])], parseListPids);
  }

  /**
   * One job, asked of slurmctld alone, in one RPC where Slurm allows it:
   * `--local` skips the federation lookup, and `--json` (23.02+) carries the
   * GPU indices without the node table `show job -d` loads. 22.05 has no
   * --json: its text form without -d is one RPC too, and -d (one more, the
   * whole node table) is asked only when the GPU indices are needed. A job
   * slurmctld has forgotten (MinJobAge) is null.
   */
  private scontrolJson: boolean | undefined;
  private async queryJob(id: string, detail: boolean): Promise<SlurmJob | null> {
    const pick = (jobs: SlurmJob[]) => jobs.find((j) => j.jobId === id) ?? null; // an array's meta id lists its other tasks too
    if (this.scontrolJson !== false) {
      try {
        const job = pick(parseSqueueJson(await this.run('scontrol', ['--local', '--json', 'show', 'job', id])));
        this.scontrolJson = true;
        // 24.11's --json answers an unknown job and an unreachable controller alike (exit 0, no job, no error):
        // the text form tells them apart
        if (job) return job;
      } catch (e) {
        const msg = (e as Error).message;
        if (/Invalid job id/i.test(msg)) return null;
        if (this.scontrolJson || !/unrecognized option/i.test(msg)) throw e;
        this.scontrolJson = false;
      }
    }
    try {
      return pick(parseScontrolJobs(await this.run('scontrol', ['--local', 'show', 'job', ...(detail ? ['-d'] : []), id])));
    } catch (e) {
      if (/Invalid job id/i.test((e as Error).message)) return null;
      throw e;
    }
  }

  /** What slurmctld says of one job: does it run here now (with its GPU indices when it does)? */
  private async askJob(id: string, node: string, now: number, open: { runKey: string; bound: boolean } | undefined, listed: boolean): Promise<Answer> {
    let job = await this.queryJob(id, false);
    const runs = (j: SlurmJob | null) => !!j && ACTIVE.has(j.state) && j.nodes.includes(node);
    // 22.05's one-RPC answer has no GPU indices: a job, a run or a prolog record without a GPU binding needs them
    // (22.05's prolog sees no GPU in its environment for jobs started soon after slurmctld restarted)
    if (runs(job) && this.scontrolJson === false && (!open?.bound || open.runKey !== this.runKeyOf(job!))) job = await this.queryJob(id, true);
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
    for (const line of (await this.run('scontrol', ['--local', 'show', 'node', '-o'])).split('\n')) {
      const name = /^NodeName=(\S+)/.exec(line)?.[1];
      const host = /\sNodeHostName=(\S+)/.exec(line)?.[1];
      if (name && host && hosts.has(host)) {
        this.discovered.name = name;
        setMeta(this.o.db, LEARNED_NODE_KEY, name);
        this.o.log.info("learned this node's name in Slurm", { node: name, host });
        break;
      }
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
    let out: string;
    try {
      out = await this.run('scontrol', ['--local', 'show', 'node', '-o', node]);
    } catch (e) {
      if (/not found/i.test((e as Error).message)) out = '';
      else throw e;
    }
    if (!new RegExp(`^NodeName=${node.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s`).test(out)) {
      throw new Error(`this node's name in Slurm is not "${node}" (Slurm knows no such node): set [slurm] node_name, or wait for a prolog to run here; no binding is closed meanwhile`);
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

  private openCount(): number {
    return (this.o.db.prepare(`SELECT COUNT(*) AS n FROM bindings WHERE end_time IS NULL`).get() as { n: number }).n;
  }

  /**
   * The key the hooks give this run: its SLUID where Slurm has them (25.11+;
   * 26.05 prints it, and a poll that runs before the prolog must use it too,
   * or it opens a phantom r<n> run beside the prolog's). 25.11's squeue does
   * not print it: an open SLUID run of the job is the hook's key.
   */
  private runKeyOf(j: SlurmJob): string {
    if (j.sluid) return `sluid:${j.sluid}`;
    const open = this.o.db.prepare(`SELECT run_key AS k FROM jobs WHERE job_id = ? AND end_time IS NULL AND run_key LIKE 'sluid:%'`).get(j.jobId) as { k: string } | undefined;
    return open?.k ?? `r${j.restarts}`;
  }

  /** Opens (or fills in, or confirms) the run of a job Slurm says runs on this node. */
  private recordRunning(j: SlurmJob, node: string, now: number, gres: () => GresLayout, inv: ReturnType<typeof storeInventory>): void {
    const db = this.o.db;
    const rec: JobRecord = {
      jobId: j.jobId, runKey: this.runKeyOf(j), cluster: j.cluster, user: j.user, uid: j.uid, account: j.account, partition: j.partition,
      qos: j.qos, name: j.name, arrayJobId: j.arrayJobId, arrayTaskId: j.arrayTaskId, hetJobId: j.hetJobId, hetJobOffset: j.hetJobOffset, startTime: j.startTime,
    };
    const gpus = gresIndicesToGpus(j.gpuIdx[node] ?? [], j.sharedIdx[node] ?? [], gres, inv);
    recordStart(db, rec, gpus, 'poll', now);
    // a prolog that ran before the inventory existed left "gres:<i>" bindings: now resolved, they go
    if (gpus.some((g) => !g.uuid.startsWith('gres:'))) {
      db.prepare(`DELETE FROM bindings WHERE job_id = ? AND run_key = ? AND end_time IS NULL AND gpu_uuid LIKE 'gres:%'`).run(rec.jobId, rec.runKey);
    }
  }

  /** Closes the open run of a job whose epilog did not run here; with Slurm's answer, its end too. */
  private closeRun(jobId: string, runKey: string, job: SlurmJob | null, now: number): void {
    const ended = job && !ACTIVE.has(job.state) && job.state !== 'PENDING' ? job : null;
    recordEnd(this.o.db, { jobId, runKey }, { endTime: ended?.endTime ?? now, state: ended?.state, exitCode: ended?.exitCode ?? undefined }, [], 'poll', now);
    if (ended) this.settled.add(jobId);
    this.o.log.info('closed the bindings of a job whose epilog did not run', { job: jobId, run: runKey, ...(ended ? { state: ended.state } : {}) });
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
    const listed = await this.localJobIds(node, guessed);
    const recheck = this.o.recheckMs ?? 300_000;
    // open runs, GPU or not: a prolog records every job of the node
    const open = db
      .prepare(
        `SELECT j.job_id AS jobId, j.run_key AS runKey, COALESCE(j.start_time, j.updated_at) AS start,
                EXISTS (SELECT 1 FROM bindings b WHERE b.job_id = j.job_id AND b.run_key = j.run_key AND b.end_time IS NULL) AS bound
         FROM jobs j WHERE j.end_time IS NULL`,
      )
      .all() as { jobId: string; runKey: string; start: number; bound: number }[];
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
    add([...listed.ids].filter((id) => !openIds.has(id) && !(last(id) && !last(id)!.here && last(id)!.listed && now - last(id)!.at < recheck)));
    // no step shows it any more: ended, or completing, or a step-less allocation (asked at most once a grace period)
    const absent = open.filter((r) => !listed.ids.has(r.jobId) && r.start < now - this.graceMs && !(last(r.jobId) && now - last(r.jobId)!.at < this.graceMs));
    // a wrong node name lists no step at all: closing on its word would close everything
    if (absent.length) await this.confirmNode(node, now);
    add(absent.map((r) => r.jobId));
    add(open.filter((r) => !last(r.jobId)).map((r) => r.jobId));
    add(open.filter((r) => now - (last(r.jobId)?.at ?? 0) >= recheck).sort((a, b) => (last(a.jobId)?.at ?? 0) - (last(b.jobId)?.at ?? 0)).map((r) => r.jobId));

    const gres = this.gresOf(node);
    const inv = storeInventory(db);
    let closed = 0;
    for (const id of queue.slice(0, SCONTROL_PER_TICK)) {
      const run = open.find((r) => r.jobId === id);
      const asked = Date.now();
      const a = await this.askJob(id, node, now, run && { runKey: run.runKey, bound: run.bound === 1 }, listed.ids.has(id));
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
    const listed = await this.jobsOnNode(node);
    // nothing of ours runs here by this name, yet bindings are open: make sure the name is right first
    if (listed.jobs.length === 0 && this.openCount() > 0) await this.confirmNode(node, now);
    const running = listed.jobs.filter((j) => ACTIVE.has(j.state));
    const gres = this.gresOf(node);
    const inv = storeInventory(db);
    for (const j of running) this.recordRunning(j, node, now, gres, inv);

    // runs with open bindings that Slurm no longer lists as running here: their epilog never ran
    const alive = new Set(running.map((j) => j.jobId));
    const stale = db
      .prepare(`SELECT DISTINCT job_id AS jobId, run_key AS runKey FROM bindings WHERE end_time IS NULL AND start_time < ?`)
      .all(now - this.graceMs) as { jobId: string; runKey: string }[];
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
    const todo = (
      db
        .prepare(`SELECT DISTINCT job_id AS jobId FROM jobs WHERE end_time IS NOT NULL AND end_time > ? AND (state IS NULL OR state = 'FAILED') AND updated_at > ? ORDER BY end_time DESC`)
        .all(now - 86_400_000, now - 86_400_000) as { jobId: string }[]
    )
      .map((t) => t.jobId)
      .filter((id) => !this.settled.has(id));
    if (todo.length === 0) return 0;
    let filled = 0;
    const setState = db.prepare(
      `UPDATE jobs SET state = @state, exit_code = COALESCE(@code, exit_code), exit_signal = COALESCE(@sig, exit_signal), updated_at = @now WHERE job_id = @job AND end_time IS NOT NULL AND (state IS NULL OR state = 'FAILED')`,
    );
    const fixEnd = db.prepare(`UPDATE bindings SET end_time = @end WHERE job_id = @job AND closed_by = 'poll' AND end_time > @end`);
    const apply = (job: string, state: string, code: number | null, sig: number | null, end: number | null) => {
      if (!state || ACTIVE.has(state) || state === 'PENDING') return;
      this.settled.add(job);
      filled += setState.run({ state, code, sig, now, job }).changes;
      if (end) fixEnd.run({ end, job });
    };
    if (now >= this.sacctUnavailableUntil) {
      try {
        const ids = todo.slice(0, SACCT_BATCH);
        const recs = parseSacct(await this.run('sacct', ['-X', '-P', '-n', '-o', SACCT_FIELDS, '-j', ids.join(',')]));
        for (const r of recs) apply(r.jobIdRaw, r.state, r.exitCode, r.exitSignal, r.end);
        return filled;
      } catch (e) {
        // "accounting storage is disabled": fall back to slurmctld's memory of recent jobs
        this.sacctUnavailableUntil = now + 600_000;
        this.o.log.debug('sacct unavailable: using scontrol for end states', { error: (e as Error).message });
      }
    }
    for (const id of todo.slice(0, SCONTROL_PER_TICK)) {
      let j: SlurmJob | null = null;
      try {
        j = await this.queryJob(id, false);
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
