/**
 * Host CPU, memory and load from /proc. CPU utilization is a rate, so it is
 * computed between two reads of /proc/stat; the first collection takes a
 * short baseline so that `--once` still reports it.
 */
import type { readFile as ReadFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { HOST_SECTION } from './config.js';
import { readSection } from '../../src/core/config/read.js';
import { metric } from '../../src/core/metrics/registry.js';
import type { Emitter } from '../../src/core/metrics/model.js';
import type { Plugin, PluginManifest } from '../../src/core/plugin.js';
import { requireBuiltin } from '../../src/core/builtin.js';

// node:fs/promises (and the readline it loads) at the first read (src/core/builtin.ts): `gpus` and `doctor` load every plugin's module
const readFile = ((...a: Parameters<typeof ReadFile>) =>
  (requireBuiltin('node:fs/promises') as { readFile: typeof ReadFile }).readFile(...a)) as typeof ReadFile;

const CPU_UTIL = metric('system.cpu.utilization');
const CPU_COUNT = metric('system.cpu.logical.count');
const LOAD1 = metric('system.cpu.load_average.1m');
const LOAD5 = metric('system.cpu.load_average.5m');
const LOAD15 = metric('system.cpu.load_average.15m');
const MEM_USAGE = metric('system.memory.usage');
const MEM_LIMIT = metric('system.memory.limit');
const MEM_UTIL = metric('system.memory.utilization');

const BASELINE_MS = 100;

/** The conventions' cpu.mode values (semantic conventions' registry), in /proc/stat's order; interrupt is irq plus softirq. */
export const CPU_MODES = ['user', 'nice', 'system', 'idle', 'iowait', 'interrupt', 'steal'] as const;
export type CpuMode = (typeof CPU_MODES)[number];

export interface CpuTimes {
  /** Jiffies in each mode, all CPUs together. */
  modes: Record<CpuMode, number>;
  total: number;
  cpus: number;
}

/** Aggregate jiffies from /proc/stat by mode. guest time is already inside user (and guest_nice inside nice). */
export function parseProcStat(text: string, file = '/proc/stat'): CpuTimes {
  const lines = text.split('\n');
  const agg = lines.find((l) => l.startsWith('cpu '));
  if (!agg) throw new Error(`${file}: no aggregate "cpu" line`);
  const f = agg.trim().split(/\s+/).slice(1).map(Number);
  if (f.length < 4 || f.some((x) => !Number.isFinite(x))) throw new Error(`${file}: malformed "cpu" line: ${agg.slice(0, 80)}`);
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = f;
  const modes = { user, nice, system, idle, iowait, interrupt: irq + softirq, steal };
  const total = user + nice + system + idle + iowait + irq + softirq + steal;
  return { modes, total, cpus: lines.filter((l) => /^cpu\d+\s/.test(l)).length };
}

/** /proc/meminfo values in bytes (the file says kB and means KiB). */
export function parseMeminfo(text: string, file = '/proc/meminfo'): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const m = /^(\w+(?:\(\w+\))?):\s+(\d+)(?:\s+kB)?$/.exec(line.trim());
    const v = m ? Number(m[2]) * (line.includes('kB') ? 1024 : 1) : NaN;
    // a value beyond what a number holds exactly is no reading
    if (m && Number.isSafeInteger(v)) out[m[1]!] = v;
  }
  if (out.MemTotal === undefined) throw new Error(`${file}: no MemTotal line`);
  return out;
}

export function parseLoadavg(text: string, file = '/proc/loadavg'): [number, number, number] {
  const f = text.trim().split(/\s+/).slice(0, 3).map(Number);
  if (f.length < 3 || f.some((x) => !Number.isFinite(x))) throw new Error(`${file}: malformed: ${text.slice(0, 80)}`);
  return f as [number, number, number];
}

export class HostPlugin implements Plugin {
  private prev: CpuTimes | undefined;
  constructor(private readonly proc: string) {}

  private async cpu(): Promise<CpuTimes> {
    const file = join(this.proc, 'stat');
    return parseProcStat(await readFile(file, 'utf8'), file);
  }

  async collect(out: Emitter): Promise<void> {
    if (!this.prev) {
      this.prev = await this.cpu();
      await new Promise((r) => setTimeout(r, BASELINE_MS));
    }
    const [cur, memText, loadText] = await Promise.all([
      this.cpu(),
      readFile(join(this.proc, 'meminfo'), 'utf8'),
      readFile(join(this.proc, 'loadavg'), 'utf8'),
    ]);
    const prev = this.prev;
    const dTotal = cur.total - prev.total;
    // a counter that went backwards (CPU hot-unplug) gives no rate this time: every mode or none, so that they add up to 1
    if (dTotal > 0 && CPU_MODES.every((m) => cur.modes[m] >= prev.modes[m]))
      for (const m of CPU_MODES) out.add(CPU_UTIL, (cur.modes[m] - prev.modes[m]) / dTotal, { 'cpu.mode': m });
    this.prev = cur;
    out.add(CPU_COUNT, cur.cpus, {});

    const mem = parseMeminfo(memText, join(this.proc, 'meminfo'));
    const total = mem.MemTotal!;
    const free = mem.MemFree ?? 0;
    const buffers = mem.Buffers ?? 0;
    const cached = (mem.Cached ?? 0) + (mem.SReclaimable ?? 0);
    const used = Math.max(0, total - free - buffers - cached);
    out.add(MEM_LIMIT, total, {});
    out.add(MEM_USAGE, used, { 'system.memory.state': 'used' });
    out.add(MEM_USAGE, free, { 'system.memory.state': 'free' });
    out.add(MEM_USAGE, buffers, { 'system.memory.state': 'buffers' });
    out.add(MEM_USAGE, cached, { 'system.memory.state': 'cached' });
    if (total > 0)
      for (const [state, v] of [
        ['used', used],
        ['free', free],
        ['buffers', buffers],
        ['cached', cached],
      ] as const)
        out.add(MEM_UTIL, Math.min(1, v / total), { 'system.memory.state': state });

    const [l1, l5, l15] = parseLoadavg(loadText, join(this.proc, 'loadavg'));
    out.add(LOAD1, l1, {});
    out.add(LOAD5, l5, {});
    out.add(LOAD15, l15, {});
  }
}

export const hostPlugin: PluginManifest = {
  name: 'host',
  reportsGpus: false,
  metrics: [CPU_UTIL, CPU_COUNT, LOAD1, LOAD5, LOAD15, MEM_USAGE, MEM_LIMIT, MEM_UTIL].map((d) => d.name),
  auto: 'always',
  description: 'Host CPU utilization, memory and load average from /proc',
  section: HOST_SECTION,
  create: (ctx) => new HostPlugin(readSection(ctx.config, HOST_SECTION).proc_path),
  probe: async (ctx) => {
    const p = readSection(ctx.config, HOST_SECTION).proc_path;
    return existsSync(join(p, 'stat')) ? { ok: true, detail: `${p}/stat readable` } : { ok: false, detail: `${p}/stat not found` };
  },
};
