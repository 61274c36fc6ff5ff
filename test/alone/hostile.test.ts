/**
 * The root daemon on a shared node, attacked by an unprivileged local user
 * (`runuser -u nobody`, test/fixtures/hostile-user.mjs) with each class of
 * move found against it: FIFOs and links in the NCCL folders it follows, files
 * by the thousand, a sparse log growing by gigabytes, .prom files naming
 * another user's job, a fake engine serving a quarter of a million series,
 * jobs.sock connections trickling bytes, a job name of 120 kB, the file
 * sink's path a link or a FIFO.
 *
 * The daemon runs as in production: default plugins (host, NVML through the
 * production koffi code on the fake library, NCCL with discovery), Slurm
 * attribution on a stand-in bin_dir with jobs written by the real prolog, the
 * Prometheus sink and OTLP into a real VictoriaMetrics. For every attack it
 * measures what an operator cares about: the GPU's points reach the backend
 * every tick, /metrics answers (p99), peak RSS and descriptors, SIGTERM to
 * exit, bytes of a root-only marker anywhere in the output, and NCCL figures
 * credited to a job that is not the file owner's.
 *
 * Which file becomes a FIFO and how, counts and sizes vary with the seed
 * (L9GPU_FUZZ_SEED); `npm run fuzz` runs more rounds (L9GPU_HOSTILE_ROUNDS).
 * L9GPU_FUZZ_REPORT=1 prints each attack's figures (docs/reliability.md).
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { DEFAULT_LIMITS } from '../../src/core/limits.js';
import { DaemonProcess } from '../helpers/daemon.js';
import { FakeNvml, h100 } from '../helpers/fake-nvml.js';
import { freePort } from '../helpers/net.js';
import { FIXTURES, ROOT, tempDir } from '../helpers/paths.js';
import { VictoriaMetrics } from '../helpers/victoriametrics.js';
import { waitFor } from '../helpers/wait.js';
import { rng } from '../../src/core/rng.js';

const SEED = Number(process.env.L9GPU_FUZZ_SEED ?? 20261127);
const ROUNDS = Number(process.env.L9GPU_HOSTILE_ROUNDS ?? 1);
const REPORT = !!process.env.L9GPU_FUZZ_REPORT;
const NOBODY = 65534;
const VICTIM = 'l9gputest';
const VICTIM_JOB = '999999';
const ATTACKER_JOB = '31337';
const INTERVAL_MS = 1000;
/** How long each attack is measured once it is in place. */
const ATTACK_MS = 6000;
const HOST = hostname();
const HOSTILE = join(FIXTURES, 'hostile-user.mjs');

/** The acceptance bounds of issue 29. */
const BOUNDS = { p99Ms: 250, rssMb: 128, fds: 1000, sigtermMs: 5000 };

const rand = rng(SEED);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
const between = (lo: number, hi: number): number => lo + Math.floor(rand() * (hi - lo + 1));

const base = tempDir('l9gpu-hostile-');
chmodSync(base, 0o755);
const bin = join(base, 'bin');
const marker = `ROOT-ONLY-MARKER-${SEED}-${process.pid}-7f3a`;
const secret = join(base, 'root-only-secret');
let vm: VictoriaMetrics;
let nvml: FakeNvml;
let victimUid = 0;
let victim: ChildProcess | undefined;
let victimPid = 0;
/** Processes the attacks leave running, ended after each. */
const running: ChildProcess[] = [];

/** A folder the attacker owns. */
function userDir(path: string): string {
  mkdirSync(path, { recursive: true });
  chownSync(path, NOBODY, NOBODY);
  return path;
}

/** One move as the attacker, to its end. */
function as(user: string, args: string[], env: Record<string, string> = {}): void {
  const r = spawnSync(
    'runuser',
    ['-u', user, '--', 'env', ...Object.entries(env).map(([k, v]) => `${k}=${v}`), process.execPath, HOSTILE, ...args],
    { encoding: 'utf8', timeout: 120_000 },
  );
  assert.equal(r.status, 0, `${args[0]} as ${user}: ${r.stderr}`);
}

/** A move that keeps running (a job, an engine, a connection holder); its pid once it says it. */
async function asRunning(
  user: string,
  args: string[],
  env: Record<string, string> = {},
  cwd = base,
): Promise<{ child: ChildProcess; pid: number }> {
  const child = spawn(
    'runuser',
    ['-u', user, '--', 'env', ...Object.entries(env).map(([k, v]) => `${k}=${v}`), process.execPath, HOSTILE, ...args],
    { cwd, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  running.push(child);
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  const pid = await waitFor(
    `${args[0]} as ${user} to start`,
    () => (/^(\d+)\n/.exec(out)?.[1] ? Number(/^(\d+)\n/.exec(out)![1]) : undefined),
    15_000,
  );
  return { child, pid };
}

/** The real prolog, as slurmd runs it: no PATH, no HOME. */
function prolog(config: string, env: Record<string, string>): void {
  const r = spawnSync(join(ROOT, 'slurm', 'prolog'), [], {
    env: { L9GPU_NODE: process.execPath, L9GPU_CONFIG: config, ...env },
    encoding: 'utf8',
  });
  assert.equal(r.status, 0, r.stderr);
}

interface Figures {
  attack: string;
  ticks: number;
  missedTicks: number;
  maxGapMs: number;
  metricsP99Ms: number;
  metricsFailed: number;
  peakRssMb: number;
  peakFds: number;
  /** The daemon's CPU over the attack, percent of one core. */
  cpuPercent: number;
  sigtermMs: number;
  markerBytes: number;
  forged: number;
  longestLabel: number;
  budgetHits: Record<string, number>;
}

interface Attack {
  readonly name: string;
  /** INI keys over the suite's, by section. */
  readonly ini?: Record<string, Record<string, string>>;
  /** Put in place before the daemon starts (files it finds at once). */
  setup?(dir: string, config: string): Promise<void> | void;
  /** Once the daemon runs: the attack proper. */
  run?(dir: string, d: DaemonProcess, metricsUrl: string): Promise<void> | void;
  /** Checks of its own on the figures and the last /metrics page. */
  check?(f: Figures, page: string, d: DaemonProcess, dir: string): void;
}

const GPUS = [h100(0, { processes: [] }), h100(1, { processes: [] })];

function configFor(dir: string, a: Attack, promPort: number): string {
  const state = join(dir, 'state');
  const sections: Record<string, Record<string, string>> = {
    daemon: {
      host_name: `hostile-${a.name}`,
      state_dir: state,
      attribution: 'slurm',
      interval: `${INTERVAL_MS}ms`,
      sinks: 'prometheus, otlp',
      log_level: 'info',
    },
    slurm: { slurm_conf: join(base, 'slurm.conf'), node_name: 'gpunode9', bin_dir: bin },
    prometheus: { host: '127.0.0.1', port: String(promPort) },
    otlp: { endpoint: vm.otlpEndpoint, export_interval: `${INTERVAL_MS}ms` },
    nccl: { paths: join(dir, 'nccl-inspector-*') },
  };
  // an attack's keys over these (a key twice in a section is a configuration error)
  for (const [s, keys] of Object.entries(a.ini ?? {})) sections[s] = { ...sections[s], ...keys };
  const config = join(dir, 'l9gpu.ini');
  writeFileSync(
    config,
    Object.entries(sections)
      .map(
        ([s, keys]) =>
          `[${s}]\n${Object.entries(keys)
            .map(([k, v]) => `${k} = ${v}\n`)
            .join('')}`,
      )
      .join(''),
  );
  return config;
}

const percentile = (xs: number[], p: number): number => {
  if (!xs.length) return 0;
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
};

/** CPU time of a process so far, user and system, in ms (clock ticks are 100 a second on Linux). */
function cpuMs(pid: number): number {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(f[11]) + Number(f[12])) * 10;
  } catch {
    return 0;
  }
}

function fds(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return 0;
  }
}

/** Every label value's length on a page (the longest matters). */
function longestLabel(page: string): number {
  let max = 0;
  for (const m of page.matchAll(/="((?:[^"\\]|\\.)*)"/g)) max = Math.max(max, m[1]!.length);
  return max;
}

async function underAttack(a: Attack): Promise<Figures> {
  const dir = tempDir(`l9gpu-hostile-${a.name}-`);
  chmodSync(dir, 0o755);
  const promPort = await freePort();
  const config = configFor(dir, a, promPort);
  await a.setup?.(dir, config);
  const d = new DaemonProcess(['--config', config], nvml.env());
  const pid = d.child.pid!;
  const url = `http://127.0.0.1:${promPort}/metrics`;
  const latencies: number[] = [];
  let failed = 0;
  let page = '';
  let peakFds = 0;
  let markerBytes = 0;
  try {
    // the bounds are the attack's: the window opens once the first collections are in (a cold start on a loaded
    // machine, the plugins' code loaded and NVML opened, is no tick the attack made late)
    await waitFor(
      "the daemon's first page with GPU and host points",
      async () => {
        const r = await fetch(url).catch(() => undefined);
        const text = r?.ok ? await r.text() : '';
        return text.includes('\ngpu_utilization_ratio{') && text.includes('\nsystem_cpu_utilization_ratio{');
      },
      30_000,
    );
    await a.run?.(dir, d, url);
    const start = Date.now();
    const end = start + ATTACK_MS;
    const cpu0 = cpuMs(pid);
    while (Date.now() < end) {
      const t0 = performance.now();
      try {
        const r = await fetch(url, { signal: AbortSignal.timeout(5000) });
        page = await r.text();
        if (!r.ok) failed++;
        if (page.includes(marker)) markerBytes += marker.length;
      } catch {
        failed++;
      }
      latencies.push(performance.now() - t0);
      peakFds = Math.max(peakFds, fds(pid));
      await new Promise((r) => setTimeout(r, 100));
    }
    const peakRssMb = d.child.exitCode === null ? d.peakRssMb() : NaN;
    const cpuPercent = Math.round(((cpuMs(pid) - cpu0) / (Date.now() - start)) * 1000) / 10;
    const t0 = Date.now();
    d.child.kill('SIGTERM');
    const killer = setTimeout(() => d.child.kill('SIGKILL'), 15_000);
    await d.exit;
    clearTimeout(killer);
    const sigtermMs = Date.now() - t0;
    await vm.flush();
    const host = `hostile-${a.name}`;
    const raw = await vm.exportRaw(`{__name__="gpu.utilization","host.name"="${host}"}`);
    const times = [...new Set(raw.flatMap((s) => s.timestamps))].filter((t) => t >= start - INTERVAL_MS && t <= end).sort((x, y) => x - y);
    let maxGap = 0;
    for (let i = 1; i < times.length; i++) maxGap = Math.max(maxGap, times[i]! - times[i - 1]!);
    if (times.length) maxGap = Math.max(maxGap, times[0]! - start, end - times[times.length - 1]!);
    else maxGap = end - start;
    const all = JSON.stringify(await vm.exportRaw(`{"host.name"="${host}"}`));
    for (const text of [d.stdout, d.stderr, all]) if (text.includes(marker)) markerBytes += marker.length;
    // NCCL figures whose job is the victim's: the attacker wrote every NCCL file here
    const forged =
      page.split('\n').filter((l) => l.startsWith('nccl_') && l.includes(`slurm_job_id="${VICTIM_JOB}"`)).length +
      (all.match(new RegExp(`"__name__":"nccl[^}]*"slurm.job.id":"${VICTIM_JOB}"`, 'g'))?.length ?? 0);
    const budgetHits: Record<string, number> = {};
    for (const m of page.matchAll(/^l9gpu_budget_exceeded[a-z_]*\{([^}]*)\} (\S+)/gm)) {
      const b = /l9gpu_budget="([^"]+)"/.exec(m[1]!)?.[1] ?? '?';
      budgetHits[b] = (budgetHits[b] ?? 0) + Number(m[2]);
    }
    const f: Figures = {
      attack: a.name,
      ticks: times.length,
      missedTicks: Math.max(0, Math.round(maxGap / INTERVAL_MS) - 1),
      maxGapMs: maxGap,
      metricsP99Ms: Math.round(percentile(latencies, 99)),
      metricsFailed: failed,
      peakRssMb: Math.round(peakRssMb * 10) / 10,
      peakFds,
      cpuPercent,
      sigtermMs,
      markerBytes,
      forged,
      longestLabel: longestLabel(page),
      budgetHits,
    };
    if (REPORT) process.stdout.write(`hostile: ${JSON.stringify(f)}\n`);
    try {
      a.check?.(f, page, d, dir);
    } catch (e) {
      (e as Error).message += `\n${JSON.stringify(f)}\nstderr ends: ${d.stderr.slice(-2000)}`;
      throw e;
    }
    return f;
  } finally {
    if (d.child.exitCode === null) d.child.kill('SIGKILL');
    for (const c of running.splice(0)) c.kill('SIGKILL');
    // and what runuser started, which its SIGKILL does not reach
    spawnSync('pkill', ['-KILL', '-u', 'nobody', '-f', 'hostile-user.mjs']);
  }
}

function assertBounds(f: Figures, d: DaemonProcess): void {
  const why = `${f.attack}: ${JSON.stringify(f)}\nstderr ends: ${d.stderr.slice(-2000)}`;
  assert.ok(f.ticks >= ATTACK_MS / INTERVAL_MS - 1, `GPU points every tick: ${f.ticks} in ${ATTACK_MS} ms; ${why}`);
  assert.ok(f.maxGapMs < 1.9 * INTERVAL_MS, `no tick missed (largest gap ${f.maxGapMs} ms); ${why}`);
  assert.equal(f.metricsFailed, 0, `/metrics answered every scrape; ${why}`);
  assert.ok(f.metricsP99Ms < BOUNDS.p99Ms, `/metrics p99 ${f.metricsP99Ms} ms; ${why}`);
  assert.ok(f.peakRssMb < BOUNDS.rssMb, `peak RSS ${f.peakRssMb} MB (bound ${BOUNDS.rssMb}); ${why}`);
  assert.ok(f.peakFds < BOUNDS.fds, `peak fds ${f.peakFds}; ${why}`);
  assert.ok(f.sigtermMs < BOUNDS.sigtermMs, `SIGTERM to exit ${f.sigtermMs} ms; ${why}`);
  assert.equal(f.markerBytes, 0, `bytes of the root-only file in the output; ${why}`);
  assert.equal(f.forged, 0, `NCCL figures credited to another user's job; ${why}`);
}

/** The attacker's job: discovery finds its dump folder through its environment. */
async function attackerJob(dump: string, job = ATTACKER_JOB): Promise<number> {
  const { pid } = await asRunning('nobody', ['job'], { NCCL_INSPECTOR_ENABLE: '1', NCCL_INSPECTOR_DUMP_DIR: dump, SLURM_JOB_ID: job });
  return pid;
}

const attacks = (round: number): Attack[] => {
  const fifoHow = pick(['rename', 'recreate', 'link'] as const);
  const fifoWhat = pick(['log', 'prom'] as const);
  const manyFiles = between(3000, 8000) * (round > 0 ? 3 : 1);
  const conns = between(300, 600);
  // under [vllm] max_page_size (16 MiB): a page the daemon reads whole
  const series = between(150_000, 220_000);
  const linkTo = pick(['file', 'folder', 'proc'] as const);
  // the attacker's process says it is in its own job, or in the victim's (SLURM_JOB_ID is the process's to set)
  const claim = pick(['own', 'victim'] as const);
  const sinkMove = pick(['link', 'fifo'] as const);
  const sinkDir = join(base, `sink-${round}`);
  let dump = '';
  return [
    {
      // H1: the followed log (or .prom) turned into a FIFO while the daemon follows it
      name: `fifo-${fifoWhat}-${fifoHow}`,
      async setup(dir) {
        dump = userDir(join(dir, 'dump'));
      },
      async run(_dir, _d, metricsUrl) {
        const pid = await attackerJob(dump);
        const target =
          fifoWhat === 'log' ? join(dump, `${HOST}-pid${pid}.log`) : join(dump, `nccl_inspector_metrics_${GPUS[0]!.uuid.slice(4)}.prom`);
        if (fifoWhat === 'log') as('nobody', ['log', dump, HOST, String(pid), '20']);
        else as('nobody', ['prom', target, ATTACKER_JOB, HOST]);
        // the daemon reads it (its folder is found by discovery, every 10 s from the start): its figures are on the page
        await waitFor(
          "the attacker's NCCL figures on /metrics",
          async () => /^nccl_/m.test(await (await fetch(metricsUrl)).text()),
          30_000,
          250,
        );
        as('nobody', ['fifo', target, fifoHow]);
      },
      check(f) {
        assert.ok((f.budgetHits.not_regular_file ?? 0) > 0, `the FIFO was counted: ${JSON.stringify(f.budgetHits)}`);
      },
    },
    {
      // H2, L15: thousands of one-line logs
      name: 'many-files',
      setup(dir) {
        const folder = userDir(join(dir, 'nccl-inspector-4242'));
        as('nobody', ['files', folder, HOST, String(manyFiles)]);
      },
      check(f, _page, d) {
        assert.ok((f.budgetHits.files_per_user ?? 0) > 0, `the files budget was hit: ${JSON.stringify(f.budgetHits)}`);
        const warned = d.stderr.split('\n').filter((l) => l.includes('nccl-inspector-4242')).length;
        assert.ok(warned <= 12, `the log says the folder a few times, not once a file: ${warned} lines`);
      },
    },
    {
      // H6: a .prom (and a log) that is a link to a root-only file, a folder, or /proc
      name: `link-${linkTo}`,
      setup(dir) {
        const folder = userDir(join(dir, 'nccl-inspector-77'));
        const target = linkTo === 'file' ? secret : linkTo === 'folder' ? base : '/proc/1/environ';
        as('nobody', ['link', join(folder, `nccl_inspector_metrics_${GPUS[0]!.uuid.slice(4)}.prom`), target]);
        as('nobody', ['link', join(folder, `${HOST}-pid1.log`), target]);
      },
      check(f) {
        // the marker check says nothing was read through them; this, that both were seen and refused
        assert.ok((f.budgetHits.not_regular_file ?? 0) >= 2, `both links were refused and counted: ${JSON.stringify(f.budgetHits)}`);
      },
    },
    {
      // H7: files of the attacker that name the victim's job (label) or the victim's pid (log name)
      name: `forged-job-claims-${claim}`,
      async setup(dir, config) {
        // the victim's job, as the real prolog records it: uid 1001's, on the second GPU
        prolog(config, {
          SLURM_JOB_ID: VICTIM_JOB,
          SLURM_JOB_USER: VICTIM,
          SLURM_JOB_UID: String(victimUid),
          SLURM_JOB_PARTITION: 'gpu',
          CUDA_VISIBLE_DEVICES: GPUS[1]!.uuid,
        });
        dump = userDir(join(dir, 'dump'));
        const folder = userDir(join(dir, `nccl-inspector-${VICTIM_JOB}`));
        as('nobody', ['prom', join(folder, `nccl_inspector_metrics_${GPUS[1]!.uuid.slice(4)}.prom`), VICTIM_JOB, HOST]);
        as('nobody', ['log', folder, HOST, String(victimPid), '50']);
      },
      async run() {
        const pid = await attackerJob(dump, claim === 'own' ? ATTACKER_JOB : VICTIM_JOB);
        // its own log too: its figures are its own, credited to no one else's job
        as('nobody', ['log', dump, HOST, String(pid), '50']);
        as('nobody', ['log', dump, HOST, String(victimPid), '50']);
        as('nobody', ['prom', join(dump, `nccl_inspector_metrics_${GPUS[1]!.uuid.slice(4)}.prom`), VICTIM_JOB, HOST]);
      },
      check(f) {
        assert.ok(
          (f.budgetHits.not_owner ?? 0) > 0,
          `files naming another user's job or process were counted: ${JSON.stringify(f.budgetHits)}`,
        );
      },
    },
    {
      // L10: a sparse log of gigabytes, growing
      name: 'sparse-log',
      async setup(dir) {
        dump = userDir(join(dir, 'dump'));
      },
      async run() {
        const pid = await attackerJob(dump);
        // measured from its pid line on: the log in place and growing for the whole window
        await asRunning('nobody', ['sparse', join(dump, `${HOST}-pid${pid}.log`), String(10 * 2 ** 30), String(ATTACK_MS + 2000)]);
      },
    },
    {
      // no attack: a user's engine serving as many series as [limits] series_per_endpoint lets through (less the
      // families), scraped every second and its series on a page read ten times a second: what the series a user
      // may have cost, held to the same bounds as every attack
      name: 'engine-at-budget',
      ini: { daemon: { engines: 'auto' } },
      async setup() {
        await asRunning('nobody', ['engine', String(await freePort()), String(DEFAULT_LIMITS.seriesPerEndpoint - 10), 'vllm', 'serve']);
      },
      check(f) {
        assert.equal(
          (f.budgetHits.series_per_endpoint ?? 0) + (f.budgetHits.series_per_user ?? 0),
          0,
          `within the budget: ${JSON.stringify(f.budgetHits)}`,
        );
      },
    },
    {
      // H5: a process of the attacker calling itself vllm, serving a quarter of a million series: what it serves past
      // the budget is never read
      name: 'engine-series',
      ini: { daemon: { engines: 'auto' } },
      // before the daemon starts: its first look for engines is at start, the next 30 s later
      async setup() {
        const port = await freePort();
        await asRunning('nobody', ['engine', String(port), String(series), 'vllm', 'serve']);
      },
      check(f, page) {
        const n = page.split('\n').filter((l) => l.startsWith('vllm')).length;
        assert.ok(n <= 20_000, `series from the attacker's engine bounded: ${n}`);
        assert.ok(
          (f.budgetHits.series_per_endpoint ?? 0) + (f.budgetHits.series_per_user ?? 0) > 0,
          `the series budget was hit: ${JSON.stringify(f.budgetHits)}`,
        );
        assert.match(page, /process_owner="nobody"/, "the engine's series carry its owner");
      },
    },
    {
      // H3: jobs.sock connections holding 60 kB each, trickling a byte at a time
      name: 'jobs-socket',
      async run(dir) {
        // measured from its pid line on: every connection held (or refused) for the whole window
        await asRunning('nobody', ['conns', join(dir, 'state', 'jobs.sock'), String(conns), String(ATTACK_MS + 2000)]);
      },
      check(f) {
        assert.ok(
          (f.budgetHits.jobs_connections_per_user ?? 0) > 0,
          `connections past the per-user cap were refused: ${JSON.stringify(f.budgetHits)}`,
        );
      },
    },
    {
      // M11: a job name of 120 kB on a job of the attacker's
      name: 'long-job-name',
      setup(_dir, config) {
        prolog(config, {
          SLURM_JOB_ID: ATTACKER_JOB,
          SLURM_JOB_USER: 'nobody',
          SLURM_JOB_UID: String(NOBODY),
          SLURM_JOB_PARTITION: 'gpu',
          SLURM_JOB_NAME: 'n'.repeat(120_000),
          CUDA_VISIBLE_DEVICES: GPUS[0]!.uuid,
        });
      },
      check(f, page) {
        assert.match(page, new RegExp(`slurm_job_id="${ATTACKER_JOB}"`), 'the job is attributed');
        assert.ok(f.longestLabel <= 256, `longest label value ${f.longestLabel}`);
      },
    },
    {
      // M4: the file sink's path a link to a root-only file, or a FIFO
      name: `file-sink-${sinkMove}`,
      // the path is in a folder of the attacker's (as a site's /scratch/<user>/l9gpu.jsonl would be)
      ini: { daemon: { sinks: 'prometheus, otlp, file' }, file: { path: join(sinkDir, 'metrics.jsonl') } },
      setup() {
        mkdirSync(sinkDir, { recursive: true });
        chmodSync(sinkDir, 0o755);
        const out = userDir(join(sinkDir));
        const path = join(out, 'metrics.jsonl');
        if (sinkMove === 'link') as('nobody', ['link', path, secret]);
        else as('nobody', ['fifo', path, 'recreate']);
      },
      check() {
        assert.equal(readFileSync(secret, 'utf8'), `${marker}\n`, 'the root-only file is unchanged');
      },
    },
  ];
};

before(async () => {
  mkdirSync(bin);
  // 22.05's scontrol with no step on the node (recorded answers: slurm/testdata/README.md)
  writeFileSync(
    join(bin, 'scontrol'),
    `#!/bin/sh\n[ "$1" = listjobs ] && { echo 'invalid keyword: listjobs' >&2; exit 1; }\necho ` +
      `'No job steps exist on this node.' >&2; exit 1\n`,
    { mode: 0o755 },
  );
  writeFileSync(join(bin, 'sacct'), `#!/bin/sh\necho 'sacct: error: Slurm accounting storage is disabled' >&2; exit 1\n`, { mode: 0o755 });
  writeFileSync(join(base, 'slurm.conf'), 'ClusterName=ci\n');
  writeFileSync(secret, `${marker}\n`, { mode: 0o600 });
  nvml = new FakeNvml({ devices: GPUS });
  vm = await new VictoriaMetrics().start();
  victimUid = Number(spawnSync('id', ['-u', VICTIM], { encoding: 'utf8' }).stdout.trim());
  assert.ok(victimUid > 0, `user ${VICTIM} (test/setup/install-test-deps.sh makes it)`);
  // the victim's job: a process of theirs in job 999999 (SLURM_JOB_ID in its environment: no cgroups here)
  const v = spawn('runuser', ['-u', VICTIM, '--', 'env', `SLURM_JOB_ID=${VICTIM_JOB}`, process.execPath, HOSTILE, 'job'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  victim = v;
  let out = '';
  v.stdout!.setEncoding('utf8').on('data', (s: string) => (out += s));
  victimPid = await waitFor("the victim's process", () => (/^(\d+)\n/.exec(out) ? Number(/^(\d+)\n/.exec(out)![1]) : undefined));
});

after(async () => {
  // runuser does not pass on a SIGKILL: the victim's own process, by its pid
  if (victimPid) process.kill(victimPid, 'SIGKILL');
  victim?.kill('SIGKILL');
  await vm?.stop();
});

for (let round = 0; round < ROUNDS; round++) {
  for (const a of attacks(round)) {
    test(`hostile user, round ${round}: ${a.name}`, async () => {
      let daemon: DaemonProcess | undefined;
      const f = await underAttack({
        ...a,
        check(fig, page, d, dir) {
          daemon = d;
          a.check?.call(a, fig, page, d, dir);
        },
      });
      assertBounds(f, daemon!);
    });
  }
}
