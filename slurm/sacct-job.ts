/**
 * One job as Slurm accounting reports it (`sacct -j <id>`), for `l9gpu jobs
 * show` on any login node: the allocation line and its steps, every run of
 * a requeued job (-D) so that the latest one is reported with its restart
 * count, times as epoch seconds (SLURM_TIME_FORMAT=%s), sizes unconverted.
 *
 * Only fields present in sacct 22.05, 24.11 and 26.05 alike (src/sacct/
 * sacct.c fields table of each): an unknown field makes sacct exit 1.
 * Restarts, for one, came in 24.11: -D's runs count them on every version.
 */
import type { SacctJob } from '../src/jobs/accounting.js';
import { expandHostlist } from './hostlist.js';
import { JOB_ID, RAW_JOB_ID } from '../src/core/job-id.js';
import { clip, printable } from '../src/core/printable.js';
import { slurmTime } from './jobs-query.js';

/**
 * AdminComment last: free text that may hold the delimiter, so a line is split at the first N-1 only.
 * No field a user writes: sacct prints every field unescaped, and slurmctld takes any byte in a job
 * name (job_mgr.c tests its length alone), so `sbatch -J $'x\x1f...'` or a name with a newline
 * could shift or add fields on a line and make its job another user's, another state, another time
 * limit. AdminComment is written by operators and the slurmctld epilog only; the name is asked
 * for in a call of its own (sacctJobNameArgs).
 */
export const SACCT_JOB_FIELDS = [
  'JobID',
  'JobIDRaw',
  'User',
  'UID',
  'Account',
  'Partition',
  'QOS',
  'Cluster',
  'State',
  'ExitCode',
  'Start',
  'End',
  'ElapsedRaw',
  'TimelimitRaw',
  'AllocCPUS',
  'ReqMem',
  'MaxRSS',
  'NNodes',
  'NodeList',
  'AllocTRES',
  'AdminComment',
] as const;
type Field = (typeof SACCT_JOB_FIELDS)[number];

/**
 * Epoch seconds instead of local time without a zone: slurm_make_time_str
 * (src/common/parse_time.c, 22.05 to 26.05) takes any strftime format from
 * SLURM_TIME_FORMAT; 0 still prints "Unknown" and NO_VAL "None".
 */
export const SACCT_JOB_ENV: Readonly<Record<string, string>> = { SLURM_TIME_FORMAT: '%s' };

/**
 * sacct prints fields unescaped: a job name (sbatch -J) may hold "|". The
 * ASCII unit separator no shell user types is the delimiter instead
 * (--delimiter, with -P); output with "|" (a capture by hand) parses too.
 */
export const SACCT_DELIMITER = '\x1f';

/**
 * -D: every run of a requeued job (sorted by submit time, the latest last);
 * --noconvert: sizes as stored (ReqMem in M, MaxRSS in bytes), no rounding to G.
 * With -j and no -S sacct searches all of accounting's history.
 */
export function sacctJobArgs(id: string, cluster?: string | null): string[] {
  return [
    '-j',
    id,
    '-D',
    '-P',
    '-n',
    `--delimiter=${SACCT_DELIMITER}`,
    '--noconvert',
    `--format=${SACCT_JOB_FIELDS.join(',')}`,
    ...(cluster ? ['-M', cluster] : []),
  ];
}

/** The name's own call: allocation lines only (-X), every run (-D) with its start and end, the name last, where a delimiter in it stays in
 * it. */
export function sacctJobNameArgs(id: string, cluster?: string | null): string[] {
  return [
    '-j',
    id,
    '-X',
    '-D',
    '-P',
    '-n',
    `--delimiter=${SACCT_DELIMITER}`,
    '--format=JobIDRaw,JobID,Start,End,JobName',
    ...(cluster ? ['-M', cluster] : []),
  ];
}

/**
 * The job's name from sacctJobNameArgs' output (SACCT_JOB_ENV: epoch
 * seconds): the name of the run that began last, as parseSacctJob picks it
 * (its start, else its end, else still pending), null where sacct has none.
 * A name may hold the delimiter (kept: the name is the last field) and
 * newlines (a line that does not start with two job ids and two times goes
 * on the name before it). A name can forge no other field, and only its own
 * job's name: the call asks for that job alone.
 */
export function parseSacctJobName(text: string, requestedId: string): string | null {
  const byJobId = /^\d+_\d+$/.test(requestedId);
  const sep = text.includes(SACCT_DELIMITER) ? SACCT_DELIMITER : '|';
  // epoch seconds; Unknown, None: no time; anything else: not a time, so not a record's line
  const when = (v: string): number | null | undefined =>
    /^\d{1,12}$/.test(v) && Number(v) > 0 ? Number(v) : /^(?:Unknown|None|0)$/.test(v) ? null : undefined;
  let best: { start: number; name: string } | undefined;
  let current: { mine: boolean; start: number; name: string } | undefined;
  const finish = () => {
    if (current?.mine && (!best || current.start >= best.start)) best = current;
  };
  for (const raw of text.replace(/\n$/, '').split('\n')) {
    const s = raw.replace(/\r$/, '');
    const f = s.split(sep, 4);
    const at = f.length === 4 ? f.reduce((n, x) => n + x.length, 0) + 4 * sep.length : -1;
    const [start, end] = f.length === 4 ? [when(f[2]!), when(f[3]!)] : [];
    if (at >= 0 && at <= s.length && RAW_JOB_ID.test(f[0]!) && ALLOC_ID.test(f[1]!) && start !== undefined && end !== undefined) {
      finish();
      current = { mine: (byJobId ? f[1] : f[0]) === requestedId, start: start ?? end ?? Infinity, name: s.slice(at) };
    } else if (current) current.name += `\n${s}`;
  }
  finish();
  return best && best.name !== '' && best.name !== '(null)' ? best.name : null;
}

const UNITS = 'KMGTPE';
const MiB = 1024 ** 2;

type Row = Record<Field, string>;

class Line {
  constructor(
    readonly row: Row,
    readonly n: number,
    readonly where: string,
  ) {}
  fail(field: Field, why: string): never {
    // the value is sacct's, so anyone's (a job name, a comment): quoted printable, as it reaches a terminal or a log
    throw new Error(`${this.where}: line ${this.n}: ${field} "${printable(this.row[field].slice(0, 60))}" ${why}`);
  }
  str(f: Field): string | null {
    const v = this.row[f];
    return v === '' || v === '(null)' ? null : v;
  }
  int(f: Field): number | null {
    const v = this.row[f];
    if (v === '') return null;
    if (!/^\d{1,15}$/.test(v)) this.fail(f, 'is not a count');
    return Number(v);
  }
  time(f: Field): number | null {
    const v = this.row[f];
    if (v === '' || v === 'Unknown' || v === 'None') return null;
    if (/^\d{1,12}$/.test(v)) return Number(v) > 0 ? Number(v) * 1000 : null;
    // a capture made without SLURM_TIME_FORMAT: local time
    return slurmTime(v) ?? this.fail(f, 'is not a time (epoch seconds, or YYYY-MM-DDTHH:MM:SS)');
  }
  /** "4000M", "2.50G", "10436K", "0"; a bare number is in `bare` units (MaxRSS: bytes, ReqMem: MiB). */
  bytes(f: Field, bare: number): number | null {
    const v = this.row[f];
    if (v === '') return null;
    // Slurm's NO_VAL64 / INFINITE64 printed as a number (2^64 as a double, "18446744073709551616.00M" in 22.05's
    // ReqMem of a job that asked for no memory figure): no value, not a size
    if (/^1844674407370955\d{4}(?:\.\d+)?[KMGTPE]?$/.test(v)) return null;
    const m = /^(\d{1,15}(?:\.\d+)?)([KMGTPE]?)$/.exec(v);
    if (!m) return this.fail(f, 'is not a size');
    return Math.round(Number(m[1]) * (m[2] ? 1024 ** (UNITS.indexOf(m[2]) + 1) : bare));
  }
}

/**
 * ReqMem as the whole job's bytes. 21.08 changed it (RELEASE_NOTES: "Changed
 * ReqMem field in sacct to match memory from ReqTRES. It now shows the
 * requested memory of the whole job"); before, "4000Mn" was per node and
 * "4000Mc" per CPU (src/sacct/print.c, 20.11: MEM_PER_CPU).
 */
function reqMem(l: Line): number | null {
  const v = l.row.ReqMem;
  const legacy = /^(.*?)([nc])$/.exec(v);
  if (!legacy) return l.bytes('ReqMem', MiB);
  const each = new Line({ ...l.row, ReqMem: legacy[1]! }, l.n, l.where).bytes('ReqMem', MiB);
  const times = legacy[2] === 'n' ? l.int('NNodes') : l.int('AllocCPUS');
  if (each === null) return null;
  if (times === null) return l.fail(legacy[2] === 'n' ? 'NNodes' : 'AllocCPUS', `is needed to total ReqMem ${v}`);
  return each * times;
}

/** GPUs from AllocTRES: "gres/gpu=4", or only typed entries "gres/gpu:h100=4" (summed), else none. */
function gpusOf(l: Line): number | null {
  const v = l.row.AllocTRES;
  if (v === '') return null;
  let plain: number | null = null;
  let typed: number | null = null;
  for (const part of v.split(',')) {
    const m = /^gres\/gpu(:[^=]+)?=(\d{1,9})$/.exec(part);
    if (!m) {
      if (/^gres\/gpu[:=]/.test(part)) l.fail('AllocTRES', `has a bad GPU count "${part.slice(0, 40)}"`);
      continue;
    }
    if (m[1]) typed = (typed ?? 0) + Number(m[2]);
    else plain = Number(m[2]);
  }
  return plain ?? typed ?? 0;
}

/** Time limit: minutes; UNLIMITED and Partition_Limit say no number. */
function limitOf(l: Line): number | null {
  const v = l.row.TimelimitRaw;
  if (v === 'UNLIMITED' || v === 'Partition_Limit') return null;
  const m = l.int('TimelimitRaw');
  return m === null ? null : m * 60;
}

/** A run: its allocation line and the step lines after it. */
interface Run {
  alloc: Line;
  steps: Line[];
}

function splitLines(text: string, where: string): Line[] {
  const n = SACCT_JOB_FIELDS.length;
  const sep = text.includes(SACCT_DELIMITER) ? SACCT_DELIMITER : '|';
  const out: Line[] = [];
  text.split('\n').forEach((raw, i) => {
    const s = raw.replace(/\r$/, '');
    if (s.trim() === '') return;
    const parts = s.split(sep);
    // a header line (sacct without -n): accepted only if it is ours
    if (out.length === 0 && parts[0] === 'JobID' && parts[1] === 'JobIDRaw') {
      if (s !== SACCT_JOB_FIELDS.join(sep)) throw new Error(`${where}: line ${i + 1}: the header is not ${SACCT_JOB_FIELDS.join('|')}`);
      return;
    }
    if (parts.length < n) {
      // AdminComment is free text and may hold a newline: the rest of it, on its own line
      const prev = out[out.length - 1];
      if (prev) {
        prev.row.AdminComment += `\n${s}`;
        return;
      }
      throw new Error(`${where}: line ${i + 1}: ${parts.length} fields, expected ${n} (${SACCT_JOB_FIELDS.join(',')})`);
    }
    const row = Object.fromEntries(SACCT_JOB_FIELDS.map((f, k) => [f, k < n - 1 ? parts[k]! : parts.slice(n - 1).join(sep)])) as Row;
    out.push(new Line(row, i + 1, where));
  });
  return out;
}

/** When a run began, for the newest: its start, else its end (cancelled before it started), else now (still pending). */
const startKey = (r: Run): number => r.alloc.time('Start') ?? r.alloc.time('End') ?? Infinity;

/** An allocation line's id ("123", "122_4", "123+0"); a step's is "<that>.<step>". */
const ALLOC_ID = /^\d{1,10}(?:_\d{1,10}|_\[[^\]]*\]|\+\d{1,6})?$/;

function runsOf(lines: Line[]): Run[] {
  const runs: Run[] = [];
  for (const l of lines) {
    const id = l.row.JobID;
    const dot = id.indexOf('.');
    if (dot < 0) {
      if (!ALLOC_ID.test(id)) l.fail('JobID', 'is not a job id');
      if (!RAW_JOB_ID.test(l.row.JobIDRaw)) l.fail('JobIDRaw', 'is not a job id');
      runs.push({ alloc: l, steps: [] });
      continue;
    }
    // sacct prints each job's steps right after it (-D: each run's after that run)
    const run = runs[runs.length - 1];
    if (!run || id.slice(0, dot) !== run.alloc.row.JobID) l.fail('JobID', 'is a step of no allocation line before it');
    run.steps.push(l);
  }
  return runs;
}

/** The run of requestedId ("123": raw id, as the store keys jobs; "122_4": an array task), its latest, or undefined. */
export function parseSacctJob(text: string, requestedId: string, where = `sacct -j ${requestedId}`): SacctJob | undefined {
  const isArrayForm = /^\d+_\d+$/.test(requestedId);
  const mine = runsOf(splitLines(text, where)).filter((r) => (isArrayForm ? r.alloc.row.JobID : r.alloc.row.JobIDRaw) === requestedId);
  if (mine.length === 0) return undefined;
  const clusters = [...new Set(mine.map((r) => r.alloc.row.Cluster))];
  // -M a,b (or all) can find one id on two clusters: two different jobs
  if (clusters.length > 1) throw new Error(`${where}: job ${requestedId} is in clusters ${clusters.join(', ')}: name one with --cluster`);
  // the run that began last (startKey), not the line sacct printed last: the two differ where a run was cancelled before
  // it started, or slurmctld lost its state and gave the id again
  const latest = mine.reduce((a, b) => (startKey(b) >= startKey(a) ? b : a));
  // earlier runs of a requeued job are REQUEUED (job_state_string); other rows of the id are resizes or an id Slurm reused
  const restarts = mine.filter((r) => r !== latest && /^REQUEUE/.test(r.alloc.row.State)).length;
  const a = latest.alloc;
  const arr = /^(\d+)_(\d+)$/.exec(a.row.JobID);
  const state = a.row.State.split(' ')[0]!;
  if (!/^[A-Z_]+$/.test(state)) a.fail('State', 'is not a job state');
  const ec = /^(\d{1,10}):(\d{1,10})$/.exec(a.row.ExitCode);
  if (!ec && a.row.ExitCode !== '') a.fail('ExitCode', 'is not code:signal');
  const rss = [a, ...latest.steps].map((l) => l.bytes('MaxRSS', 1)).filter((x): x is number => x !== null);
  const nodes = ((): string[] => {
    try {
      // "None assigned": a job that never started
      return /^None/.test(a.row.NodeList) ? [] : expandHostlist(a.row.NodeList);
    } catch (e) {
      return a.fail('NodeList', (e as Error).message);
    }
  })();
  return {
    jobId: a.row.JobID,
    jobIdRaw: a.row.JobIDRaw,
    arrayJobId: arr ? arr[1]! : null,
    arrayTaskId: arr ? arr[2]! : null,
    // asked for apart (sacctJobNameArgs): sacctJob({ name: true }) fills it in
    name: null,
    user: a.str('User'),
    uid: a.int('UID'),
    account: a.str('Account'),
    partition: a.str('Partition'),
    qos: a.str('QOS'),
    cluster: a.str('Cluster'),
    state,
    exitCode: ec ? Number(ec[1]) : null,
    exitSignal: ec ? Number(ec[2]) : null,
    start: a.time('Start'),
    end: a.time('End'),
    elapsedS: a.int('ElapsedRaw'),
    timeLimitS: limitOf(a),
    cpus: a.int('AllocCPUS'),
    memReqBytes: reqMem(a),
    maxRssBytes: rss.length ? Math.max(...rss) : null,
    nodes,
    gpus: gpusOf(a),
    restarts,
    adminComment: a.row.AdminComment,
  };
}

export interface SacctJobOptions {
  /**
   * Runs a Slurm client with the [slurm] settings (bin_dir, slurm_conf as
   * SLURM_CONF, command_timeout): slurm/tools.ts slurmCommand, or a fake in tests.
   */
  run: (command: string, args: readonly string[], env: Record<string, string>) => Promise<string>;
  /** -M: the cluster to ask (Slurm's multi-cluster flag); unset: the local one. */
  cluster?: string | null;
  /** sacctJobs: a job whose lines do not parse (it counts as without a record); unset: passed over. */
  onError?: (id: string, e: Error) => void;
  /** sacctJob: the job's name too (a second sacct call: the name is a user's text, never on the record's line). */
  name?: boolean;
}

/** Job ids one sacct call asks for: a short command line, and a query slurmdbd answers in one go. */
const IDS_PER_CALL = 100;

/**
 * The accounting records of many jobs, one sacct call per IDS_PER_CALL ids
 * instead of one per job (`jobs --waste` over a week of a cluster's jobs
 * would otherwise be thousands of slurmdbd queries): each id's record as
 * sacctJob gives it, undefined where accounting has none.
 */
export async function sacctJobs(ids: readonly string[], o: SacctJobOptions): Promise<Map<string, SacctJob | undefined>> {
  const out = new Map<string, SacctJob | undefined>();
  const unique: string[] = [];
  for (const id of new Set(ids)) {
    // an id from a metric label (--source promql) is anyone's text: never on sacct's command line, and never its
    // neighbours' loss
    if (JOB_ID.test(id)) unique.push(id);
    else {
      o.onError?.(id, new Error(`"${printable(clip(id, 40))}" is not a job id (123 or 122_4)`));
      out.set(id, undefined);
    }
  }
  for (let i = 0; i < unique.length; i += IDS_PER_CALL) {
    const chunk = unique.slice(i, i + IDS_PER_CALL);
    const list = chunk.join(',');
    const text = await o.run('sacct', sacctJobArgs(list, o.cluster), { ...SACCT_JOB_ENV });
    const where = `sacct -j ${chunk.length > 3 ? `${chunk.slice(0, 3).join(',')},... (${chunk.length} jobs)` : list}${
      o.cluster ? ` ` + `-M ${o.cluster}` : ''
    }`;
    for (const id of chunk) {
      // one job's line sacct printed wrong is that job's problem, not its 99 neighbours'
      try {
        out.set(id, parseSacctJob(text, id, where));
      } catch (e) {
        o.onError?.(id, e as Error);
        out.set(id, undefined);
      }
    }
  }
  return out;
}

/** Runs sacct for one job; undefined when accounting has no such job. */
export async function sacctJob(id: string, o: SacctJobOptions): Promise<SacctJob | undefined> {
  if (!JOB_ID.test(id)) throw new Error(`"${printable(clip(id, 40))}" is not a job id (123 or 122_4)`);
  const text = await o.run('sacct', sacctJobArgs(id, o.cluster), { ...SACCT_JOB_ENV });
  const job = parseSacctJob(text, id, `sacct -j ${id}${o.cluster ? ` -M ${o.cluster}` : ''}`);
  if (job && o.name) job.name = parseSacctJobName(await o.run('sacct', sacctJobNameArgs(id, o.cluster), { ...SACCT_JOB_ENV }), id);
  return job;
}
