/**
 * `l9gpu gpus`: its flags as data and its body, shared by the oclif command
 * and the light entry (light-main.ts).
 */
import { PLUGINS, selectAgentPlugins } from '../../daemon/plugin-catalog.js';
import { resolveAgentAttribution } from '../../daemon/schema.js';
import { createLogger } from '../core/log.js';
import { printable, printableDeep } from '../core/printable.js';
import { PointBuffer, type Point } from '../core/metrics/model.js';
import { pluginContext, type Plugin } from '../core/plugin.js';
import { loadCliConfig } from './config.js';
import { gpuView, renderGpuTable } from './gpus-view.js';
import type { FlagValues } from './flag-spec.js';


/** Samples the GPU plugins once and prints them; resolves to the exit code (1: no GPU could be read). */
export async function gpus(flags: FlagValues): Promise<number> {
  const cfg = loadCliConfig(flags.config as string | undefined, flags.plugin ? [{ section: 'daemon', key: 'plugins', raw: (flags.plugin as string[]).join(','), flag: '--plugin' }] : []);
  // warnings (a GPU NVML cannot open, a field it cannot read) belong on stderr here
  // what a vendor tool printed (a name, an error) reaches the terminal without its control characters
  const log = createLogger('warn', (l) => process.stderr.write(`l9gpu: ${printable(l.replace(/^\S+ \w+ \[[^\]]+\] /, '').replace(/\n$/, ''))}\n`));
  const ctx = pluginContext(cfg, log, { oneShot: true });
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
    process.stdout.write(renderGpuTable(printableDeep(view), process.stdout.isTTY === true && !process.env.NO_COLOR));
    for (const e of errors) process.stderr.write(`l9gpu: ${e.plugin}: ${printable(e.error)}\n`);
    if (gpuPlugins.length === 0) process.stderr.write('l9gpu: no GPU plugin is enabled or detected (see l9gpu doctor)\n');
  }
  return errors.length && view.length === 0 ? 1 : 0;
}
