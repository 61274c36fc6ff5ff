/**
 * The old way to list this node's jobs, for nodes where the step daemons
 * cannot be asked (`[slurm] reconcile_source = squeue`): the whole queue
 * every reconcile.
 */
import { openBindingCount, runsBoundSince } from '../src/store/jobs.js';
import { AmbiguousJobRecord } from './jobs-query.js';
import { ACTIVE } from './job-states.js';
import type { ListContext, ListStrategy } from './list-strategy.js';
import { SCONTROL_PER_TICK } from './reconcile-limits.js';
import { storeInventory } from './resolve.js';
import type { ListSource } from './slurm-client.js';

export class QueueList implements ListStrategy {
  /** When the whole-queue source last said which job records it could not read. */
  private saidUnreadableAt = -Infinity;
  /** Jobs whose record the whole queue's text did not give, and when each was last asked about alone. */
  private readonly unreadableAsked = new Map<string, number>();

  constructor(private readonly c: ListContext) {}

  async reconcile(node: string, _guessed: boolean, now: number): Promise<{ closed: number; source: ListSource }> {
    const { db, slurm, identity, runs, recheckMs: recheck, graceMs } = this.c;
    const listed = await slurm.jobsOnNode(node);
    // nothing of ours runs here by this name, yet bindings are open: make sure the name is right first
    if (listed.jobs.length === 0 && openBindingCount(db) > 0) await identity.confirm(node, now);
    const running = listed.jobs.filter((j) => ACTIVE.has(j.state));
    const gres = runs.gresOf(node, this.c.gresConf);
    const inv = storeInventory(db);
    for (const j of running) runs.recordRunning(j, node, now, gres, inv);

    // records a user's text made unreadable (its own, or a neighbour's posing as another job): said in one line once a
    // recheck period, however many
    if (listed.unreadable.size && now - this.saidUnreadableAt >= recheck) {
      this.saidUnreadableAt = now;
      const [first, why] = listed.unreadable.entries().next().value!;
      this.c.log.warn("job records in Slurm's answer are not read", { jobs: listed.unreadable.size, first, error: why });
    }
    // runs with open bindings that Slurm no longer lists as running here: their epilog never ran
    const alive = new Set(running.map((j) => j.jobId));
    const stale = runsBoundSince(db, now - graceMs);
    // an unreadable job is asked about alone (its own answer holds no other job's text): one with a run open here
    // first, every reconcile, then the others once a recheck period, at most SCONTROL_PER_TICK in all; a run not asked
    // yet, and one whose own answer is ambiguous too, is kept
    const staleIds = new Set(stale.map((s) => s.jobId));
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
        const j = await slurm.queryJob(id, true);
        if (j && ACTIVE.has(j.state) && j.nodes.includes(node)) {
          runs.recordRunning(j, node, now, gres, inv);
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
      runs.closeRun(s.jobId, s.runKey, null, now);
      closed++;
    }
    return { closed, source: listed.source };
  }
}
