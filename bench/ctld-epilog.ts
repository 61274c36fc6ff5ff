/**
 * The slurmctld epilog under a burst: `jobs` GPU jobs ending within
 * `spreadS` seconds on a stand-in controller (test/helpers/ctld-stand-in.ts:
 * the real slurm/ctld-epilog run with slurmctld's environment, accounting
 * stood in), against a real VictoriaMetrics holding every job's GPU series.
 * Measured: peak memory summed over the controller host's epilog processes,
 * workers and the Slurm commands they run (PSS from /proc, sampled every
 * 50 ms), the
 * PromQL requests VictoriaMetrics answered (its own vm_http_requests_total),
 * sacct and scontrol runs, the wall time from the first end to the last
 * summary stored, and that every job's summary was written once.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pushGpuJob, queryCount, standIn } from '../test/helpers/ctld-stand-in.js';
import { VictoriaMetrics } from '../test/helpers/victoriametrics.js';

export interface CtldEpilogBench {
  jobs: number;
  spreadS: number;
  wallS: number;
  peakPssMb: number;
  /** The workers' share of it at their peak. */
  peakWorkerPssMb: number;
  peakProcesses: number;
  /** Processes with a worker's command line at once (a worker, and its children between fork and exec). */
  peakWorkers: number;
  /** Workers that took the lock and drained (their log lines): one at a time. */
  workersRan: number;
  promqlRequests: number;
  sacctCalls: number;
  writes: number;
  written: number;
  epilogP50Ms: number;
  epilogP99Ms: number;
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

/** The controller host's processes of this run: epilogs and workers (bin/run.js slurm ctld-epilog) and the stand-in's commands. */
function sample(marker: string): { rssKb: number; workerKb: number; processes: number; workers: number } {
  let rssKb = 0;
  let workerKb = 0;
  let processes = 0;
  let workers = 0;
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const cmd = readFileSync(`/proc/${p}/cmdline`, 'utf8');
      const epilog = cmd.includes('run.js\0slurm\0ctld-epilog');
      if (!epilog && !cmd.includes(marker)) continue;
      // PSS, not RSS: a worker's child between fork and exec shares all of the worker's pages, and RSS would count
      // them twice
      const m = /^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${p}/smaps_rollup`, 'utf8'));
      if (!m) continue;
      rssKb += Number(m[1]);
      processes++;
      // (a worker's child not yet exec'd has its command line too, and its PSS is its own share only)
      if (cmd.includes('--worker')) {
        workers++;
        workerKb += Number(m[1]);
      }
    } catch {
      // gone between the listing and the read
    }
  }
  return { rssKb, workerKb, processes, workers };
}

/** `root`: the checkout whose epilog runs (default this one; an older build to compare). */
export async function benchCtldEpilog(jobs = 1000, spreadS = 50, root?: string, prime = true): Promise<CtldEpilogBench> {
  const vm = await new VictoriaMetrics().start();
  try {
    const s = standIn(vm, root);
    const ids = Array.from({ length: jobs }, (_, i) => String(100_000 + i));
    const start = Math.floor(Date.now() / 1000) - 600;
    for (const id of ids) s.record(id, start);
    await pushGpuJob(vm, ids, Date.now() - 5_000);
    // a controller that has ended a job before: the first epilog (the Node one) left <state_dir>/ctld-fast, and the
    // burst's epilogs queue in the shell
    if (prime) await s.epilog('99999', 'cpu1');
    const before = await queryCount(vm);
    let peak = { rssKb: 0, workerKb: 0, processes: 0, workers: 0 };
    const timer = setInterval(() => {
      const x = sample(s.dir);
      peak = {
        rssKb: Math.max(peak.rssKb, x.rssKb),
        workerKb: Math.max(peak.workerKb, x.workerKb),
        processes: Math.max(peak.processes, x.processes),
        workers: Math.max(peak.workers, x.workers),
      };
    }, 50);
    const t0 = performance.now();
    const lat: number[] = [];
    // the ends spread evenly over the window, each epilog started on time whatever the others are doing
    await Promise.all(
      ids.map(async (id, i) => {
        await new Promise((r) => setTimeout(r, (i * spreadS * 1000) / jobs));
        const r = await s.epilog(id, `gpu${(i % 4) + 1}`);
        if (r.code !== 0) throw new Error(`epilog of job ${id} exited ${r.code}: ${r.stderr}`);
        lat.push(r.ms);
      }),
    );
    const queue = (sub: string) => {
      try {
        return readdirSync(join(s.stateDir, 'ctld-queue', sub)).length;
      } catch {
        return 0;
      }
    };
    for (;;) {
      const written = new Set(s.writes()).size;
      if (written >= jobs && queue('new') === 0 && queue('cur') === 0) break;
      if (performance.now() - t0 > 600_000)
        throw new Error(`after 10 minutes ${written} of ${jobs} summaries written; log: ${s.log().slice(-800)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const wallS = (performance.now() - t0) / 1000;
    clearInterval(timer);
    const writes = s.writes();
    let sacct = 0;
    try {
      sacct = readFileSync(join(s.dir, 'calls'), 'utf8')
        .split('\n')
        .filter((l) => l.startsWith('sacct ')).length;
    } catch {
      // none
    }
    return {
      jobs,
      spreadS,
      wallS,
      peakPssMb: peak.rssKb / 1024,
      peakWorkerPssMb: peak.workerKb / 1024,
      peakProcesses: peak.processes,
      peakWorkers: peak.workers,
      workersRan: (s.log().match(/worker \d+: started/g) ?? []).length,
      promqlRequests: (await queryCount(vm)) - before,
      sacctCalls: sacct,
      writes: writes.length,
      written: new Set(writes).size,
      epilogP50Ms: pct(lat, 50),
      epilogP99Ms: pct(lat, 99),
    };
  } finally {
    await vm.stop();
  }
}

// `node dist/bench/ctld-epilog.js [jobs] [spread seconds] [checkout]`: this benchmark alone (of another build of the
// project, e.g. an older commit's, with its own dist/)
if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await benchCtldEpilog(
    Number(process.argv[2] ?? 1000),
    Number(process.argv[3] ?? 50),
    process.argv[4] || undefined,
    process.env.BENCH_CTLD_COLD !== '1',
  );
  process.stdout.write(`${JSON.stringify(r, null, 2)}\n`);
}
