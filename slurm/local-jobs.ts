/**
 * Which jobs have a step running on this node, asked of slurmd's step daemons
 * and not of slurmctld: `scontrol listjobs` (24.05+) or `scontrol listpids`
 * (every release) read slurmd's spool for the steps' sockets and ask each
 * slurmstepd. Their cost does not grow with the cluster's queue.
 *
 * A job is not listed before its first step starts (while its prolog runs),
 * after its last step ended (while its epilog runs), nor at all when it runs
 * no step on this node (salloc without srun, no PrologFlags=Contain): the
 * reconciler asks slurmctld about those one job at a time.
 */

/** `scontrol listjobs`: a JOBID header, then one job id a line (24.05+). */
export function parseListJobs(text: string): Set<string> {
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  if (lines.length === 0) return new Set();
  if (!/^JOBID\b/.test(lines[0]!)) throw new Error(`scontrol listjobs: expected a JOBID header, got "${lines[0]!.slice(0, 60)}"`);
  return new Set(
    lines
      .slice(1)
      .map((l) => l.split(/\s+/)[0]!)
      .filter((id) => /^\d+$/.test(id)),
  );
}

/** `scontrol listpids`: "PID JOBID STEPID LOCALID GLOBALID", one process a line. */
export function parseListPids(text: string): Set<string> {
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  if (lines.length === 0) return new Set();
  const head = lines[0]!.split(/\s+/);
  const col = head.indexOf('JOBID');
  if (head[0] !== 'PID' || col < 0)
    throw new Error(`scontrol listpids: expected a "PID JOBID ..." header, got "${lines[0]!.slice(0, 60)}"`);
  return new Set(
    lines
      .slice(1)
      .map((l) => l.split(/\s+/)[col] ?? '')
      .filter((id) => /^\d+$/.test(id)),
  );
}

/**
 * scontrol's exit-1 answers for "no step runs here" (listpids: "No job steps
 * exist on this node.", listjobs: "No slurmstepd's found on this node"; also
 * what a node name no slurmd here uses gets).
 */
export const isNoSteps = (message: string): boolean => /No job steps exist on this node|No slurmstepd's found on this node/i.test(message);

/** An answer of scontrol that means "this release has no such command" (listjobs before 24.05). */
export const isUnknownKeyword = (message: string): boolean => /invalid keyword/i.test(message);
