/**
 * AMD GPUs through the amd-smi CLI's JSON (the libamd_smi C structs change
 * ABI between releases; the CLI's JSON is the stable interface). Metrics and
 * processes are read every tick; identity (list, static) at start and every
 * static_interval, or when a GPU appears.
 */
import { GPU } from '../../src/core/metrics/gpu-metrics.js';
import { AMDSMI_SECTION } from './config.js';
import { readSection } from '../../src/core/config/read.js';
import type { Emitter } from '../../src/core/metrics/model.js';
import type { Plugin, PluginContext, PluginManifest, ProbeResult } from '../../src/core/plugin.js';
import { allInOrder, requireTool, runTool, toolInstalled } from '../../src/core/tool.js';
import { emitMetrics, emitProcesses, gpuEntries, parseIdentity, type AmdGpuIdentity } from './parse.js';
import { monoNow } from '../../src/core/clock.js';

const EXTRA_DIRS = ['/opt/rocm/bin', '/usr/bin', '/usr/local/bin'];

interface Opts {
  command: string;
  timeoutMs: number;
  staticIntervalMs: number;
  processes: boolean;
}

function opts(ctx: Pick<PluginContext, 'config'>): Opts {
  const c = readSection(ctx.config, AMDSMI_SECTION);
  return {
    command: c.command ?? 'amd-smi',
    timeoutMs: c.command_timeout * 1000,
    staticIntervalMs: c.static_interval * 1000,
    processes: c.processes,
  };
}

const locate = (o: Opts): string => requireTool(o.command, EXTRA_DIRS, '[amdsmi] command');

class AmdSmiPlugin implements Plugin {
  private ids = new Map<number, AmdGpuIdentity>();
  private identityAt = 0;
  private readonly start = Date.now();

  constructor(private readonly o: Opts) {}

  private async refreshIdentity(tool: string, signal: AbortSignal, out: Emitter): Promise<void> {
    const [list, stat] = await allInOrder<[string, string]>([
      runTool(tool, ['list', '--json'], this.o.timeoutMs, signal),
      runTool(tool, ['static', '--json'], this.o.timeoutMs, signal),
    ]);
    this.ids = new Map(
      parseIdentity(list, stat, (f, why) => out.unreadable(f, why))
        .filter((g) => g.uuid)
        .map((g) => [g.index, g]),
    );
    this.identityAt = monoNow();
  }

  async collect(out: Emitter, signal: AbortSignal): Promise<void> {
    const tool = locate(this.o);
    if (this.ids.size === 0 || monoNow() - this.identityAt > this.o.staticIntervalMs) await this.refreshIdentity(tool, signal, out);
    const [metricText, processText] = await allInOrder<[string, string | undefined]>([
      runTool(tool, ['metric', '--json'], this.o.timeoutMs, signal),
      this.o.processes ? runTool(tool, ['process', '--json'], this.o.timeoutMs, signal) : Promise.resolve(undefined),
    ]);
    // a GPU we have no identity for (hot-added, reset): re-read identity now rather than drop it for static_interval
    if (gpuEntries(metricText, 'amd-smi metric --json').some((e) => !this.ids.has(e.gpu as number)))
      await this.refreshIdentity(tool, signal, out);
    emitMetrics(metricText, this.ids, out, this.start);
    if (processText !== undefined) emitProcesses(processText, this.ids, out);
  }
}

export async function probeAmdSmi(o: Opts): Promise<ProbeResult> {
  try {
    const tool = locate(o);
    const gpus = gpuEntries(await runTool(tool, ['list', '--json'], o.timeoutMs), 'amd-smi list --json').length;
    return { ok: true, gpus, detail: `${tool}: ${gpus} GPU(s)` };
  } catch (e) {
    return { ok: false, detail: (e as Error).message };
  }
}

export const amdsmiPlugin: PluginManifest = {
  name: 'amdsmi',
  reportsGpus: true,
  metrics: [
    GPU.clock,
    GPU.ecc,
    GPU.eccBlock,
    GPU.energy,
    GPU.engineActive,
    GPU.fan,
    GPU.info,
    GPU.memFree,
    GPU.memTotal,
    GPU.memUsed,
    GPU.memUtil,
    GPU.memCapacity,
    GPU.power,
    GPU.powerLimit,
    GPU.procCount,
    GPU.procMem,
    GPU.replays,
    GPU.temp,
    GPU.util,
  ].map((d) => d.name),
  auto: 'detect',
  hardware: { vendor: 'amd', installed: (ctx) => toolInstalled(opts(ctx).command, EXTRA_DIRS) },
  description: 'AMD GPUs through amd-smi (metric, static, process, list --json)',
  section: AMDSMI_SECTION,
  create: (ctx) => new AmdSmiPlugin(opts(ctx)),
  probe: (ctx) => probeAmdSmi(opts(ctx)),
};
