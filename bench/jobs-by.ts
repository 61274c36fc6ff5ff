/**
 * `l9gpu jobs --by user` over one user's 500,000 jobs (issue 41), asked of
 * the real daemon (sim GPUs sampled every second, Slurm attribution with a
 * stand-in controller, so that the jobs socket and its store worker run as
 * on a node): the daemon's peak RSS while it answers (sampled from /proc
 * every 20 ms, and VmHWM), the answer's time (every page, as the CLI asks),
 * whether sampling went on meanwhile, and whether the daemon lives and
 * answers the next question. The store is made with the real schema by bulk
 * INSERTs (bench/jobs.ts fillJobsStore: 1 to 8 GPUs a job, a real rollup
 * state each).
 *
 * Under a memory limit (a cgroup v1 memory group of this bench's own, made
 * and removed here, standing in for the unit's MemoryMax) the daemon is
 * started inside it and the group's peak and OOM kills are read too.
 *
 * Run alone:
 *   node dist/bench/jobs-by.js [jobs] [--memory-max MB] [--tree DIR] [--store DIR]
 * --tree: another build of l9gpu (the code before, a copy of its dist/, bin/
 * and package.json) to run as the daemon; --store: keep the store built
 * there (built when missing) for the next run.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  closeSync,
  readFileSync,
  rmdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { askJobsDaemon } from '../src/jobs/client.js';
import type { JobsAnswer, ListRequest } from '../src/jobs/api.js';
import { slurmControllerDown } from '../test/helpers/slurm-down.js';
import { fillJobsStore } from './jobs.js';
import { procStat } from './daemon.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const USER = 'nobody';
const REQ: ListRequest = { op: 'list', user: null, account: null, partition: null, state: 'all', since: null, limit: 0, by: 'user' };

export interface JobsByBench {
  jobs: number;
  storeMb: number;
  /** null: the store was there already. */
  buildS: number | null;
  /** null: none asked, or no memory group could be made here (not root, no v1 memory hierarchy). */
  memoryMaxMb: number | null;
  /** The daemon's RSS once it answers, before the question. */
  rssBeforeMb: number;
  /** While --by user was answered (RSS read every 20 ms). */
  peakRssMb: number;
  /** Over both questions (and VmHWM at the end). */
  peakRssBothMb: number;
  /** The memory group's own peak (RSS and page cache), and the kernel's OOM kills in it. */
  groupPeakMb: number | null;
  oomKills: number | null;
  answerMs: number;
  /** The groups, or the error the user was given. */
  answer: Summary;
  /** Bytes the daemon's stdout sink wrote while the question was answered: sampling went on. */
  sampledBytes: number;
  /** `jobs --by name` over the same jobs (one name each: more groups than one answer holds), after the first question: its time and answer.
   * */
  byName: { ms: number; answer: Summary };
  /** The daemon after the questions: alive, and its answer to the next one (a page of 3 jobs). */
  alive: boolean;
  exit: string | null;
  next: string;
  /** What a user running `l9gpu jobs --by user` was told (its output's first lines). */
  cli: string;
}

type Summary = { groups: number; jobs: number } | { error: string };
const summary = (a: JobsAnswer): Summary =>
  a.ok && a.op === 'list'
    ? { groups: a.groups?.length ?? 0, jobs: (a.groups ?? []).reduce((s, g) => s + g.jobs, 0) }
    : { error: a.ok ? 'not a list' : a.error };

async function timed(sock: string, req: ListRequest): Promise<{ ms: number; a: JobsAnswer }> {
  const t = performance.now();
  let a: JobsAnswer;
  try {
    a = await askAll(sock, req);
  } catch (e) {
    a = { ok: false, error: (e as Error).message, code: 1 };
  }
  return { ms: performance.now() - t, a };
}

const mb = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10;

/** Every page of the roll-up, as the CLI asks it (src/cli/jobs-context.ts askList). */
async function askAll(sock: string, req = REQ): Promise<JobsAnswer> {
  let a = await askJobsDaemon(sock, req, 600_000);
  while (a.ok && a.op === 'list' && a.next !== undefined) {
    const more = await askJobsDaemon(sock, { ...req, offset: a.next }, 600_000);
    if (!more.ok || more.op !== 'list') return more;
    a = { ...more, groups: [...(a.groups ?? []), ...(more.groups ?? [])] };
  }
  return a;
}

/** A memory group of this bench's own under the v1 hierarchy (never the machine's own groups); undefined where none can be made. */
function memoryGroup(limitMb: number): { dir: string; remove: () => void } | undefined {
  const dir = `/sys/fs/cgroup/memory/l9gpu-bench-jobs-by-${process.pid}`;
  try {
    mkdirSync(dir);
  } catch {
    return undefined;
  }
  writeFileSync(join(dir, 'memory.limit_in_bytes'), String(limitMb * 2 ** 20));
  return {
    dir,
    remove: () => {
      try {
        rmdirSync(dir);
      } catch {
        // a process still in it: the group goes with the next reboot, it limits nothing outside it
      }
    },
  };
}

const oomKills = (dir: string): number => Number(/^oom_kill (\d+)$/m.exec(readFileSync(join(dir, 'memory.oom_control'), 'utf8'))?.[1] ?? 0);

export async function benchJobsBy(
  jobs = 500_000,
  opts: { memoryMaxMb?: number; tree?: string; store?: string } = {},
): Promise<JobsByBench> {
  const dir = opts.store ?? mkdtempSync(join(tmpdir(), 'l9gpu-bench-jobs-by-'));
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o755);
  const down = slurmControllerDown(dir, 'benchnode');
  let buildS: number | null = null;
  if (!existsSync(join(down.state, 'l9gpu.db'))) {
    const t = performance.now();
    fillJobsStore(down.state, jobs, () => USER);
    buildS = (performance.now() - t) / 1000;
  }
  chmodSync(down.state, 0o755);
  const cfg = join(dir, 'l9gpu.ini');
  writeFileSync(cfg, `[daemon]\n${down.daemon}interval = 1s\n${down.slurm}[sim]\ngpus = 8\n`, { mode: 0o644 });
  const sock = join(down.state, 'jobs.sock');
  const cli = join(opts.tree ?? ROOT, 'bin', 'run.js');
  const group = opts.memoryMaxMb ? memoryGroup(opts.memoryMaxMb) : undefined;
  const memoryMaxMb = group ? opts.memoryMaxMb! : null;
  const outFile = join(dir, 'daemon.out');
  const out = openSync(outFile, 'w');
  // the daemon enters the group before it is the daemon: all its threads and memory are the group's
  const child: ChildProcess = spawn(
    'sh',
    [
      '-c',
      `${group ? `echo $$ > ${group.dir}/cgroup.procs && ` : ''}exec "$0" "$@"`,
      process.execPath,
      cli,
      'daemon',
      '--config',
      cfg,
      '--plugin',
      'sim',
      '--sink',
      'stdout',
    ],
    {
      stdio: ['ignore', out, out],
    },
  );
  closeSync(out);
  let exit: string | null = null;
  const exited = new Promise<void>((resolve) => child.on('exit', (code, signal) => ((exit = signal ?? `exit ${code}`), resolve())));
  try {
    const ready = performance.now();
    while (!existsSync(sock)) {
      if (exit)
        throw new Error(`the daemon ended before its jobs socket was there (${exit}): ${readFileSync(outFile, 'utf8').slice(-2000)}`);
      if (performance.now() - ready > 600_000) throw new Error('no jobs socket within 600 s');
      await sleep(50);
    }
    // the worker's own start is not the question's: a first small question starts it
    await askJobsDaemon(sock, { ...REQ, by: null, limit: 1 }, 600_000);
    const pid = child.pid!;
    const rssBeforeMb = mb(procStat(pid).rssKb * 1024);
    let peakKb = 0;
    let watching = true;
    const watch = (async () => {
      while (watching && !exit) {
        try {
          peakKb = Math.max(peakKb, procStat(pid).rssKb);
        } catch {
          break; // gone
        }
        await sleep(20);
      }
    })();
    const sampledFrom = statSync(outFile).size;
    const { ms: answerMs, a } = await timed(sock, REQ);
    const userPeakKb = peakKb;
    const byName = exit ? undefined : await timed(sock, { ...REQ, by: 'name' });
    watching = false;
    await watch;
    // a tick or two after the answer: a daemon killed by the kernel has had time to be seen so
    await sleep(2500);
    const sampledBytes = statSync(outFile).size - sampledFrom;
    const alive = !exit;
    // VmHWM: a peak between two reads of VmRSS
    if (alive) peakKb = Math.max(peakKb, procStat(pid).hwmKb);
    let next: string;
    try {
      const n = await askJobsDaemon(sock, { ...REQ, by: null, limit: 3 }, 15_000);
      next = n.ok && n.op === 'list' ? `${n.rows.length} jobs` : n.ok ? 'answered' : n.error;
    } catch (e) {
      next = (e as Error).message;
    }
    const user =
      process.getuid?.() === 0
        ? spawnSync('runuser', ['-u', USER, '--', process.execPath, cli, 'jobs', '--by', 'user', '--config', cfg], { encoding: 'utf8' })
        : { status: null, stdout: 'not run (runuser needs root)', stderr: '' };
    const said = (user.stdout + user.stderr).trim().split('\n');
    return {
      jobs,
      storeMb: mb(statSync(join(down.state, 'l9gpu.db')).size),
      buildS,
      memoryMaxMb,
      rssBeforeMb,
      peakRssMb: mb(userPeakKb * 1024),
      peakRssBothMb: mb(peakKb * 1024),
      groupPeakMb: group ? mb(Number(readFileSync(join(group.dir, 'memory.max_usage_in_bytes'), 'utf8'))) : null,
      oomKills: group ? oomKills(group.dir) : null,
      answerMs,
      answer: summary(a),
      byName: byName ? { ms: byName.ms, answer: summary(byName.a) } : { ms: 0, answer: { error: 'not asked: the daemon had ended' } },
      sampledBytes,
      alive,
      exit,
      next,
      cli: `exit ${user.status}: ${said.length > 2 ? said.slice(0, 3).join(' / ') : said.join(' / ')}`,
    };
  } finally {
    if (!exit) child.kill('SIGTERM');
    await exited;
    group?.remove();
    // a store of 500,000 jobs is 1.3 GB: kept only where asked (--store)
    if (!opts.store) rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = process.argv.slice(2);
  const opt = (name: string) => {
    const i = args.indexOf(name);
    return i < 0 ? undefined : args.splice(i, 2)[1];
  };
  const memoryMaxMb = opt('--memory-max');
  const tree = opt('--tree');
  const store = opt('--store');
  const r = await benchJobsBy(Number(args[0] ?? 500_000), { memoryMaxMb: memoryMaxMb ? Number(memoryMaxMb) : undefined, tree, store });
  process.stdout.write(`${JSON.stringify(r, null, 2)}\n`);
}
