/**
 * The cheap way to list this node's jobs: the step daemons say which jobs
 * run here (no slurmctld RPC); slurmctld is asked about single jobs only, at
 * most SCONTROL_PER_TICK a reconcile, in this order: jobs running here that
 * the store does not know (a prolog that failed), open runs no step shows
 * any more (an epilog that did not run), open runs never confirmed (the job
 * name, array ids and QOS the prolog cannot see), and open runs last
 * confirmed over recheck ago (a node failure slurmctld saw while a step
 * daemon lingers).
 */
import { openRunsBound, reopenRun } from '../src/store/jobs.js';
import { ToolOutputTooLarge } from '../src/core/tool.js';
import { AmbiguousJobRecord, type SlurmJob } from './jobs-query.js';
import { ACTIVE } from './job-states.js';
import type { ListContext, ListStrategy } from './list-strategy.js';
import { SCONTROL_PER_TICK } from './reconcile-limits.js';
import { storeInventory } from './resolve.js';
import type { ListSource } from './slurm-client.js';

/** slurmctld's answer about one job: running here, or not (ended, elsewhere, requeued), or forgotten. */
type Answer = { job: SlurmJob; here: boolean } | { job: null; here: false };

export class LocalList implements ListStrategy {
  /** When slurmctld last answered about a job id (ms), whether it ran here then, and whether a step here listed it. */
  private readonly answered = new Map<string, { at: number; here: boolean; listed: boolean }>();

  constructor(private readonly c: ListContext) {}

  /** What slurmctld says of one job: does it run here now (with its GPU indices when it does)? */
  private async askJob(
    id: string,
    node: string,
    now: number,
    open: { runKey: string; bound: boolean } | undefined,
    listed: boolean,
  ): Promise<Answer> {
    const { slurm, runs } = this.c;
    let job = await slurm.queryJob(id, false);
    const runsHere = (j: SlurmJob | null) => !!j && ACTIVE.has(j.state) && j.nodes.includes(node);
    // 22.05's one-RPC answer has no GPU indices: a job, a run or a prolog record without a GPU binding needs them
    // (22.05's prolog sees no GPU in its environment for jobs started soon after slurmctld restarted)
    if (runsHere(job) && slurm.jobJson === false && (!open?.bound || open.runKey !== runs.runKeyOf(job!)))
      job = await slurm.queryJob(id, true);
    const here = runsHere(job);
    this.answered.set(id, { at: now, here, listed });
    return job ? { job, here } : { job: null, here: false };
  }

  async reconcile(node: string, guessed: boolean, now: number): Promise<{ closed: number; source: ListSource }> {
    const { db, slurm, identity, runs, recheckMs: recheck, graceMs } = this.c;
    const listed = await slurm.localJobIds(node, guessed);
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
      (r) => !listed.ids.has(r.jobId) && r.start < now - graceMs && !(last(r.jobId) && now - last(r.jobId)!.at < graceMs),
    );
    // a wrong node name lists no step at all: closing on its word would close everything
    if (absent.length) await identity.confirm(node, now);
    add(absent.map((r) => r.jobId));
    add(open.filter((r) => !last(r.jobId)).map((r) => r.jobId));
    add(
      open
        .filter((r) => now - (last(r.jobId)?.at ?? 0) >= recheck)
        .sort((a, b) => (last(a.jobId)?.at ?? 0) - (last(b.jobId)?.at ?? 0))
        .map((r) => r.jobId),
    );

    const gres = runs.gresOf(node, this.c.gresConf);
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
        this.c.log.warn("a job's record in Slurm is not read", { job: id, error: (e as Error).message });
        continue;
      }
      if (a.here) {
        // its steps run here and slurmctld, asked after the epilog closed this run, says RUNNING: that epilog was
        // an earlier run's (requeue), late
        if (!run && listed.ids.has(id) && a.job.state === 'RUNNING' && reopenRun(db, id, runs.runKeyOf(a.job), asked, now)) {
          this.c.log.info("reopened a run an earlier run's late epilog closed (requeue)", { job: id, run: runs.runKeyOf(a.job) });
        }
        runs.recordRunning(a.job, node, now, gres, inv);
        continue;
      }
      const mine = open.filter((r) => r.jobId === id);
      if (mine.length === 0) continue;
      // a step daemon still lists it (slurmd died, the job with it): only slurmctld's word ends it
      await identity.confirm(node, now);
      for (const r of mine) {
        runs.closeRun(r.jobId, r.runKey, a.job, now);
        closed++;
      }
    }
    return { closed, source: listed.source };
  }
}
