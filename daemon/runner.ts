/**
 * Runs one plugin on its own interval. Ticks never overlap: while a
 * collection is in flight the next ticks are skipped and counted. A throwing
 * plugin is counted and retried next tick; a hung one is counted once at its
 * timeout and its late result discarded. Plugin creation happens here too, so
 * a source that is missing at boot (driver not loaded yet) is retried.
 */
import { monoNow } from '../src/core/clock.js';
import type { Logger } from '../src/core/log.js';
import { PointBuffer, type Batch } from '../src/core/metrics/model.js';
import type { Plugin } from '../src/core/plugin.js';

/** How late a collection may start and still be stamped with its slot: a tenth of the interval, 50 ms at most. */
export function slotTolerance(intervalMs: number): number {
  return Math.min(50, intervalMs / 10);
}

/**
 * The times a runner stamps its collections with. One that starts within slotTolerance() of its slot is stamped with
 * the slot's wall time, as Prometheus aligns its scrape timestamps; the slots are whole intervals apart on the monotonic
 * clock, and so are their stamps: each is the wall time of one anchor slot plus the monotonic time since it, not
 * Date.now() less the delay, whose truncation to the millisecond would put on-time neighbours 1 ms off the interval as
 * often as on it. The anchor is taken again when that drifts more than 2 ms from Date.now()'s reading (the wall clock
 * slewed or stepped). A later start is stamped when it ran: its readings (an energy counter) belong to that time.
 */
export class SlotStamps {
  private anchor: { wall: number; mono: number } | undefined;

  constructor(private readonly intervalMs: number) {}

  /** started: monotonic ms when the collection began; wall: Date.now() then. */
  stamp(slot: number, started: number, wall: number): { time: number; mono: number } {
    if (started - slot > slotTolerance(this.intervalMs)) return { time: wall, mono: started };
    const atSlot = wall - (started - slot);
    const a = this.anchor;
    if (a) {
      const time = Math.round(a.wall + (slot - a.mono));
      if (Math.abs(time - atSlot) <= 2) return { time, mono: slot };
    }
    this.anchor = { wall: Math.round(atSlot), mono: slot };
    return { time: this.anchor.wall, mono: slot };
  }
}

export class CollectorStats {
  runs = 0;
  points = 0;
  errors = 0;
  skipped = 0;
  lastDurationS = 0;
  lastError: string | undefined;
}

export class PluginRunner {
  readonly stats = new CollectorStats();
  private plugin: Plugin | undefined;
  /** The plugin's own work: settles only when the plugin returns, even after a timeout. */
  private work: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private failing = false;
  private readonly stamps: SlotStamps;
  /** Metrics and fields whose skipped values were said (once each). */
  private readonly saidSkipped = new Set<string>();

  constructor(
    readonly name: string,
    private readonly create: () => Plugin | Promise<Plugin>,
    readonly intervalMs: number,
    readonly timeoutMs: number,
    private readonly publish: (b: Batch) => void,
    private readonly log: Logger,
  ) {
    this.stamps = new SlotStamps(intervalMs);
  }

  /** True while the plugin has not returned from a collection (it may be stuck in a blocking call). */
  get blocked(): boolean {
    return this.work !== undefined;
  }

  private sayOnce(key: string, msg: string, fields: Record<string, string | number | boolean>): void {
    if (this.saidSkipped.has(key)) return;
    this.saidSkipped.add(key);
    this.log.warn(msg, { plugin: this.name, ...fields });
  }

  start(): void {
    const slot = monoNow();
    void this.collectOnce(slot);
    this.schedule(slot + this.intervalMs);
  }

  /**
   * Drift-free: ticks land on start + k * interval; a late timer skips the
   * slots it missed. On the monotonic clock: a step of the wall clock (NTP at
   * boot, a VM migrated) moves no tick.
   */
  private schedule(next: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(
      () => {
        void this.collectOnce(next);
        let n = next + this.intervalMs;
        const now = monoNow();
        if (n <= now) n += Math.ceil((now - n) / this.intervalMs) * this.intervalMs;
        this.schedule(n);
      },
      Math.max(0, next - monoNow()),
    );
  }

  /**
   * One collection, published unless it failed or outlived its timeout.
   * Resolves when the collection ends or times out, whichever is first; while
   * the plugin has not returned, further calls are skipped and counted.
   *
   * Its stamp (SlotStamps): on-time collections are whole intervals apart to
   * the millisecond, so the most frequent gap PromQL sees is the configured
   * interval and its cap on covered time (src/figures/gap-cap.ts) is the
   * store's: the two sources fold the same gaps into the same seconds
   * (docs/jobs.md, "Two sources, one figure").
   */
  collectOnce(slot = monoNow()): Promise<void> {
    if (this.work) {
      this.stats.skipped++;
      this.log.debug('tick skipped: previous collection still running', { plugin: this.name, skipped: this.stats.skipped });
      return Promise.resolve();
    }
    const started = monoNow();
    let { time, mono } = this.stamps.stamp(slot, started, Date.now());
    const ac = new AbortController();
    let timedOut = false;
    let release!: () => void;
    const done = new Promise<void>((r) => (release = r));
    const timeout = setTimeout(() => {
      timedOut = true;
      this.stats.errors++;
      this.stats.lastError = `collection exceeded its ${this.timeoutMs / 1000}s timeout`;
      this.log.warn('collection timed out: its ticks are skipped until it returns', {
        plugin: this.name,
        timeout_s: this.timeoutMs / 1000,
      });
      ac.abort(new Error('timeout'));
      release();
    }, this.timeoutMs);
    const buf = new PointBuffer();
    this.work = (async () => {
      try {
        if (!this.plugin) {
          this.plugin = await this.create();
          time = Date.now(); // a cumulative series' start (set at creation) must not be after its first point
          mono = monoNow();
        }
        buf.time = time;
        await this.plugin.collect(buf, ac.signal);
        if (timedOut) return; // late results are stale: dropped (the timeout was counted)
        this.stats.runs++;
        this.stats.points += buf.points.length;
        // the field alone is skipped (its other fields and GPUs go on), said once per metric or field
        for (const [metric, r] of buf.rejected)
          this.sayOnce(metric, 'value out of range: skipped', { metric, value: r.value, gpu: r.attributes['gpu.uuid'] ?? '' });
        for (const [field, why] of buf.unread) this.sayOnce(field, 'field not readable: skipped', { field, error: why });
        if (this.failing) {
          this.failing = false;
          this.log.info('plugin recovered', { plugin: this.name });
        }
        this.publish({ source: this.name, time, mono, intervalMs: this.intervalMs, points: buf.points });
      } catch (e) {
        if (timedOut) return;
        const msg = (e as Error)?.message ?? String(e);
        this.stats.errors++;
        // one line per distinct failure, not one per tick
        if (!this.failing || msg !== this.stats.lastError) this.log.error('collection failed', { plugin: this.name, error: msg });
        this.failing = true;
        this.stats.lastError = msg;
      } finally {
        clearTimeout(timeout);
        this.stats.lastDurationS = (monoNow() - started) / 1000;
      }
    })().finally(() => {
      this.work = undefined;
      release();
    });
    return done;
  }

  /** Stops ticking and waits (up to waitMs) for a collection in flight, then closes the plugin. */
  async stop(waitMs: number): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    if (this.work) {
      let t: NodeJS.Timeout | undefined;
      await Promise.race([this.work, new Promise<void>((r) => (t = setTimeout(r, Math.max(0, waitMs))))]);
      clearTimeout(t);
    }
    if (this.work) return; // still hung: closing under it could crash a native binding
    try {
      await this.plugin?.close?.();
    } catch (e) {
      this.log.warn('plugin close failed', { plugin: this.name, error: (e as Error).message });
    }
  }
}
