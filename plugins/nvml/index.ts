/**
 * NVIDIA GPUs through NVML (libnvidia-ml.so.1) bound with koffi. Every NVML
 * call is a koffi async call off the event loop (session.ts); this side
 * converts snapshots to points (convert.ts) and counts Xid events.
 */
import { GPU } from '../../src/core/metrics/gpu-metrics.js';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EVENT_TYPE } from './abi.js';
import { DEFAULT_LIBRARY, NVML_SECTION } from './config.js';
import { readSection } from '../../src/core/config/read.js';
import { createLogger } from '../../src/core/log.js';
import type { Emitter } from '../../src/core/metrics/model.js';
import type { Plugin, PluginContext, PluginManifest, ProbeResult } from '../../src/core/plugin.js';
import { NvmlSession } from './session.js';
import { NvmlConverter } from './convert.js';
import type { Snapshot } from './snapshot.js';

export interface NvmlOptions {
  library: string;
  processes: boolean;
  events: boolean;
  /** Seconds between reads of a GPU's state ([nvml] state_interval). */
  stateInterval: number;
}

export function nvmlOptions(ctx: Pick<PluginContext, 'config'>): NvmlOptions {
  const c = readSection(ctx.config, NVML_SECTION);
  return { library: c.library ?? DEFAULT_LIBRARY, processes: c.processes, events: c.events, stateInterval: c.state_interval };
}

class NvmlPlugin implements Plugin {
  private readonly converter = new NvmlConverter();
  private readonly client: NvmlSession;
  /** Latest snapshot, for `l9gpu gpus` (processes, MIG children). */
  last: Snapshot | undefined;

  constructor(
    opts: NvmlOptions,
    private readonly ctx: PluginContext,
  ) {
    this.client = new NvmlSession({ ...opts, oneShot: ctx.oneShot }, ctx.log, (e) => {
      this.converter.addEvent(e);
      if (e.eventType & EVENT_TYPE.XidCriticalError) ctx.log.warn('Xid error', { gpu: e.uuid, xid: e.data });
    });
  }

  async collect(out: Emitter, signal: AbortSignal): Promise<void> {
    const s = await this.client.sample(signal);
    this.client.logNotes(s.notes);
    this.last = s;
    this.converter.convert(s, out);
  }

  close(): Promise<void> {
    return this.client.close();
  }
}

/** What the daemon cannot report when the library lacks an optional entry point (binding variant names). */
const LOSES: Record<string, string> = {
  events: 'no Xid counts',
  gpm: 'no SM/engine/tensor/pipe/DRAM activity or NVLink traffic, no MIG instance utilization',
  samples: 'one reading a tick instead of interval means',
  memory: 'reserved memory counted as used',
  temperature: 'no GPU temperature',
  energy: 'energy integrated from power',
  clockReasons: 'no throttle causes',
  remappedRows: 'no remapped rows',
  retiredPages: 'no retired pages',
  fieldValues: 'no NVLink counters, memory temperature or pending retirement; a call of its own for each other field',
  processes: 'no processes',
  mig: 'no MIG instances',
  serial: 'no gpu.serial_number on gpu.info',
  vbios: 'no gpu.firmware.version on gpu.info',
};

/**
 * Where the dynamic loader could find a bare library name: the folder
 * (LD_LIBRARY_PATH, the default and multiarch folders) or /etc/ld.so.cache
 * (the name appears in it); undefined: nowhere; null: no cache to read, so
 * nobody can tell short of dlopen().
 */
function loaderFinds(name: string, env: NodeJS.ProcessEnv): string | undefined | null {
  const dirs = [
    ...(env.LD_LIBRARY_PATH ?? '').split(':').filter(Boolean),
    '/lib',
    '/usr/lib',
    '/lib64',
    '/usr/lib64',
    `/lib/${MULTIARCH}`,
    `/usr/lib/${MULTIARCH}`,
  ];
  const dir = dirs.find((d) => existsSync(join(d, name)));
  if (dir) return dir;
  try {
    return readFileSync('/etc/ld.so.cache').includes(name) ? '/etc/ld.so.cache' : undefined;
  } catch {
    return null;
  }
}

/**
 * Whether the dynamic loader could find a bare library name: a superset of
 * where dlopen() looks, so false only where dlopen() would fail too: a node
 * without the NVIDIA driver then never loads koffi.
 */
export function loaderMayFind(name: string, env: NodeJS.ProcessEnv = process.env): boolean {
  return loaderFinds(name, env) !== undefined; // no cache to read: let dlopen() say
}

/** The NVIDIA driver's library as found (not loaded): then a node without NVIDIA GPUs read has a problem. */
export function nvmlInstalled(library: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const what = `${library} (the NVIDIA driver's library) is installed`;
  if (library.includes('/')) return existsSync(library) ? what : undefined;
  const at = loaderFinds(library, env);
  return at ? `${what} (${at})` : undefined;
}
const MULTIARCH = `${process.arch === 'arm64' ? 'aarch64' : process.arch === 'ppc64' ? 'powerpc64le' : 'x86_64'}-linux-gnu`;

export async function probeNvml(opts: NvmlOptions): Promise<ProbeResult> {
  if (opts.library.includes('/') && !existsSync(opts.library)) return { ok: false, detail: `${opts.library} not found` };
  if (!opts.library.includes('/') && !loaderMayFind(opts.library)) {
    return {
      ok: false,
      detail:
        `${opts.library} not found by the dynamic loader (LD_LIBRARY_PATH, /etc/ld.so.cache, ` +
        `/usr/lib): no NVIDIA driver ([nvml] library or L9GPU_NVML_LIBRARY)`,
    };
  }
  // the probe's notes (NOT_SUPPORTED fields...) are the daemon's business, not doctor's
  const client = new NvmlSession(
    { ...opts, events: false, oneShot: true },
    createLogger('error', () => {}),
    () => {},
  );
  const ac = new AbortController();
  const t = setTimeout(() => ac.abort(), 5000);
  try {
    const s = await client.sample(ac.signal);
    const lost = s.gpus.filter((g) => g.lost).length;
    // a lost GPU is when monitoring matters most: NVML that loads and sees a GPU is on, the lost one reported as lost
    const lacks = (s.missing ?? []).map((k) => (LOSES[k] ? `${k} (${LOSES[k]})` : k));
    return {
      ok: s.gpus.length > 0,
      gpus: s.gpus.length,
      detail:
        `driver ${s.driverVersion}, ${s.gpus.length} GPU(s)${lost ? `, ${lost} lost` : ''} via ` +
        `${opts.library}${lacks.length ? `; this library lacks ${lacks.join(', ')}` : ''}`,
    };
  } catch (e) {
    return { ok: false, detail: (e as Error).message };
  } finally {
    clearTimeout(t);
    await client.close();
  }
}

export const nvmlPlugin: PluginManifest = {
  name: 'nvml',
  reportsGpus: true,
  metrics: [
    GPU.clock,
    GPU.ecc,
    GPU.energy,
    GPU.fan,
    GPU.info,
    GPU.link,
    GPU.linkIo,
    GPU.lost,
    GPU.memFree,
    GPU.memReserved,
    GPU.memTotal,
    GPU.memUsed,
    GPU.memUtil,
    GPU.memCapacity,
    GPU.pcie,
    GPU.power,
    GPU.powerLimit,
    GPU.powerMax,
    GPU.procCount,
    GPU.procMem,
    GPU.engineActive,
    GPU.smActive,
    GPU.smOccupancy,
    GPU.tensorActive,
    GPU.dramActive,
    GPU.tensorPipeActive,
    GPU.pipeActive,
    GPU.nvlink,
    GPU.smCyclesElapsed,
    GPU.smCyclesActive,
    GPU.tensorCycles,
    GPU.tensorPipeCycles,
    GPU.pipeCycles,
    GPU.pcieIo,
    GPU.pstate,
    GPU.remapFailed,
    GPU.remapPending,
    GPU.remapped,
    GPU.replays,
    GPU.retirePending,
    GPU.retired,
    GPU.temp,
    GPU.throttle,
    GPU.util,
    GPU.utilMax,
    GPU.xid,
  ].map((d) => d.name),
  auto: 'detect',
  hardware: { vendor: 'nvidia', installed: (ctx) => nvmlInstalled(nvmlOptions(ctx).library) },
  description: 'NVIDIA GPUs through NVML (libnvidia-ml.so.1, bound with koffi)',
  section: NVML_SECTION,
  // a one-shot has no use for the Xid event set: it sees only events after it starts
  create: (ctx) => {
    const o = nvmlOptions(ctx);
    return new NvmlPlugin({ ...o, events: o.events && !ctx.oneShot }, ctx);
  },
  probe: (ctx) => probeNvml(nvmlOptions(ctx)),
};
