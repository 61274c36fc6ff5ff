/**
 * `l9gpu gpus`: its flags as data and its body, shared by the oclif command
 * and the light entry (light-main.ts).
 */
import { expectGpus, gpuShortfall } from '../../daemon/gpu-expectation.js';
import { loadPlugins, resolveAgentAttribution, selectAgentPlugins } from '../../daemon/schema.js';
import { createLogger } from '../core/log.js';
import { printable, printableDeep } from '../core/printable.js';
import { PointBuffer, type Point } from '../core/metrics/model.js';
import { pluginContext, type Plugin } from '../core/plugin.js';
import { loadCliConfig } from './config.js';
import { gpuView, renderGpuTable } from './gpus-view.js';
import type { FlagsOf } from './flag-spec.js';
import type { GPUS_FLAGS } from './command-flags.js';
import { colorOut, writeOut } from './out.js';

/** Samples the GPU plugins once and prints them; resolves to the exit code (1: no GPU could be read, or fewer than the node must have). */
export async function gpus(flags: FlagsOf<typeof GPUS_FLAGS>): Promise<number> {
  const cfg = loadCliConfig(
    flags.config,
    flags.plugin ? [{ section: 'daemon', key: 'plugins', raw: flags.plugin.join(','), flag: '--plugin' }] : [],
  );
  // warnings (a GPU NVML cannot open, a field it cannot read) belong on stderr here
  // what a vendor tool printed (a name, an error) reaches the terminal without its control characters
  const log = createLogger('warn', (l) =>
    process.stderr.write(`l9gpu: ${printable(l.replace(/^\S+ \w+ \[[^\]]+\] /, '').replace(/\n$/, ''))}\n`),
  );
  const ctx = pluginContext(cfg, log, { oneShot: true });
  const { names, detected } = await selectAgentPlugins(cfg, ctx);
  const manifests = await loadPlugins();
  const gpuPlugins = manifests.filter((p) => names.includes(p.name) && p.reportsGpus);
  const points: Point[] = [];
  /** plugin null: the node's problem rather than one plugin's (fewer GPUs than it must have). */
  const errors: { plugin: string | null; error: string }[] = [];
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
  // a driver that did not load reads no GPU, like a node without GPUs: what is installed tells them apart
  const expected = await expectGpus(manifests, ctx);
  const shortfall = gpuShortfall(expected, view.length);
  if (shortfall) {
    const off = expected.plugins
      .filter((n) => !names.includes(n))
      .map((n) => ({
        plugin: n,
        error: detected[n] ? `not enabled by auto: ${detected[n].detail}` : 'not enabled: [daemon] plugins does not name it',
      }));
    errors.unshift({ plugin: null, error: shortfall }, ...off);
  }
  // the job(s) on each GPU (a MIG instance's jobs under its parent, with the instance's UUID)
  const jobs = (await resolveAgentAttribution(cfg).manifest?.jobsByGpu(cfg)) ?? new Map();
  for (const g of view) {
    for (const uuid of [g.uuid, ...g.mig.map((m) => m.uuid)]) {
      for (const a of jobs.get(uuid) ?? []) g.jobs.push(uuid === g.uuid ? a : { ...a, 'gpu.uuid': uuid });
    }
  }
  if (flags.json) {
    writeOut(JSON.stringify({ host: ctx.hostName, time: new Date().toISOString(), gpus: view, errors }, null, 2) + '\n');
  } else {
    // what is wrong first, where it is seen
    for (const e of errors) process.stderr.write(`l9gpu: ${e.plugin ? `${e.plugin}: ` : ''}${printable(e.error)}\n`);
    if (gpuPlugins.length === 0 && !shortfall) process.stderr.write('l9gpu: no GPU plugin is enabled or detected (see l9gpu doctor)\n');
    writeOut(renderGpuTable(printableDeep(view), colorOut()));
  }
  return shortfall || (errors.length && view.length === 0) ? 1 : 0;
}
