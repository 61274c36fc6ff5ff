import { Command, Flags } from '@oclif/core';
import { PLUGINS, resolveAgentAttribution, selectAgentPlugins } from '../../daemon/catalog.js';
import { createLogger } from '../core/log.js';
import { PointBuffer, type Point } from '../core/metrics/model.js';
import type { Plugin } from '../core/plugin.js';
import { loadCliConfig } from '../cli/config.js';
import { reportingCliErrors } from '../cli/errors.js';
import { gpuView, renderGpuTable } from '../cli/gpus-view.js';
import { configFlag } from '../cli/oclif-flags.js';

export default class Gpus extends Command {
  static override summary = 'Show every GPU of this node now: identity, utilization, memory, temperature, power, energy, throttling, processes, MIG.';
  static override description = `Samples the GPU plugins once (the same code the daemon runs: nvml, amdsmi, hlsmi, and sim when it is configured) and prints one row per GPU, or stable JSON with --json.
GPUs are keyed by UUID; index is the vendor's enumeration order, which may differ from Slurm's GRES index and from /dev/nvidiaN.`;

  static override examples = ['<%= config.bin %> gpus', '<%= config.bin %> gpus --json | jq \'.gpus[] | {uuid, utilization}\''];

  static override flags = {
    config: configFlag,
    json: Flags.boolean({ description: 'Print JSON (stable field names, registry units: ratios 0..1, bytes, W, J, Cel).' }),
    plugin: Flags.string({ multiple: true, delimiter: ',', helpValue: 'NAME', description: 'GPU plugin to sample (default: the configured ones, auto-detected).' }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Gpus);
    await reportingCliErrors((code) => this.exit(code), () => this.report(flags));
  }

  private async report(flags: { config?: string; json: boolean; plugin?: string[] }): Promise<void> {
    const cfg = loadCliConfig(flags.config, flags.plugin ? [{ section: 'daemon', key: 'plugins', raw: flags.plugin.join(','), flag: '--plugin' }] : []);
    // warnings (a GPU NVML cannot open, a field it cannot read) belong on stderr here
    const log = createLogger('warn', (l) => process.stderr.write(`l9gpu: ${l.replace(/^\S+ \w+ \[[^\]]+\] /, '')}`));
    const ctx = { config: cfg, log, hostName: cfg.str('daemon', 'host_name') ?? '' };
    const { names } = await selectAgentPlugins(cfg, ctx);
    const gpuPlugins = PLUGINS.filter((p) => names.includes(p.name) && p.reportsGpus);
    const points: Point[] = [];
    const errors: { plugin: string; error: string }[] = [];
    await Promise.all(
      gpuPlugins.map(async (f) => {
        const ac = new AbortController();
        const t = setTimeout(() => ac.abort(), 15_000);
        let plugin: Plugin | undefined;
        try {
          plugin = await f.create({ ...ctx, log: log.child(f.name) });
          const buf = new PointBuffer();
          await plugin.collect(buf, ac.signal);
          points.push(...buf.points);
        } catch (e) {
          errors.push({ plugin: f.name, error: (e as Error).message });
        } finally {
          clearTimeout(t);
          await plugin?.close?.();
        }
      }),
    );
    const view = gpuView(points);
    // the job(s) on each GPU (a MIG instance's jobs under its parent, with the instance's UUID)
    const jobs = (await resolveAgentAttribution(cfg).manifest?.jobsByGpu(cfg)) ?? new Map();
    for (const g of view) {
      for (const uuid of [g.uuid, ...g.mig.map((m) => m.uuid)]) {
        for (const a of jobs.get(uuid) ?? []) g.jobs.push(uuid === g.uuid ? a : { ...a, 'gpu.uuid': uuid });
      }
    }
    if (flags.json) {
      process.stdout.write(JSON.stringify({ host: ctx.hostName, time: new Date().toISOString(), gpus: view, errors }, null, 2) + '\n');
    } else {
      process.stdout.write(renderGpuTable(view, process.stdout.isTTY === true && !process.env.NO_COLOR));
      for (const e of errors) process.stderr.write(`l9gpu: ${e.plugin}: ${e.error}\n`);
      if (gpuPlugins.length === 0) process.stderr.write('l9gpu: no GPU plugin is enabled or detected (see l9gpu doctor)\n');
    }
    if (errors.length && view.length === 0) this.exit(1);
  }
}
