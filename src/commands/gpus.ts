import { Command, Flags } from '@oclif/core';
import { loadAgentConfig, selectPlugins } from '../../daemon/catalog.js';
import { PLUGINS } from '../../plugins/index.js';
import { ConfigError } from '../config/schema.js';
import { createLogger } from '../log.js';
import { PointBuffer, type Point } from '../metrics/model.js';
import { jobAttributes } from '../../slurm/attribution.js';
import { gpuView, renderGpuTable } from '../gpus-view.js';
import { slurmStoreStatus } from '../slurm-status.js';

export default class Gpus extends Command {
  static override summary = 'Show every GPU of this node now: identity, utilization, memory, temperature, power, energy, throttling, processes, MIG.';
  static override description = `Samples the GPU plugins once (the same code the daemon runs: nvml, amdsmi, hlsmi, and sim when it is configured) and prints one row per GPU, or stable JSON with --json.
GPUs are keyed by UUID; index is the vendor's enumeration order, which may differ from Slurm's GRES index and from /dev/nvidiaN.`;

  static override examples = ['<%= config.bin %> gpus', '<%= config.bin %> gpus --json | jq \'.gpus[] | {uuid, utilization}\''];

  static override flags = {
    config: Flags.string({ char: 'c', helpValue: 'FILE', description: 'INI configuration file (default /etc/l9gpu/l9gpu.ini, or $L9GPU_CONFIG).' }),
    json: Flags.boolean({ description: 'Print JSON (stable field names, registry units: ratios 0..1, bytes, W, J, Cel).' }),
    plugin: Flags.string({ multiple: true, delimiter: ',', helpValue: 'NAME', description: 'GPU plugin to sample (default: the configured ones, auto-detected).' }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Gpus);
    let cfg;
    try {
      cfg = loadAgentConfig({ configPath: flags.config, overrides: flags.plugin ? [{ section: 'daemon', key: 'plugins', raw: flags.plugin.join(','), flag: '--plugin' }] : [] });
    } catch (e) {
      if (e instanceof ConfigError) {
        process.stderr.write(`l9gpu: ${e.message}\n`);
        this.exit(2);
      }
      throw e;
    }
    // warnings (a GPU NVML cannot open, a field it cannot read) belong on stderr here
    const log = createLogger('warn', (l) => process.stderr.write(`l9gpu: ${l.replace(/^\S+ \w+ \[[^\]]+\] /, '')}`));
    const ctx = { config: cfg, log, hostName: cfg.str('daemon', 'host_name') ?? '' };
    const { names } = await selectPlugins(cfg, ctx);
    const gpuPlugins = PLUGINS.filter((p) => names.includes(p.name) && p.name !== 'host');
    const points: Point[] = [];
    const errors: { plugin: string; error: string }[] = [];
    await Promise.all(
      gpuPlugins.map(async (f) => {
        const ac = new AbortController();
        const t = setTimeout(() => ac.abort(), 15_000);
        let plugin;
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
    // the job(s) on each GPU, from the store the hooks and the daemon keep
    const status = slurmStoreStatus(cfg.str('daemon', 'state_dir')!);
    for (const g of view) {
      const uuids = new Set([g.uuid, ...g.mig.map((m) => m.uuid)]);
      g.jobs = status.openBindings.filter((b) => uuids.has(b.gpuUuid)).map((b) => ({ ...jobAttributes(b), ...(b.gpuUuid !== g.uuid ? { 'gpu.uuid': b.gpuUuid } : {}) }));
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
