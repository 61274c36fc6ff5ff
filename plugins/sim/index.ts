/**
 * Simulated GPUs (gpu.vendor=sim) with plausible, moving, self-consistent
 * values, for demos and dashboards on machines without GPUs. Never used to
 * test vendor plugins: those are tested against their real ABI or format.
 *
 * Each GPU alternates between idle spells and "jobs" with a target
 * utilization; power follows utilization, temperature follows power with a
 * lag, energy integrates power, and clocks drop when power nears the limit.
 */
import { gpuAttributes } from '../../src/core/gpu-identity.js';
import { SIM_SECTION } from './config.js';
import { readSection } from '../../src/core/config/read.js';
import { GPU, memoryFraction } from '../../src/core/metrics/gpu-metrics.js';
import type { Attributes, Emitter } from '../../src/core/metrics/model.js';
import type { Plugin, PluginContext, PluginManifest } from '../../src/core/plugin.js';
import { hash32, rng } from '../../src/core/rng.js';

const IDLE_W = 70;
const MAX_SM_MHZ = 1980;
const MEM_MHZ = 2619;

/**
 * A stable NVML-style UUID per (host, index): dashboards keep their series across restarts.
 * hash32, not node:crypto: `l9gpu gpus` on the sim plugin loaded crypto and node:stream for it.
 */
export function simUuid(host: string, index: number): string {
  const key = `l9gpu-sim/${host}/${index}`;
  const h = [0, 1, 2, 3].map((salt) => hash32(key, salt).toString(16).padStart(8, '0')).join('');
  return `GPU-${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

interface SimGpu {
  attrs: Attributes;
  util: number;
  target: number;
  phaseLeft: number;
  mem: number;
  memTarget: number;
  temp: number;
  memTemp: number;
  energyJ: number;
  eccCorrected: number;
  start: number;
}

class SimPlugin implements Plugin {
  private readonly gpus: SimGpu[];
  private readonly rand: () => number;
  private last = 0;

  constructor(
    count: number,
    private readonly model: string,
    private readonly memBytes: number,
    private readonly limitW: number,
    host: string,
    seed: number,
    private readonly clock: () => number,
  ) {
    this.rand = rng(seed);
    const now = clock();
    this.gpus = Array.from({ length: count }, (_, i) => {
      const energyJ = 1e6 * (1 + this.rand());
      return {
        attrs: gpuAttributes({
          index: i,
          uuid: simUuid(host, i),
          model,
          vendor: 'sim',
          pciBusId: `0000:${(0x18 + i * 0x10).toString(16).padStart(2, '0')}:00.0`,
        }),
        util: 0,
        target: 0,
        phaseLeft: 0,
        mem: 0.6e9,
        memTarget: 0.6e9,
        temp: 32 + this.rand() * 4,
        memTemp: 36,
        energyJ,
        eccCorrected: 0,
        // as if the GPU had idled since its counter started: energy and start agree
        start: now - Math.round((energyJ / IDLE_W) * 1000),
      };
    });
  }

  collect(out: Emitter): void {
    const now = this.clock();
    const dt = this.last ? Math.min(300, (now - this.last) / 1000) : 0;
    this.last = now;
    for (const g of this.gpus) {
      this.step(g, dt);
      const a = g.attrs;
      const power = IDLE_W + (this.limitW - IDLE_W) * Math.min(1, g.util * (0.85 + 0.1 * this.rand()));
      const powerCapped = power > this.limitW * 0.97;
      const thermal = g.temp > 83;
      g.energyJ += power * dt;
      const smMhz = g.util < 0.02 ? 345 : Math.round(MAX_SM_MHZ * (powerCapped ? 0.86 : thermal ? 0.8 : 1));
      out.add(GPU.util, round(g.util, 3), a);
      out.add(GPU.memUtil, round(g.util * 0.55 * (0.8 + 0.4 * this.rand()), 3), a);
      out.add(GPU.memUsed, Math.round(g.mem), a);
      out.add(GPU.memFree, Math.round(this.memBytes - g.mem), a);
      out.add(GPU.memTotal, this.memBytes, a);
      // rounded as the sim's other figures are (a backend keeps some 14 digits of a double)
      out.add(GPU.memCapacity, round(memoryFraction(Math.round(g.mem), this.memBytes)!, 4), a);
      out.add(GPU.temp, round(g.temp, 0), { ...a, 'gpu.temperature.sensor': 'edge' });
      out.add(GPU.temp, round(g.memTemp, 0), { ...a, 'gpu.temperature.sensor': 'memory' });
      out.add(GPU.power, round(power, 1), a);
      out.add(GPU.powerLimit, this.limitW, a);
      out.add(GPU.energy, round(g.energyJ, 3), a, g.start);
      out.add(GPU.clock, smMhz * 1e6, { ...a, 'gpu.clock.type': 'sm' });
      out.add(GPU.clock, smMhz * 1e6, { ...a, 'gpu.clock.type': 'graphics' });
      out.add(GPU.clock, MEM_MHZ * 1e6, { ...a, 'gpu.clock.type': 'memory' });
      out.add(GPU.throttle, powerCapped ? 1 : 0, { ...a, 'gpu.throttle.cause': 'power' });
      out.add(GPU.throttle, thermal ? 1 : 0, { ...a, 'gpu.throttle.cause': 'thermal' });
      out.add(GPU.throttle, 0, { ...a, 'gpu.throttle.cause': 'sw' });
      out.add(GPU.throttle, 0, { ...a, 'gpu.throttle.cause': 'hw' });
      for (const scope of ['volatile', 'aggregate']) {
        out.add(GPU.ecc, g.eccCorrected, { ...a, 'error.type': 'corrected', 'gpu.ecc.scope': scope }, g.start);
        out.add(GPU.ecc, 0, { ...a, 'error.type': 'uncorrected', 'gpu.ecc.scope': scope }, g.start);
      }
      const pcie = g.util * 2.5e9 * this.rand();
      out.add(GPU.pcie, Math.round(pcie), { ...a, 'network.io.direction': 'transmit' });
      out.add(GPU.pcie, Math.round(pcie * 1.6), { ...a, 'network.io.direction': 'receive' });
      const link = g.util * 120e9 * (0.7 + 0.3 * this.rand());
      out.add(GPU.link, Math.round(link), { ...a, 'network.io.direction': 'transmit', 'gpu.interconnect.type': 'nvlink' });
      out.add(GPU.link, Math.round(link), { ...a, 'network.io.direction': 'receive', 'gpu.interconnect.type': 'nvlink' });
      out.add(GPU.pstate, g.util < 0.02 ? 8 : 0, a);
    }
  }

  private step(g: SimGpu, dt: number): void {
    g.phaseLeft -= dt;
    if (g.phaseLeft <= 0) {
      // a new "job" (busy 60-600 s) or an idle spell (30-300 s)
      const busy = this.rand() < 0.7;
      g.target = busy ? 0.35 + 0.63 * this.rand() : 0;
      g.memTarget = busy ? this.memBytes * (0.2 + 0.75 * this.rand()) : 0.6e9;
      g.phaseLeft = busy ? 60 + 540 * this.rand() : 30 + 270 * this.rand();
    }
    const k = dt > 0 ? 1 - Math.exp(-dt / 15) : 1;
    const noise = g.target > 0 ? (this.rand() - 0.5) * 0.1 : 0;
    g.util = clamp01(g.util + (g.target - g.util) * k + noise);
    g.mem = Math.min(this.memBytes, Math.max(0, g.mem + (g.memTarget - g.mem) * k));
    const targetTemp = 30 + g.util * 52;
    g.temp += (targetTemp - g.temp) * (dt > 0 ? 1 - Math.exp(-dt / 40) : 0);
    g.memTemp = g.temp + 4;
    if (g.util > 0.5 && this.rand() < 0.002 * dt) g.eccCorrected++;
  }
}

const clamp01 = (x: number): number => Math.min(1, Math.max(0, x));
const round = (x: number, d: number): number => Math.round(x * 10 ** d) / 10 ** d;

/**
 * The plugin on a clock of the caller's: the GPUs move as that clock says
 * (bench/churn.ts runs simulated days in minutes, its samples seconds apart
 * in simulated time); the manifest's is the wall clock.
 */
export function simPluginOn(ctx: PluginContext, clock: () => number): Plugin {
  const c = readSection(ctx.config, SIM_SECTION);
  const seed = c.seed ?? hash32(ctx.hostName);
  return new SimPlugin(c.gpus, c.model ?? 'sim', c.memory, c.power_limit, ctx.hostName, seed, clock);
}

export const simPlugin: PluginManifest = {
  name: 'sim',
  reportsGpus: true,
  metrics: [
    GPU.clock,
    GPU.ecc,
    GPU.energy,
    GPU.link,
    GPU.memFree,
    GPU.memTotal,
    GPU.memUsed,
    GPU.memUtil,
    GPU.memCapacity,
    GPU.pcie,
    GPU.power,
    GPU.powerLimit,
    GPU.pstate,
    GPU.temp,
    GPU.throttle,
    GPU.util,
  ].map((d) => d.name),
  description: 'Simulated GPUs (gpu.vendor=sim) for demos on machines without GPUs',
  section: SIM_SECTION,
  create: (ctx) => simPluginOn(ctx, Date.now),
  probe: async (ctx) => {
    const { gpus } = readSection(ctx.config, SIM_SECTION);
    return { ok: true, gpus, detail: `${gpus} simulated GPUs` };
  },
};
