/**
 * The agent: builds attribution, the job ledger, sinks and plugin runners
 * from a Config and the manifests the composition root hands it, and keeps
 * them running; reload swaps only what changed, so a reload that leaves
 * [otlp] alone keeps its retry queue and connection. The job side (provider,
 * store, ledger, jobs socket) is job-attribution.ts.
 */
import type { Config } from '../src/core/config/load.js';
import { readSection } from '../src/core/config/read.js';
import { DAEMON_SECTION, readPluginCommon } from '../src/core/config/sections.js';
import { HEALTH_SECTION } from '../src/health/config.js';
import type { Logger } from '../src/core/log.js';
import type { Batch } from '../src/core/metrics/model.js';
import { pluginContext, type PluginContext, type PluginManifest } from '../src/core/plugin.js';
import { BudgetLedger } from '../src/core/limits.js';
import { resourceAttributes } from '../src/core/resource.js';
import type { Sink } from '../src/core/sink.js';
import { Pipeline } from '../src/pipeline/pipeline.js';
import { expectGpus, gpuShortfall } from './gpu-expectation.js';
import { PluginRunner } from './runner.js';
import { JobAttribution } from './job-attribution.js';
import { AUTO, selectPlugins, type Manifests } from './selection.js';
import { selfMetricsPlugin } from './self-metrics.js';
import { ClockWatch, formatStep, monoNow } from '../src/core/clock.js';

interface Held<T> {
  readonly item: T;
  /** The section's values when built: unchanged on reload means keep it. */
  readonly fingerprint: string;
}

/**
 * A reload's first half for sinks and runners alike: each held one no longer
 * wanted, or whose section changed since it was built, is forgotten and
 * stopped; the unchanged ones are kept as they are (a reload that leaves
 * [otlp] alone keeps its retry queue and connection). The caller then builds
 * the wanted ones it does not hold.
 */
async function dropChanged<T>(
  held: Map<string, Held<T>>,
  want: ReadonlySet<string>,
  fingerprint: (name: string) => string,
  stop: (item: T) => Promise<unknown>,
): Promise<void> {
  for (const [name, h] of [...held]) {
    if (!want.has(name) || h.fingerprint !== fingerprint(name)) {
      held.delete(name);
      await stop(h.item);
    }
  }
}

const SINK_RETRY_MS = [5_000, 15_000, 60_000];
/**
 * `plugins = auto`: a GPU plugin whose source did not answer (a driver that
 * loads after the daemon: boot order, a DKMS build fixed later, a driver
 * reload) is probed again 1 s, 2 s, 4 s ... after, then every 60 s, and
 * started when it answers: sampling begins within a minute of the driver.
 */
const REPROBE_FIRST_MS = 1000;
const REPROBE_MAX_MS = 60_000;

/** What `daemon --once` found wrong besides delivery: the plugins asked for that failed, and GPUs missing. */
export interface OnceProblems {
  /** Plugins named in [daemon] plugins or --plugin whose collection failed. */
  readonly failed: string[];
  /** Fewer GPUs read than the node must have ([daemon] expect_gpus, a driver installed): in words. */
  readonly shortfall: string | undefined;
}

export class Agent {
  private readonly runners = new Map<string, Held<PluginRunner>>();
  private readonly sinks = new Map<string, Held<Sink>>();
  private readonly pendingSinks = new Map<string, NodeJS.Timeout>();
  private selfRunner: PluginRunner | undefined;
  /** --once: plugins are made for one collection. */
  private oneShot = false;
  private pipeline: Pipeline;
  private running = false;
  readonly startTime = Date.now();
  private readonly startMono = monoNow();
  /** What local users' sources hit of the [limits] bounds, for the daemon's life (reloads keep the counts). */
  readonly budgets: BudgetLedger;
  /** The plugins running, with `auto` expanded (and those a later probe started). */
  get pluginNames(): string[] {
    return this.manifests.plugins.filter((p) => this.runners.has(p.name)).map((p) => p.name);
  }
  /** `auto` plugins whose source did not answer: the timer of their next probe. */
  private readonly absent = new Map<string, NodeJS.Timeout>();
  /** Bumped by every build and by stop: a probe answering after either is stale. */
  private probeGeneration = 0;
  /** --once: the physical GPUs (UUIDs) the plugins' points carried. */
  private readonly gpusRead = new Set<string>();

  constructor(
    private cfg: Config,
    private readonly log: Logger,
    private readonly manifests: Manifests,
    private readonly env: NodeJS.ProcessEnv = process.env,
    /** readOnlyJobs: another daemon owns the state folder (daemon --once beside it): its store is read, nothing of it written or served. */
    o: { readOnlyJobs?: boolean } = {},
  ) {
    this.pipeline = new Pipeline(log);
    this.budgets = new BudgetLedger(log.child('limits'));
    this.jobs = new JobAttribution({
      manifests,
      config: () => this.cfg,
      running: () => this.running,
      log,
      env,
      budgets: this.budgets,
      pipeline: this.pipeline,
      readOnly: o.readOnlyJobs ?? false,
    });
  }

  /** The attribution provider, the store and ledger on it, and the jobs socket. */
  private readonly jobs: JobAttribution;
  private healthKey = '';

  /** The health stage, rebuilt when [health] or the state folder changes (its Xid history is in the file it reloads). */
  private async buildHealth(): Promise<void> {
    const health = readSection(this.cfg, HEALTH_SECTION);
    const key = JSON.stringify([health, readSection(this.cfg, DAEMON_SECTION).state_dir]);
    if (key === this.healthKey) return;
    this.healthKey = key;
    if (!health.enabled) {
      this.pipeline.configure({ health: undefined });
      return;
    }
    const [{ HealthTracker }, { healthOptions }] = await Promise.all([
      import('../src/health/tracker.js'),
      import('../src/health/config.js'),
    ]);
    this.pipeline.configure({
      health: new HealthTracker({ ...healthOptions(this.cfg), persist: !this.oneShot }, this.log.child('health')),
    });
  }

  get config(): Config {
    return this.cfg;
  }

  /** Every sink section fingerprint also covers [daemon] resource keys: the resource is baked into sinks. */
  private fingerprint(section: string, c: Config = this.cfg): string {
    return JSON.stringify([c.section(section), resourceAttributes(c)]);
  }

  /**
   * The sinks `cfg` wants that are not held as they are (new, or their
   * section changed), made before anything of the running agent changes: a
   * sink that refuses its settings (a TLS file that cannot be read, a
   * web_config that does not parse) throws its ConfigError here, and a reload
   * keeps the running configuration whole.
   */
  private makeSinks(cfg: Config): Map<string, Sink> {
    const want = new Set(readSection(cfg, DAEMON_SECTION).sinks);
    const made = new Map<string, Sink>();
    for (const f of this.manifests.sinks) {
      if (!want.has(f.name)) continue;
      const held = this.sinks.get(f.name);
      if (held && held.fingerprint === this.fingerprint(f.name, cfg)) continue;
      made.set(
        f.name,
        f.create({ config: cfg, log: this.log.child(f.name), resource: resourceAttributes(cfg), startTime: this.startTime }),
      );
    }
    return made;
  }

  /** A plugin's own interval, else [daemon]'s (the plugin is known by its section's name: the common keys are typed). */
  private intervalMs(section: string): number {
    return (readPluginCommon(this.cfg, section).interval ?? readSection(this.cfg, DAEMON_SECTION).interval) * 1000;
  }

  private timeoutMs(section: string): number {
    const t = readPluginCommon(this.cfg, section).timeout;
    return t === null ? this.intervalMs(section) : t * 1000;
  }

  /** Builds sinks and runners for the current config (keeping unchanged ones); `made`: makeSinks(this.cfg). */
  private async build(made: Map<string, Sink>): Promise<void> {
    const cfg = this.cfg;
    await this.buildHealth();
    const daemon = readSection(cfg, DAEMON_SECTION);
    const wantSinks = new Set(daemon.sinks);
    await dropChanged(
      this.sinks,
      wantSinks,
      (n) => this.fingerprint(n),
      (s) => s.close(Date.now() + 2000),
    );
    for (const [name, t] of this.pendingSinks) {
      clearTimeout(t);
      this.pendingSinks.delete(name);
    }
    for (const [name, sink] of made) await this.startSink(name, sink, 0);

    const ctx: PluginContext = pluginContext(cfg, this.log, { oneShot: this.oneShot, budgets: this.budgets });
    // the earlier build's probes end here, before anything here waits: none may start a plugin this build is deciding on
    const gen = this.dropProbes();
    const selection = await selectPlugins(this.manifests, cfg, ctx);
    const again = this.oneShot ? '' : `; probed again, ${REPROBE_FIRST_MS / 1000} s doubling to every ${REPROBE_MAX_MS / 1000} s`;
    for (const f of this.manifests.plugins) {
      const r = selection.detected[f.name];
      if (!r) continue;
      if (r.ok) this.log.info('plugins = auto: enabled', { plugin: f.name, source: r.detail });
      // a vendor whose driver is installed and does not answer: its GPUs go unmonitored until it does
      else
        this.log[f.hardware?.installed(ctx) ? 'warn' : 'info'](`plugins = auto: not enabled${again}`, { plugin: f.name, source: r.detail });
    }
    const wantPlugins = new Set(selection.names);
    await dropChanged(
      this.runners,
      wantPlugins,
      (n) => this.fingerprint(n),
      (r) => r.stop(2000),
    );
    for (const f of this.manifests.plugins) if (wantPlugins.has(f.name) && !this.runners.has(f.name)) this.addRunner(f, ctx);
    if (!this.oneShot)
      for (const f of this.manifests.plugins) if (selection.detected[f.name]?.ok === false) this.probeLater(f, ctx, REPROBE_FIRST_MS, gen);

    await this.selfRunner?.stop(0);
    const interval = daemon.interval * 1000;
    this.selfRunner = new PluginRunner(
      'self',
      () =>
        selfMetricsPlugin(
          () => this.allRunners(),
          () => this.sinkList(),
          () => this.pipeline.attribution,
          this.budgets,
        ),
      interval,
      interval,
      (b) => this.pipeline.publish(b),
      this.log,
    );
    if (this.running) this.selfRunner.start();
    this.pipeline.configure({ sinks: this.sinkList() });
  }

  private addRunner(f: PluginManifest, ctx: PluginContext): void {
    const runner = new PluginRunner(
      f.name,
      () => f.create({ ...ctx, log: this.log.child(f.name) }),
      this.intervalMs(f.name),
      this.timeoutMs(f.name),
      this.publish,
      this.log,
    );
    this.runners.set(f.name, { item: runner, fingerprint: this.fingerprint(f.name) });
    if (this.running) runner.start();
  }

  /** The wall clock against the monotonic one: a step is said once, when the first batch after it comes. */
  private readonly clock = new ClockWatch();

  private readonly publish = (b: Batch): void => {
    const step = this.clock.check();
    if (step) {
      this.log.warn(
        `the wall clock stepped ${formatStep(step.stepMs)} (NTP or chrony stepping it, a VM ` +
          `migrated, the RTC set): collection goes on by the monotonic clock, points carry the new ` +
          `wall time, job durations come from the monotonic clock`,
        { step_s: Math.round(step.stepMs / 1000), now: new Date(step.wall).toISOString() },
      );
    }
    if (this.oneShot) {
      for (const p of b.points) {
        const uuid = p.attributes['gpu.uuid'];
        if (p.metric.scope === 'gpu' && typeof uuid === 'string' && p.attributes['gpu.mig.parent_uuid'] === undefined)
          this.gpusRead.add(uuid);
      }
    }
    this.pipeline.publish(b);
  };

  /** Ends the probes of absent `auto` plugins (a build or stop decides anew); returns the generation of the next ones. */
  private dropProbes(): number {
    for (const t of this.absent.values()) clearTimeout(t);
    this.absent.clear();
    return ++this.probeGeneration;
  }

  /** An `auto` plugin whose source did not answer, probed again after delayMs (doubling to REPROBE_MAX_MS) and started when it answers. */
  private probeLater(f: PluginManifest, ctx: PluginContext, delayMs: number, gen: number): void {
    const t = setTimeout(() => {
      void f
        .probe(ctx)
        .catch((e: Error) => ({ ok: false, detail: e.message }))
        .then((r) => {
          // a reload or a stop since: that build decides for itself
          if (gen !== this.probeGeneration || this.runners.has(f.name)) return;
          const next = Math.min(REPROBE_MAX_MS, delayMs * 2);
          if (!r.ok) {
            this.log.debug('plugins = auto: still not enabled', { plugin: f.name, source: r.detail, next_s: next / 1000 });
            return this.probeLater(f, ctx, next, gen);
          }
          this.absent.delete(f.name);
          this.log.info('plugins = auto: its source answers now: started', {
            plugin: f.name,
            source: r.detail,
            since_start_s: Math.round((monoNow() - this.startMono) / 1000),
          });
          this.addRunner(f, ctx);
        });
    }, delayMs);
    t.unref();
    this.absent.set(f.name, t);
  }

  /** A sink that cannot start (port in use) is left out and retried with backoff; the agent goes on. */
  private async startSink(name: string, sink: Sink, attempt: number): Promise<void> {
    try {
      await sink.start?.();
      this.sinks.set(name, { item: sink, fingerprint: this.fingerprint(name) });
      this.pipeline.configure({ sinks: this.sinkList() });
      if (attempt > 0) this.log.info('sink started', { sink: name, attempt: attempt + 1 });
    } catch (e) {
      const delay = SINK_RETRY_MS[Math.min(attempt, SINK_RETRY_MS.length - 1)]!;
      this.log.error('sink could not start: retrying', { sink: name, error: (e as Error).message, retry_in_s: delay / 1000 });
      sink.stats.errors++;
      const t = setTimeout(() => {
        this.pendingSinks.delete(name);
        void this.startSink(name, sink, attempt + 1);
      }, delay);
      t.unref();
      this.pendingSinks.set(name, t);
    }
  }

  private sinkList(): Sink[] {
    return [...this.sinks.values()].map((h) => h.item);
  }

  private allRunners(): PluginRunner[] {
    return [...[...this.runners.values()].map((h) => h.item), ...(this.selfRunner ? [this.selfRunner] : [])];
  }

  async start(): Promise<void> {
    const made = this.makeSinks(this.cfg);
    await this.jobs.init();
    await this.build(made);
    this.running = true;
    for (const r of this.allRunners()) r.start();
  }

  /**
   * --once: every enabled plugin once, then the self-metrics, then every sink
   * flushed. `undelivered`: the sinks that failed, when none delivered
   * anything (a cron job or a check must not read that as success).
   */
  async once(): Promise<{ blocked: string[]; undelivered: string[] } & OnceProblems> {
    this.oneShot = true;
    const made = this.makeSinks(this.cfg);
    await this.jobs.init();
    await this.build(made);
    await Promise.all([...this.runners.values()].map((h) => h.item.collectOnce()));
    await this.selfRunner!.collectOnce();
    const blocked = await this.stop();
    const sinks = this.sinkList();
    const failedSinks = sinks.filter((s) => s.stats.errors > 0 || s.stats.dropped > 0 || s.stats.queueBytes > 0).map((s) => s.name);
    const named = readSection(this.cfg, DAEMON_SECTION).plugins.filter((n) => n !== AUTO);
    const failed = named.filter((n) => (this.runners.get(n)?.item.stats.errors ?? 0) > 0);
    const expected = await expectGpus(this.manifests.plugins, pluginContext(this.cfg, this.log, { oneShot: true }));
    return {
      blocked,
      undelivered: sinks.some((s) => s.stats.exported > 0) ? [] : failedSinks,
      failed,
      shortfall: gpuShortfall(expected, this.gpusRead.size),
    };
  }

  /** Throws (a ConfigError) with nothing changed when a sink refuses the new settings. */
  async reload(cfg: Config): Promise<void> {
    const made = this.makeSinks(cfg);
    const prev = this.cfg;
    this.cfg = cfg;
    await this.jobs.reload(prev, cfg);
    await this.build(made);
  }

  /**
   * Stops collecting, then flushes and closes every sink within [daemon] shutdown_timeout.
   * Returns the plugins still stuck in a collection (the caller must not rely on a normal exit).
   */
  async stop(): Promise<string[]> {
    this.running = false;
    this.jobs.cancelRetry();
    this.dropProbes();
    const budget = readSection(this.cfg, DAEMON_SECTION).shutdown_timeout * 1000;
    const deadline = Date.now() + budget;
    // a hung plugin may hold its runner: give collections at most half the budget, keep the rest for delivery
    await Promise.all(this.allRunners().map((r) => r.stop(Math.min(2000, budget / 2))));
    for (const t of this.pendingSinks.values()) clearTimeout(t);
    this.pendingSinks.clear();
    await Promise.all(
      this.sinkList().map((s) =>
        s.close(deadline).catch((e: Error) => this.log.error('sink close failed', { sink: s.name, error: e.message })),
      ),
    );
    this.jobs.close();
    const blocked = this.allRunners()
      .filter((r) => r.blocked)
      .map((r) => r.name);
    if (blocked.length) this.log.warn('plugins still blocked in a collection at exit', { plugins: blocked.join(',') });
    return blocked;
  }
}
