/**
 * NVML sampling cost through the production binding, on the fake
 * libnvidia-ml with 8 GPUs and every field set (read once: FAKE_NVML_STATIC),
 * GPM included (a full two-sample read every call: no minimum window, and the
 * fake's counters refresh every µs), the same for GPUs in MIG mode with seven
 * GPU instances each, and the daemon's event-loop lag while samples run (the
 * event set read at the end of each).
 *
 * Ticks run back to back, so the fake's driver samples every 50 µs: each tick
 * then finds a buffer's worth of new samples, as a 10 s tick finds with the
 * driver's 1/6 s period. The CPU the fake spends in its own calls (its JSON
 * lookups stand in for the driver's work) is counted by the fake and reported
 * apart: the goal is the daemon's own cost, binding and sampler.
 */
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { loadNvml } from '../plugins/nvml/binding.js';
import { NvmlConverter } from '../plugins/nvml/convert.js';
import type { GpmValues } from '../plugins/nvml/gpm.js';
import { Sampler } from '../plugins/nvml/sampler.js';
import { NvmlSession } from '../plugins/nvml/session.js';
import type { Snapshot } from '../plugins/nvml/snapshot.js';
import { createLogger } from '../src/core/log.js';
import { PointBuffer } from '../src/core/metrics/model.js';

const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi').default;
const SRC = fileURLToPath(new URL('../../test/fixtures/fake-nvml/fake_nvml.c', import.meta.url));

/** Every GPM metric the plugin reads, as a 595 driver answers them on an H100 (percent, MiB/s, raw counters per second). */
const GPM_ALL = {
  graphics: 85,
  sm: 70,
  sm_occupancy: 35,
  integer: 12,
  tensor: 40,
  dfma: 3,
  hmma: 30,
  dmma: 2,
  imma: 5,
  dram: 55,
  fp64: 4,
  fp32: 30,
  fp16: 6,
  pcie_tx_mibs: 12,
  pcie_rx_mibs: 30,
  nvlink_rx_mibs: 100,
  nvlink_tx_mibs: 200,
  sm_cycles_elapsed: 2_000_000,
  sm_cycles_active: 1_400_000,
  mma_cycles_active: 800_000,
  dmma_cycles_active: 40_000,
  hmma_cycles_active: 600_000,
  imma_cycles_active: 100_000,
  dfma_cycles_active: 60_000,
  pcie_tx_bytes: 12_582_912,
  pcie_rx_bytes: 31_457_280,
  integer_cycles_active: 240_000,
  fp64_cycles_active: 80_000,
  fp32_cycles_active: 600_000,
  fp16_cycles_active: 120_000,
};
/** What the plugin read before issue 33: five activities and PCIe traffic, from a 550 driver. */
const GPM_BEFORE = { graphics: 85, sm: 70, sm_occupancy: 35, tensor: 40, dram: 55, pcie_tx_mibs: 12, pcie_rx_mibs: 30 };
/** The seven metrics the baseline reads (GpmValues keys of GPM_BEFORE). */
export const GPM_BEFORE_KEYS = ['graphics', 'sm', 'smOccupancy', 'tensor', 'dram', 'pcieTxMiBs', 'pcieRxMiBs'] as const;

/** gpm 'all': a 595 driver answering every GPM metric the plugin reads; 'before': a 550 driver and the seven of before. */
export function fakeDescription(gpus: number, mig = false, gpm: 'all' | 'before' = 'all'): object {
  const hex = (n: number) => n.toString(16).padStart(2, '0');
  return {
    driver_version: gpm === 'all' ? '595.0.0' : '550.54.15',
    devices: Array.from({ length: gpus }, (_, i) => ({
      uuid: `GPU-${hex(i)}a1b2c3-d4e5-f6a7-b8c9-d0e1f2a3b4${hex(i)}`,
      name: 'NVIDIA H100 80GB HBM3',
      pci_bus_id: `00000000:${hex(0x18 + i * 0x10)}:00.0`,
      minor: i,
      util_gpu: 87,
      util_mem: 40,
      mem_total: 85899345920,
      mem_used: 42949672960,
      mem_free: 42412802048,
      mem_reserved: 536870912,
      temp_gpu: 45,
      power_mw: 350123,
      power_limit_mw: 700000,
      energy_mj: 123456789,
      clock_graphics: 1755,
      clock_sm: 1755,
      clock_mem: 2619,
      clock_reasons: 4,
      ecc: { corrected_volatile: 1, uncorrected_volatile: 0, corrected_aggregate: 5, uncorrected_aggregate: 0 },
      remapped: { corrected: 2, uncorrected: 0, pending: 0, failure: 0 },
      retired: { sbe: 0, dbe: 0 },
      pcie_tx_kbs: 1000,
      pcie_rx_kbs: 2000,
      pcie_replay: 3,
      fan: 30,
      pstate: 0,
      sample_period_ms: 0.05,
      processes: [
        { pid: 4242 + i, used: 1048576000 },
        { pid: 5000 + i, used: 2097152000 },
      ],
      fields: { '82': { type: 1, value: 50 }, '138': { value: 1000 }, '139': { value: 2000 }, '31': { type: 1, value: 0 } },
      gpm: gpm === 'all' ? GPM_ALL : GPM_BEFORE,
      mig_mode: mig ? 1 : 0,
      mig_max: 7,
      // an H100 as seven 1g.10gb instances, one GPU instance each
      mig: mig
        ? Array.from({ length: 7 }, (_, j) => ({
            slot: j,
            uuid: `MIG-${hex(i)}${hex(j)}0000-1111-2222-3333-444444444444`,
            name: 'NVIDIA H100 80GB HBM3 MIG 1g.10gb',
            gi: 7 + j,
            ci: 0,
            mem_total: 10_737_418_240,
            mem_used: 1_048_576,
            mem_free: 10_736_369_664,
            gpm: { graphics: 40, sm: 30, sm_occupancy: 20, tensor: 10, dram: 5 },
          }))
        : [],
    })),
    events: [],
  };
}

/** Builds the fake libnvidia-ml.so.1 under dir/lib and returns its path. */
export function buildFakeNvml(dir: string): string {
  mkdirSync(join(dir, 'lib'), { recursive: true });
  const lib = join(dir, 'lib', 'libnvidia-ml.so.1');
  execFileSync('gcc', ['-shared', '-fPIC', '-O2', '-o', lib, SRC, '-lpthread']);
  return lib;
}

/** One way of sampling, per GPU per tick. */
export interface NvmlCost {
  /** CPU of every thread (the event loop's and the libuv pool's). */
  totalUs: number;
  /** Of which the fake library's own work, standing in for the driver's. */
  fakeUs: number;
  /** The rest: the daemon's own cost (binding, hops to the pool thread and back, sampler). */
  ownUs: number;
  /** NVML calls made (each async one is a hop to a pool thread and back). */
  calls: number;
  wallUs: number;
}

export interface NvmlBenchResult {
  gpus: number;
  fieldsPerGpu: number;
  /** Every tick reads the state too ([nvml] state_interval = 0). */
  everyTick: NvmlCost;
  /** Ticks between state reads (the default 60 s interval). */
  activity: NvmlCost;
  /** At a 10 s interval and the default 60 s state interval: five activity ticks and one with the state. */
  amortized: NvmlCost;
  /** GPUs in MIG mode, seven GPU instances each (GPM by GPU instance), between state reads. */
  mig: NvmlCost;
  /**
   * Issue 33: between state reads, the seven GPM metrics read before (a 550 driver) and every one read now (30, a 595
   * driver), in rounds that alternate the two: before and after are each one's least disturbed round, ratio theirs;
   * medianRatio: the median of the rounds' after/before; rounds: [before, after] own CPU per GPU of each round.
   */
  gpm: { before: NvmlCost; after: NvmlCost; ratio: number; medianRatio: number; rounds: [number, number][] };
  /**
   * The baseline, measured in the same run: the CPU of one bare koffi async
   * call (fakeNvmlCalls, a counter read: no driver work) made back to back,
   * the hop to a libuv pool thread and back that every driver call pays.
   */
  hopUs: number;
  usPerGpuConvert: number;
  eventLoopLagMaxMs: number;
  eventLoopLagP99Ms: number;
}

export async function benchNvml(gpus = 8, iterations = 300): Promise<NvmlBenchResult> {
  const dir = mkdtempSync(join(tmpdir(), 'l9gpu-bench-nvml-'));
  const lib = buildFakeNvml(dir);
  const desc = join(dir, 'nvml.json');
  writeFileSync(desc, JSON.stringify(fakeDescription(gpus)));
  process.env.FAKE_NVML_CONFIG = desc;
  process.env.FAKE_NVML_STATIC = '1';
  process.env.FAKE_NVML_GPM_REFRESH_US = '1';

  // sampling as the daemon does it: koffi async calls, one after another; the cost is the CPU of every thread
  // (the event loop's and the libuv pool thread's) per GPU, and the wall time per GPU beside it
  const nvml = loadNvml(lib);
  const fake = koffi.load(lib);
  const fakeCalls = fake.func('unsigned long long fakeNvmlCalls()') as () => number | bigint;
  const fakeCpuNs = fake.func('unsigned long long fakeNvmlCpuNs()') as () => number | bigint;
  const perGpu = async (
    stateIntervalMs: number,
    gpmOnly?: readonly (keyof GpmValues)[],
    ticks = iterations,
  ): Promise<{ cost: NvmlCost; snap: Snapshot }> => {
    await nvml.init();
    const sampler = new Sampler(nvml, true, 0, stateIntervalMs, gpmOnly);
    await sampler.enumerate();
    for (let i = 0; i < 50; i++) await sampler.sample();
    const n0 = Number(fakeCalls());
    const f0 = Number(fakeCpuNs());
    const t = performance.now();
    const c = process.cpuUsage();
    for (let i = 0; i < ticks; i++) await sampler.sample();
    const cpu = process.cpuUsage(c);
    const per = ticks * gpus;
    const totalUs = (cpu.user + cpu.system) / per;
    const fakeUs = (Number(fakeCpuNs()) - f0) / 1000 / per;
    const cost = {
      totalUs,
      fakeUs,
      ownUs: totalUs - fakeUs,
      calls: (Number(fakeCalls()) - n0) / per,
      wallUs: ((performance.now() - t) * 1000) / per,
    };
    const snap = { driverVersion: '550', time: Date.now(), gpus: (await sampler.sample()).gpus, notes: [] };
    await sampler.release();
    await nvml.shutdown();
    return { cost, snap };
  };
  // the baseline: as many bare async calls, back to back, as the ticks below make, before and after them (their mean)
  const hop = async (): Promise<number> => {
    const f = fakeCalls as unknown as { async: (cb: (e: Error | null, v: unknown) => void) => void };
    const one = () => new Promise((res, rej) => f.async((e, v) => (e ? rej(e) : res(v))));
    for (let i = 0; i < 500; i++) await one();
    const n = iterations * gpus * 11;
    const c = process.cpuUsage();
    for (let i = 0; i < n; i++) await one();
    const cpu = process.cpuUsage(c);
    return (cpu.user + cpu.system) / n;
  };
  const hopBefore = await hop();
  const { cost: everyTick, snap } = await perGpu(0);
  const { cost: activity } = await perGpu(3_600_000);
  // issue 33's goal: every GPM metric (30, a 595 driver) within 5 % of the seven read before (a 550 driver), between state
  // reads, in short rounds that alternate the two. Other work on the machine only adds CPU time to a round: the least
  // disturbed round of each is the nearest to its own cost, and their ratio is the figure held to the goal (the median
  // of the rounds' ratios is reported beside it, and swings with the load)
  const beforeDesc = join(dir, 'nvml-gpm-before.json');
  writeFileSync(beforeDesc, JSON.stringify(fakeDescription(gpus, false, 'before')));
  const befores: NvmlCost[] = [];
  const afters: NvmlCost[] = [];
  for (let r = 0; r < 21; r++) {
    process.env.FAKE_NVML_CONFIG = beforeDesc;
    befores.push((await perGpu(3_600_000, GPM_BEFORE_KEYS, 60)).cost);
    process.env.FAKE_NVML_CONFIG = desc;
    afters.push((await perGpu(3_600_000, undefined, 60)).cost);
  }
  const least = (xs: NvmlCost[]): NvmlCost => xs.reduce((a, b) => (b.ownUs < a.ownUs ? b : a));
  const rounds = befores.map((b, i) => [b.ownUs, afters[i]!.ownUs] as [number, number]);
  const medianRatio = rounds.map(([b, a]) => a / b).sort((x, y) => x - y)[rounds.length >> 1]!;
  const gpm = { before: least(befores), after: least(afters), ratio: least(afters).ownUs / least(befores).ownUs, medianRatio, rounds };
  const mix = (k: keyof NvmlCost): number => (5 * activity[k] + everyTick[k]) / 6;
  const amortized: NvmlCost = {
    totalUs: mix('totalUs'),
    fakeUs: mix('fakeUs'),
    ownUs: mix('ownUs'),
    calls: mix('calls'),
    wallUs: mix('wallUs'),
  };
  const migDesc = join(dir, 'nvml-mig.json');
  writeFileSync(migDesc, JSON.stringify(fakeDescription(gpus, true)));
  process.env.FAKE_NVML_CONFIG = migDesc;
  const { cost: mig } = await perGpu(3_600_000);
  process.env.FAKE_NVML_CONFIG = desc;
  const hopUs = (hopBefore + (await hop())) / 2;
  // conversion to points, as the main thread does it
  const conv = new NvmlConverter();
  let fields = 0;
  for (let i = 0; i < 200; i++) conv.convert(snap, new PointBuffer());
  const t0 = performance.now();
  for (let i = 0; i < iterations; i++) {
    const b = new PointBuffer();
    conv.convert(snap, b);
    fields = b.points.length / gpus;
  }
  const convertUs = ((performance.now() - t0) * 1000) / iterations / gpus;

  // event-loop lag while samples run, each ending with a read of the event set
  const client = new NvmlSession({ library: lib, processes: true, events: true, stateInterval: 60 }, createLogger('error'), () => {});
  const h = monitorEventLoopDelay({ resolution: 1 });
  await client.sample(new AbortController().signal); // init, the event set created
  h.enable();
  const end = Date.now() + 3000;
  while (Date.now() < end) {
    await client.sample(new AbortController().signal);
    await new Promise((r) => setTimeout(r, 50));
  }
  h.disable();
  await client.close();
  return {
    gpus,
    fieldsPerGpu: fields,
    everyTick,
    activity,
    amortized,
    mig,
    gpm,
    hopUs,
    usPerGpuConvert: convertUs,
    eventLoopLagMaxMs: h.max / 1e6,
    eventLoopLagP99Ms: h.percentile(99) / 1e6,
  };
}
