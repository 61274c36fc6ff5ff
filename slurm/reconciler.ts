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
 * Slurm being down changes nothing in the store: last known bindings stay,
 * and the failure is visible in doctor and l9gpu.slurm.reconcile.age.
 */
import type { Logger } from '../src/core/log.js';
import type { Db } from '../src/store/open.js';
import { recordEnd, recordStart, type JobRecord } from '../src/store/jobs.js';
import { setMeta } from '../src/store/meta.js';
import { hostname } from 'node:os';
import { LEARNED_NODE_KEY } from './node-name.js';
import { requireTool, runTool } from '../src/core/tool.js';
import { readGresLayout, type GresLayout } from './gres.js';
import { SACCT_FIELDS, parseSacct, parseScontrolJobs, parseSqueueJson, type SlurmJob } from './jobs-query.js';
import { gresIndicesToGpus, storeInventory } from './resolve.js';

const SLURM_DIRS = ['/usr/bin', '/usr/local/bin', '/opt/slurm/bin'];
/** A binding younger than this is never closed by polling: squeue may lag a prolog that just ran. */
const GRACE_MS = 30_000;
/** At most this many jobs in one sacct call, and this many scontrol calls per reconcile. */
const SACCT_BATCH = 100;
const SCONTROL_PER_TICK = 10;
const ACTIVE = new Set(['RUNNING', 'COMPLETING', 'CONFIGURING', 'SUSPENDED', 'STAGE_OUT', 'RESIZING', 'SIGNALING']);

export interface ReconcilerOptions {
  db: Db;
  /** This node's name in Slurm, asked at every reconcile (the hooks may have taught it since); guessed: only the host name. */
  node: () => { name: string; guessed: boolean };
  gresConf: string;
  binDir: string | null;
  slurmConf: string | null;
  commandTimeoutMs: number;
  log: Logger;
}

export interface ReconcileResult {
  running: number;
  opened: number;
  closed: number;
  states: number;
  source: 'squeue --json' | 'scontrol show job -d';
}

export class Reconciler {
  private sacctUnavailableUntil = 0;
  private failing = '';
  lastOk = 0;
  /** Jobs whose end state Slurm has answered (or can no longer answer): never asked again. */
  private readonly settled = new Set<string>();
  /** The node name Slurm confirmed, and until when that answer holds. */
  private confirmed = { name: '', until: 0 };

  constructor(private readonly o: ReconcilerOptions) {}

  private run(name: string, args: string[]): Promise<string> {
    // without SLURM_CONF client commands try a DNS "configless" lookup
    return runTool(requireTool(name, SLURM_DIRS, '[slurm] bin_dir', this.o.binDir ? [this.o.binDir] : []), args, this.o.commandTimeoutMs, undefined, this.o.slurmConf ? { SLURM_CONF: this.o.slurmConf } : {});
  }

  /** Jobs of this node, from squeue --json, else scontrol's text (Slurm without JSON support). */
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
    for (const line of (await this.run('scontrol', ['show', 'node', '-o'])).split('\n')) {
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
      out = await this.run('scontrol', ['show', 'node', '-o', node]);
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
    let listed;
    try {
      listed = await this.jobsOnNode(node);
      // nothing of ours runs here by this name, yet bindings are open: make sure the name is right first
      if (listed.jobs.length === 0 && (db.prepare(`SELECT COUNT(*) AS n FROM bindings WHERE end_time IS NULL`).get() as { n: number }).n > 0) await this.confirmNode(node, now);
    } catch (e) {
      const msg = (e as Error).message;
      if (msg !== this.failing) this.o.log.error('Slurm query failed: keeping the last known bindings', { error: msg });
      this.failing = msg;
      setMeta(db, 'reconcile.last_error', `${new Date(now).toISOString()} ${msg}`);
      throw e;
    }
    if (this.failing) this.o.log.info('Slurm answers again', { source: listed.source });
    this.failing = '';
    const running = listed.jobs.filter((j) => ACTIVE.has(j.state));
    let layout: GresLayout | undefined;
    const gres = () => {
      try {
        return (layout ??= readGresLayout(this.o.gresConf, node));
      } catch {
        return (layout = { autodetect: null, devices: [] });
      }
    };

    const openBefore = db.prepare(`SELECT COUNT(*) AS n FROM bindings WHERE end_time IS NULL`).get() as { n: number };
    const inv = storeInventory(db);
    const openSluid = db.prepare(`SELECT run_key AS k FROM jobs WHERE job_id = ? AND end_time IS NULL AND run_key LIKE 'sluid:%'`);
    for (const j of running) {
      // the hooks key runs by SLUID where Slurm has them (25.11+): 26.05's squeue prints it, and a poll that runs
      // before the prolog must use it too, or it opens a phantom r<n> run beside the prolog's; 25.11's squeue
      // does not print it: keep the hook's key
      const sluid = j.sluid ? `sluid:${j.sluid}` : (openSluid.get(j.jobId) as { k: string } | undefined)?.k;
      const rec: JobRecord = {
        jobId: j.jobId, runKey: sluid ?? `r${j.restarts}`, cluster: j.cluster, user: j.user, uid: j.uid, account: j.account, partition: j.partition,
        qos: j.qos, name: j.name, arrayJobId: j.arrayJobId, arrayTaskId: j.arrayTaskId, hetJobId: j.hetJobId, hetJobOffset: j.hetJobOffset, startTime: j.startTime,
      };
      const gpus = gresIndicesToGpus(j.gpuIdx[node] ?? [], j.sharedIdx[node] ?? [], gres, inv);
      recordStart(db, rec, gpus, 'poll', now);
      // a prolog that ran before the inventory existed left "gres:<i>" bindings: now resolved, they go
      if (gpus.some((g) => !g.uuid.startsWith('gres:'))) {
        db.prepare(`DELETE FROM bindings WHERE job_id = ? AND run_key = ? AND end_time IS NULL AND gpu_uuid LIKE 'gres:%'`).run(rec.jobId, rec.runKey);
      }
    }
    const openAfterStart = db.prepare(`SELECT COUNT(*) AS n FROM bindings WHERE end_time IS NULL`).get() as { n: number };

    // runs with open bindings that Slurm no longer lists as running here: their epilog never ran
    const alive = new Set(running.map((j) => j.jobId));
    const stale = db
      .prepare(`SELECT DISTINCT job_id AS jobId, run_key AS runKey FROM bindings WHERE end_time IS NULL AND start_time < ?`)
      .all(now - GRACE_MS) as { jobId: string; runKey: string }[];
    let closed = 0;
    for (const s of stale) {
      // a running job's older runs (requeue) were closed by recordStart above
      if (alive.has(s.jobId)) continue;
      recordEnd(db, { jobId: s.jobId, runKey: s.runKey }, { endTime: now }, [], 'poll', now);
      closed++;
      this.o.log.info('closed the bindings of a job whose epilog did not run', { job: s.jobId, run: s.runKey });
    }

    const states = await this.fillEndStates(now);
    this.lastOk = now;
    setMeta(db, 'reconcile.last_ok', String(now));
    return { running: running.length, opened: Math.max(0, openAfterStart.n - openBefore.n), closed, states, source: listed.source };
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
      try {
        const [j] = parseScontrolJobs(await this.run('scontrol', ['show', 'job', '-d', id]));
        if (j) apply(id, j.state, j.exitCode, null, j.endTime);
      } catch {
        // aged out of slurmctld (MinJobAge): the state stays unknown, and asking again will not help
        this.settled.add(id);
      }
    }
    return filled;
  }
}
