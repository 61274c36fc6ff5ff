/**
 * What one user's `l9gpu jobs` over 100,000 of their jobs costs the daemon's
 * main thread (where sampling and /metrics run): event-loop delay
 * (perf_hooks.monitorEventLoopDelay) while the request is answered, three ways:
 *   main:        the whole list answered at once on the main thread (the old server)
 *   time-sliced: the same list in pages of [limits] jobs_rows, the loop let go between pages
 *   worker:      the real server, its store work on a worker thread, asked page by page by a client in another process
 * and --by over all of them, on the main thread and on the worker (a fold of
 * every job cannot be sliced by pages).
 *
 * Run alone: node --expose-gc dist/bench/jobs-socket.js [jobs]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { setImmediate as yieldLoop, setTimeout as sleep } from 'node:timers/promises';
import { DEFAULT_LIMITS } from '../src/core/limits.js';
import { createLogger } from '../src/core/log.js';
import { answerJobs, type JobsAnswer, type ListRequest } from '../src/jobs/api.js';
import { startJobsServer } from '../src/jobs/server.js';
import { openStoreReadOnly } from '../src/store/open.js';
import { fillJobsStore } from './jobs.js';

export interface LoopCost {
  wallMs: number;
  delayP99Ms: number;
  delayMaxMs: number;
  rows: number;
}

export interface JobsSocketBench {
  jobs: number;
  main: LoopCost;
  timeSliced: LoopCost;
  mainBy: LoopCost;
  worker: LoopCost;
  workerBy: LoopCost;
}

const USER = 'alice';
const LIST: ListRequest = { op: 'list', user: null, account: null, partition: null, state: 'all', since: null, limit: 0 };

/** The main thread's event-loop delay while `work` runs (1 ms resolution, a quiet 100 ms either side). */
async function underWatch(work: () => Promise<number>): Promise<LoopCost> {
  // the garbage of the variant before is not this one's pause (run with --expose-gc)
  (globalThis as { gc?: () => void }).gc?.();
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  await sleep(100);
  const t = performance.now();
  const rows = await work();
  const wallMs = performance.now() - t;
  await sleep(100);
  h.disable();
  return { wallMs, delayP99Ms: h.percentile(99) / 1e6, delayMaxMs: h.max / 1e6, rows };
}

const rowsOf = (a: JobsAnswer) => (a.ok && a.op === 'list' ? (a.by ? a.groups!.length : a.rows.length) : 0);

/** A client in its own process (its JSON parsing is not this thread's), paging as `l9gpu jobs` does. */
function clientPaging(sock: string, req: ListRequest): Promise<number> {
  const client = pathToFileURL(fileURLToPath(new URL('../src/jobs/client.js', import.meta.url))).href;
  const code =
    `import { askJobsDaemon } from ${JSON.stringify(client)};
let req = ${JSON.stringify(req)}, n = 0;
for (;;) { const a = await askJobsDaemon(${JSON.stringify(sock)}, req, 600000); if (!a.ok) throw new Error(a.error); n += a.by ? ` +
    `a.groups.length : a.rows.length; if (a.next === undefined) break; req = { ...req, offset: a.next }; }
process.stdout.write(String(n));`;
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    c.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    c.on('close', (code) => (code === 0 ? resolve(Number(out)) : reject(new Error(`client exited ${code}`))));
  });
}

export async function benchJobsSocket(jobs = 100_000): Promise<JobsSocketBench> {
  const state = join(mkdtempSync(join(tmpdir(), 'l9gpu-bench-jobs-socket-')), 'state');
  fillJobsStore(state, jobs, () => USER);
  const db = openStoreReadOnly(state);
  const who = { name: USER, privileged: true };
  const out: Partial<JobsSocketBench> = { jobs };
  try {
    out.main = await underWatch(async () => rowsOf(JSON.parse(JSON.stringify(answerJobs(db, 'bench', null, who, LIST))) as JobsAnswer));
    out.timeSliced = await underWatch(async () => {
      let n = 0;
      for (let offset: number | undefined = 0; offset !== undefined;) {
        const a = answerJobs(db, 'bench', null, who, { ...LIST, offset }, DEFAULT_LIMITS.jobsRows);
        JSON.stringify(a);
        n += rowsOf(a);
        offset = a.ok && a.op === 'list' ? a.next : undefined;
        await yieldLoop();
      }
      return n;
    });
    out.mainBy = await underWatch(async () => rowsOf(answerJobs(db, 'bench', null, who, { ...LIST, by: 'account' })));
  } finally {
    db.close();
  }
  const server = await startJobsServer({
    stateDir: state,
    node: () => 'bench',
    prices: () => null,
    adminGroup: () => null,
    log: createLogger('error', () => {}),
  });
  try {
    const sock = join(state, 'jobs.sock');
    // the worker's start (loading SQLite there) is not a request's cost
    await clientPaging(sock, { ...LIST, limit: 1 });
    out.worker = await underWatch(() => clientPaging(sock, LIST));
    out.workerBy = await underWatch(() => clientPaging(sock, { ...LIST, by: 'account' }));
  } finally {
    server.close();
  }
  return out as JobsSocketBench;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const r = await benchJobsSocket(Number(process.argv[2] ?? 100_000));
  process.stdout.write(`jobs socket, ${r.jobs.toLocaleString('en-US')} jobs of one user (node ${process.version})\n`);
  process.stdout.write(
    `${'variant'.padEnd(14)} ${'rows'.padStart(8)} ${'wall ms'.padStart(9)} ${'delay p99 ms'.padStart(13)} ` +
      `${'delay max ms'.padStart(13)}\n`,
  );
  for (const [k, v] of Object.entries(r)) {
    if (typeof v === 'number') continue;
    process.stdout.write(
      `${k.padEnd(14)} ${String(v.rows).padStart(8)} ${v.wallMs.toFixed(0).padStart(9)} ${v.delayP99Ms.toFixed(1).padStart(13)} ` +
        `${v.delayMaxMs.toFixed(1).padStart(13)}\n`,
    );
  }
}
