/**
 * The health stage of the pipeline: from each batch's GPU points (any vendor:
 * gpu.lost, gpu.xid.errors, gpu.ecc.errors, remapped rows, retired pages, PCIe
 * replays, throttle causes) it keeps every physical GPU's HealthFacts,
 * judges them with rules.ts, emits gpu.health and gpu.health.score, and
 * writes the facts to <state_dir>/health.json for `l9gpu health`.
 *
 * Xid events are rises of the cumulative gpu.xid.errors count; they are kept
 * in the file across daemon restarts, so an Xid is not forgotten when the
 * agent restarts, and stop counting at a reboot, an admin's clear or the end
 * of the window (see state-file.ts xidSince).
 */
import type { Logger } from '../core/log.js';
import { identityOf } from '../core/gpu-identity.js';
import { makeDirs } from '../core/make-dirs.js';
import type { Attributes, Batch, Point } from '../core/metrics/model.js';
import { metric } from '../core/metrics/registry.js';
import { assess, type HealthFacts } from './rules.js';
import { bootTime, isForgotten, readClears, readHealthFile, writeHealthFile, xidSince, type Clears } from './state-file.js';
import { bootId, monoNow } from '../core/clock.js';

const HEALTH = metric('gpu.health');
const SCORE = metric('gpu.health.score');
export const HEALTH_METRICS = [HEALTH.name, SCORE.name];

export interface HealthOptions {
  stateDir: string;
  /** Read and write <state_dir>/health.json (not for a one-shot run: it would replace the running daemon's file). */
  persist?: boolean;
  xidWindowMs: number;
  trendWindowMs: number;
  replayWindowMs: number;
  throttleWindowMs: number;
}

/** At most this often the file is rewritten when nothing changed (its `written` time says the daemon is alive). */
const REFRESH_MS = 15_000;
const MAX_XID_EVENTS = 1000;
/** Lifetime ECC readings are kept at most this often (the trend window holds about 150 of them). */
const ECC_READING_MS = 10 * 60_000;

interface Track {
  facts: HealthFacts;
  identity: Attributes;
  xidPrev: Map<string, number>;
  replays: [number, number][];
  /** [ms, thermal, power brake] per collection: 1 active, 0 not, -1 not reported. */
  throttle: [number, number, number][];
}

export class HealthTracker {
  private readonly gpus = new Map<string, Track>();
  private readonly boot = bootTime();
  private lastWrite = 0;
  private lastText = '';
  private writeError = '';
  private clears: Clears = { xids: {}, forgotten: {} };
  private clearsRead = 0;

  constructor(
    private readonly o: HealthOptions,
    private readonly log: Logger,
  ) {
    if (o.persist === false) return;
    try {
      // what an earlier run knew: Xid events and the ECC trend go on from there
      for (const f of readHealthFile(o.stateDir)?.gpus ?? [])
        this.gpus.set(f.uuid, { facts: f, identity: {}, xidPrev: new Map(), replays: [], throttle: [] });
    } catch (e) {
      log.warn('health: the earlier health file is unreadable, starting afresh', { error: (e as Error).message });
    }
  }

  observe(batch: Batch): Point[] {
    const seen = new Set<string>();
    const points = batch.points;
    for (let i = 0; i < points.length; i++) {
      const p = points[i]!;
      if (p.metric.scope !== 'gpu') continue;
      const uuid = p.attributes['gpu.uuid'];
      if (typeof uuid !== 'string' || p.attributes['gpu.mig.parent_uuid'] !== undefined) continue;
      let t = this.gpus.get(uuid);
      if (!t) this.gpus.set(uuid, (t = { facts: blank(uuid), identity: {}, xidPrev: new Map(), replays: [], throttle: [] }));
      if (!seen.has(uuid)) {
        seen.add(uuid);
        this.begin(t, p.attributes, batch.time);
      }
      this.fold(t, p, batch.time);
    }
    if (seen.size === 0) return [];
    const now = batch.time;
    this.refreshClears();
    this.dropGone(seen);
    const out: Point[] = [];
    for (const uuid of seen) {
      const t = this.gpus.get(uuid)!;
      this.finish(t, now);
      const h = assess(t.facts, { now, xidSince: xidSince(uuid, now, this.o.xidWindowMs, this.boot, this.clears), missingBefore: null });
      const reason = h.findings
        .filter((f) => f.severity > 0)
        .map((f) => f.code)
        .join(',');
      out.push(
        { metric: HEALTH, value: h.state, attributes: { ...t.identity, 'gpu.health.reason': reason } },
        { metric: SCORE, value: h.score, attributes: t.identity },
      );
    }
    this.save(batch);
    return out;
  }

  /** A GPU's first point of a batch: its identity, and the readings that are absent unless this batch says otherwise. */
  private begin(t: Track, a: Attributes, now: number): void {
    t.identity = identityOf(a);
    t.facts.seen = now;
    t.facts.index = typeof a['gpu.index'] === 'number' ? a['gpu.index'] : t.facts.index;
    t.facts.model = typeof a['gpu.model'] === 'string' ? a['gpu.model'] : t.facts.model;
    if (typeof a['gpu.pci.bus_id'] === 'string' && a['gpu.pci.bus_id']) t.facts.pci = a['gpu.pci.bus_id'];
    // readings of the state now: what this batch does not carry is not reported (null), not kept from before
    Object.assign(t.facts, {
      lost: false,
      eccUncorrectedVolatile: null,
      remapPending: null,
      remapFailed: null,
      retiredPages: null,
      retirePending: null,
    });
  }

  private fold(t: Track, p: Point, now: number): void {
    const f = t.facts;
    const a = p.attributes;
    switch (p.metric.name) {
      case 'gpu.lost':
        f.lost = p.value === 1;
        break;
      case 'gpu.xid.errors': {
        const code = String(a['gpu.xid.code']);
        const prev = t.xidPrev.get(code) ?? 0;
        // the count runs from the agent's start: a first reading is that many new events; a lower one, a restarted count
        const rise = p.value >= prev ? p.value - prev : p.value;
        t.xidPrev.set(code, p.value);
        if (rise > 0 && Number.isInteger(Number(code))) f.xids.push({ code: Number(code), time: now, n: rise });
        break;
      }
      case 'gpu.ecc.errors':
        if (a['error.type'] !== 'uncorrected') break;
        if (a['gpu.ecc.scope'] === 'volatile') f.eccUncorrectedVolatile = p.value;
        else if (a['gpu.ecc.scope'] === 'aggregate') addReading((f.eccAggregate ??= []), now, p.value, ECC_READING_MS);
        break;
      case 'gpu.memory.remap.pending':
        f.remapPending = p.value === 1;
        break;
      case 'gpu.memory.remap.failed':
        f.remapFailed = p.value === 1;
        break;
      case 'gpu.memory.retired_pages':
        // one point per cause, summed
        f.retiredPages = (f.retiredPages ?? 0) + p.value;
        break;
      case 'gpu.memory.retirement.pending':
        f.retirePending = p.value === 1;
        break;
      case 'gpu.pcie.replays':
        t.replays.push([now, p.value]);
        break;
      case 'gpu.throttle.active': {
        const cause = a['gpu.throttle.cause'];
        if (cause !== 'thermal' && cause !== 'power_brake') break;
        let last = t.throttle[t.throttle.length - 1];
        if (!last || last[0] !== now) t.throttle.push((last = [now, -1, -1]));
        last[cause === 'thermal' ? 1 : 2] = p.value ? 1 : 0;
        break;
      }
    }
  }

  /** The windowed figures, once a batch's points are folded. */
  private finish(t: Track, now: number): void {
    const f = t.facts;
    const o = this.o;
    const keepFrom = (w: number) => now - w;
    t.replays = t.replays.filter(([ts]) => ts >= keepFrom(o.replayWindowMs));
    const r0 = t.replays[0];
    const r1 = t.replays[t.replays.length - 1];
    // a counter that went down (a reset) gives no rate until it has two readings again
    f.pcieReplaysPerMin = r0 && r1 && r1[0] > r0[0] && r1[1] >= r0[1] ? ((r1[1] - r0[1]) / (r1[0] - r0[0])) * 60_000 : null;
    if (r0 && r1 && r1[1] < r0[1]) t.replays = [r1];
    t.throttle = t.throttle.filter(([ts]) => ts >= keepFrom(o.throttleWindowMs));
    f.thermalShare = share(t.throttle, 1);
    f.powerBrakeShare = share(t.throttle, 2);
    if (f.eccAggregate) {
      f.eccAggregate = f.eccAggregate.filter(([ts], i, all) => ts >= keepFrom(o.trendWindowMs) || i === all.length - 1);
      const vals = f.eccAggregate.map(([, v]) => v);
      f.eccUncorrectedRise = vals.length > 1 ? Math.max(0, vals[vals.length - 1]! - Math.min(...vals)) : 0;
    }
    const oldest = now - Math.max(o.xidWindowMs, 0);
    f.xids = f.xids.filter((e) => e.time > oldest).slice(-MAX_XID_EVENTS);
  }

  /**
   * GPUs gone for good, whose findings end (else they stay missing, failed, for ever): one whose
   * PCI slot a collection now finds another UUID in (an RMA swap), and one an admin cleared while
   * it was missing (removed, or no longer monitored).
   */
  private dropGone(seen: ReadonlySet<string>): void {
    const slots = new Map<string, string>();
    for (const uuid of seen) {
      const pci = this.gpus.get(uuid)!.facts.pci;
      if (pci) slots.set(pci, uuid);
    }
    for (const [uuid, t] of this.gpus) {
      if (seen.has(uuid)) continue;
      const successor = t.facts.pci ? slots.get(t.facts.pci) : undefined;
      if (successor)
        this.log.info('health: another GPU is in the PCI slot of one no longer collected: that one was replaced, its findings end', {
          slot: t.facts.pci,
          gone: uuid,
          now: successor,
        });
      else if (isForgotten(t.facts, this.clears))
        this.log.info('health: forgetting a GPU an admin cleared while it was missing', { gpu: uuid });
      else continue;
      this.gpus.delete(uuid);
    }
  }

  private refreshClears(): void {
    const now = monoNow();
    if (this.clearsRead && now - this.clearsRead < 5_000) return;
    this.clearsRead = now;
    try {
      this.clears = readClears(this.o.stateDir);
    } catch (e) {
      this.log.once(`clears-${(e as Error).message}`, 'warn', 'health: cannot read the clears file; Xid events are not cleared', {
        error: (e as Error).message,
      });
    }
  }

  private save(batch: Batch): void {
    if (this.o.persist === false) return;
    const gpus = [...this.gpus.values()].map((t) => t.facts);
    // a new collection time alone is no change: the refresh writes it
    const text = JSON.stringify(gpus, (k, v: unknown) => (k === 'seen' ? undefined : v));
    const mono = batch.mono ?? monoNow();
    if (text === this.lastText && mono - this.lastWrite < REFRESH_MS) return;
    try {
      if (!this.lastWrite) makeDirs(this.o.stateDir);
      // the monotonic time and boot let a reader judge the file's age when the wall clock stepped since
      writeHealthFile(this.o.stateDir, { written: batch.time, written_mono: mono, boot: bootId(), interval_ms: batch.intervalMs, gpus });
      this.lastText = text;
      this.lastWrite = mono;
      if (this.writeError) this.log.info('health: writing the health file again');
      this.writeError = '';
    } catch (e) {
      const msg = (e as Error).message;
      if (msg !== this.writeError)
        this.log.error('health: cannot write the health file: `l9gpu health` reports from the last one written', { error: msg });
      this.writeError = msg;
    }
  }
}

/** The share of the reported readings in column i that were active; null when none was reported. */
function share(rows: readonly [number, number, number][], i: 1 | 2): number | null {
  let n = 0;
  let on = 0;
  for (const r of rows) {
    if (r[i] < 0) continue;
    n++;
    on += r[i];
  }
  return n ? on / n : null;
}

function addReading(list: [number, number][], now: number, v: number, every: number): void {
  const last = list[list.length - 1];
  if (last && last[1] === v && now - last[0] < every) return;
  list.push([now, v]);
}

function blank(uuid: string): HealthFacts {
  return {
    uuid,
    index: null,
    model: null,
    seen: 0,
    lost: false,
    xids: [],
    eccUncorrectedVolatile: null,
    eccUncorrectedRise: null,
    remapPending: null,
    remapFailed: null,
    retiredPages: null,
    retirePending: null,
    pcieReplaysPerMin: null,
    thermalShare: null,
    powerBrakeShare: null,
  };
}
