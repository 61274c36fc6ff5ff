/**
 * Intel Gaudi accelerators through `hl-smi -Q <fields> -f csv`, run every
 * tick (the original l9gpu read it once at start-up and repeated that
 * snapshot forever).
 */
import { GPU } from '../../src/core/metrics/gpu-metrics.js';
import { HLSMI_SECTION } from './config.js';
import { readSection } from '../../src/core/config/read.js';
import type { Emitter } from '../../src/core/metrics/model.js';
import type { Plugin, PluginContext, PluginManifest, ProbeResult } from '../../src/core/plugin.js';
import { requireTool, runTool, toolInstalled } from '../../src/core/tool.js';
import { HL_FIELDS, emitRows, parseCsv } from './parse.js';

const EXTRA_DIRS = ['/usr/bin', '/usr/local/bin', '/opt/habanalabs/bin'];
export const HL_ARGS = ['-Q', HL_FIELDS.join(','), '-f', 'csv'];

function opts(ctx: Pick<PluginContext, 'config'>): { command: string; timeoutMs: number } {
  const c = readSection(ctx.config, HLSMI_SECTION);
  return { command: c.command ?? 'hl-smi', timeoutMs: c.command_timeout * 1000 };
}

const locate = (command: string): string => requireTool(command, EXTRA_DIRS, '[hlsmi] command');

class HlSmiPlugin implements Plugin {
  private readonly start = Date.now();
  constructor(private readonly o: { command: string; timeoutMs: number }) {}

  async collect(out: Emitter, signal: AbortSignal): Promise<void> {
    const text = await runTool(locate(this.o.command), HL_ARGS, this.o.timeoutMs, signal);
    emitRows(parseCsv(text, 'hl-smi -f csv'), out, this.start);
  }
}

export const hlsmiPlugin: PluginManifest = {
  name: 'hlsmi',
  reportsGpus: true,
  metrics: [GPU.ecc, GPU.info, GPU.memCapacity, GPU.memFree, GPU.memTotal, GPU.memUsed, GPU.power, GPU.powerLimit, GPU.temp, GPU.util].map(
    (d) => d.name,
  ),
  auto: 'detect',
  hardware: { vendor: 'intel', installed: (ctx) => toolInstalled(opts(ctx).command, EXTRA_DIRS) },
  description: 'Intel Gaudi accelerators through hl-smi -Q ... -f csv',
  section: HLSMI_SECTION,
  create: (ctx) => new HlSmiPlugin(opts(ctx)),
  probe: async (ctx): Promise<ProbeResult> => {
    const o = opts(ctx);
    try {
      const tool = locate(o.command);
      const rows = parseCsv(await runTool(tool, HL_ARGS, o.timeoutMs), 'hl-smi -f csv');
      return { ok: true, gpus: rows.length, detail: `${tool}: ${rows.length} device(s)` };
    } catch (e) {
      return { ok: false, detail: (e as Error).message };
    }
  },
};
