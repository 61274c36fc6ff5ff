/**
 * OTLP/HTTP protobuf: batches -> ExportMetricsServiceRequest bytes, written
 * here rather than by @opentelemetry/otlp-transformer, whose generated
 * protobufjs code and the SDK under it cost the daemon ~9 MB of heap (and
 * ~15 MB at start-up) to write a handful of message types. The messages and
 * field numbers are opentelemetry-proto's (metrics/v1, common/v1,
 * resource/v1, collector/metrics/v1); what a point becomes is what
 * resource-metrics.ts gives the OpenTelemetry serializers (one Metric per
 * registry metric, gauges, cumulative sums and histograms, double values,
 * integer attributes as int_value), and test/system/sinks.test.ts decodes both with
 * an independent decoder and compares them.
 */
import { ByteBuffer } from '../core/byte-buffer.js';
import { isStable, type Attributes, type AttributeValue, type Batch, type HistogramValue, type Point } from '../core/metrics/model.js';
import type { MetricDef } from '../core/metrics/registry.js';

const CUMULATIVE = 2;

/** Bytes a varint of v takes. */
function varintSize(v: number): number {
  let n = 1;
  for (; v > 0x7f; v = Math.floor(v / 128)) n++;
  return n;
}

/**
 * A protobuf writer. A nested message is opened with begin() and closed with
 * end(): begin() reserves the bytes its length will likely take, end() writes
 * the length and moves the body only when the guess was wrong (rare: the
 * guesses fit the messages this encoder writes), so no closure and no copy
 * per message.
 */
class Writer extends ByteBuffer {
  varint(v: number): void {
    this.room(10);
    while (v > 0x7f) {
      this.buf[this.pos++] = (v & 0x7f) | 0x80;
      v = Math.floor(v / 128);
    }
    this.buf[this.pos++] = v;
  }

  tag(field: number, wire: number): void {
    this.varint((field << 3) | wire);
  }

  string(field: number, s: string): void {
    // ASCII (nearly every key and value here): its length is its byte length, no UTF-8 measuring
    const n = /^[\x00-\x7f]*$/.test(s) ? s.length : Buffer.byteLength(s);
    this.tag(field, 2);
    this.varint(n);
    this.room(n);
    this.pos += this.buf.write(s, this.pos, n === s.length ? 'latin1' : 'utf8');
  }

  double(field: number, v: number): void {
    this.tag(field, 1);
    this.room(8);
    this.pos = this.buf.writeDoubleLE(v, this.pos);
  }

  /** A fixed64 of a whole number up to 2^53, without BigInt (a fraction is cut, as the OpenTelemetry serializer cuts it). */
  fixed64(v: number): void {
    this.room(8);
    this.buf.writeUInt32LE(v >>> 0, this.pos);
    this.buf.writeUInt32LE((v / 0x100000000) >>> 0, this.pos + 4);
    this.pos += 8;
  }

  int64(field: number, v: number): void {
    if (v >= 0 && v <= Number.MAX_SAFE_INTEGER) {
      // the common case (indices, ids, ports) without BigInt
      this.tag(field, 0);
      this.varint(v);
      return;
    }
    this.tag(field, 0);
    // two's complement for negatives, as protobuf's int64 varint
    let x = BigInt.asUintN(64, BigInt(v));
    this.room(10);
    while (x > 0x7fn) {
      this.buf[this.pos++] = Number(x & 0x7fn) | 0x80;
      x >>= 7n;
    }
    this.buf[this.pos++] = Number(x);
  }

  /** Opens a length-delimited field; `guess`: the bytes its length likely takes. Returns what end() needs. */
  begin(field: number, guess: number): number {
    this.tag(field, 2);
    this.room(guess);
    const at = this.pos;
    this.pos += guess;
    return at * 8 + guess;
  }

  end(mark: number): void {
    const guess = mark % 8;
    const at = (mark - guess) / 8;
    const len = this.pos - at - guess;
    const n = varintSize(len);
    if (n !== guess) {
      this.room(n - guess);
      this.buf.copy(this.buf, at + n, at + guess, this.pos);
      this.pos += n - guess;
    }
    let v = len;
    for (let i = 0; i < n; i++) {
      this.buf[at + i] = i < n - 1 ? (v & 0x7f) | 0x80 : v;
      v = Math.floor(v / 128);
    }
  }
}

/** ms since the epoch (fractions kept to the ns) -> ns, exactly. */
function nanos(ms: number): bigint {
  const whole = Math.floor(ms);
  return BigInt(whole) * 1_000_000n + BigInt(Math.round((ms - whole) * 1e6));
}

const EMPTY = Buffer.alloc(0);

/**
 * A point's start_time_unix_nano (field 2) and time_unix_nano (3) fields of
 * ms as ns, tag and 8 bytes, each computed once per distinct time of a
 * request. The last of each is compared first: a batch's points share their
 * times, and a lookup by a time (a double, boxed to be a key) is a small
 * object a point.
 */
class TimeFields {
  private readonly cache = new Map<number, Buffer>();
  private startMs = NaN;
  private startBytes: Buffer = EMPTY;
  private endMs = NaN;
  private endBytes: Buffer = EMPTY;

  start(ms: number): Buffer {
    if (ms !== this.startMs) {
      this.startBytes = this.field(2, ms);
      this.startMs = ms;
    }
    return this.startBytes;
  }

  end(ms: number): Buffer {
    if (ms !== this.endMs) {
      this.endBytes = this.field(3, ms);
      this.endMs = ms;
    }
    return this.endBytes;
  }

  private field(field: number, ms: number): Buffer {
    const key = ms * 16 + field;
    let b = this.cache.get(key);
    if (!b) {
      b = Buffer.allocUnsafe(9);
      b[0] = (field << 3) | 1;
      b.writeBigUInt64LE(nanos(ms), 1);
      this.cache.set(key, b);
    }
    return b;
  }
}

function anyValue(w: Writer, v: AttributeValue): void {
  if (typeof v === 'string') w.string(1, v);
  else if (typeof v === 'boolean') {
    w.tag(2, 0);
    w.varint(v ? 1 : 0);
  } else if (Number.isInteger(v)) w.int64(3, v);
  else w.double(4, v);
}

/**
 * The encoded KeyValue of each (key, value) seen lately: a daemon sends the
 * same few hundred attribute pairs every interval, so an attribute is a map
 * lookup and a copy. Bounded: pairs up to KV_CACHE_LONGEST bytes, cleared
 * when it holds KV_CACHE_MAX of them (2 MiB at most).
 */
const KV_CACHE_MAX = 8192;
const KV_CACHE_LONGEST = 256;
const kvCache = new Map<string, Map<AttributeValue, Buffer>>();
let kvCached = 0;
const scratch = new Writer(1024);

function keyValueBytes(k: string, v: AttributeValue): Buffer {
  let byValue = kvCache.get(k);
  let b = byValue?.get(v);
  if (b) return b;
  if (kvCached >= KV_CACHE_MAX) {
    kvCache.clear();
    kvCached = 0;
    byValue = undefined;
  }
  if (!byValue) kvCache.set(k, (byValue = new Map()));
  scratch.reset();
  scratch.string(1, k);
  const m = scratch.begin(2, 1);
  anyValue(scratch, v);
  scratch.end(m);
  b = scratch.bytes();
  // a long value (a job name, a command line) is written each time: the cache stays a few hundred KiB at most
  if (b.length > KV_CACHE_LONGEST) return b;
  byValue.set(v, b);
  kvCached++;
  return b;
}

function keyValues(w: Writer, field: number, a: Attributes): void {
  for (const k in a) {
    const kv = keyValueBytes(k, a[k]!);
    w.tag(field, 2);
    w.varint(kv.length);
    w.raw(kv);
  }
}

/**
 * The encoded attributes of stable attributes (an engine's series: the same
 * object every interval), field by field (7: a number point's, 9: a
 * histogram point's): a copy per point instead of a lookup per attribute.
 */
const blocks = new Map<number, WeakMap<Attributes, Buffer>>([
  [7, new WeakMap()],
  [9, new WeakMap()],
]);
const block = new Writer(1024);

function pointAttributes(w: Writer, field: number, a: Attributes): void {
  if (!isStable(a)) return keyValues(w, field, a);
  const kept = blocks.get(field)!;
  let b = kept.get(a);
  if (!b) {
    block.reset();
    keyValues(block, field, a);
    kept.set(a, (b = block.bytes()));
  }
  w.raw(b);
}

/**
 * HistogramDataPoint { start_time_unix_nano 2, time_unix_nano 3, count 4
 * (fixed64), sum 5, bucket_counts 6 (packed fixed64), explicit_bounds 7
 * (packed double), attributes 9 }, in the OpenTelemetry serializer's order.
 * The packed fields' lengths are known (8 bytes an element): no begin/end.
 */
function histogramFields(w: Writer, h: HistogramValue): void {
  w.tag(4, 1);
  w.fixed64(h.count);
  w.double(5, h.sum);
  w.tag(6, 2);
  w.varint(h.counts.length * 8);
  for (let i = 0; i < h.counts.length; i++) w.fixed64(h.counts[i]!);
  if (h.bounds.length > 0) {
    w.tag(7, 2);
    w.varint(h.bounds.length * 8);
    w.room(h.bounds.length * 8);
    for (let i = 0; i < h.bounds.length; i++) w.pos = w.buf.writeDoubleLE(h.bounds[i]!, w.pos);
  }
}

/** The request of the batches, as a Buffer of its own. */
export function encodeMetricsRequest(batches: readonly Batch[], resource: Attributes, defaultStart: number, scopeVersion: string): Buffer {
  return encodeMetricsRequestWith(batches, resource, defaultStart, scopeVersion, (bytes) => Buffer.from(bytes));
}

/** One writer for every request: encoding is synchronous, and a request's bytes are taken before the next. Up to 4 MiB kept. */
const request = new Writer(64 * 1024, 4 << 20);

/**
 * A request's points by metric, in batch order, as lists linked through
 * arrays used again from request to request (a request of thousands of points
 * makes no object a point): point g is points[g], of a batch of time ends[g],
 * and the next point of its metric is next[g] (-1: none).
 */
const order = { points: [] as (Point | undefined)[], ends: new Float64Array(1024), next: new Int32Array(1024) };

function ordered(g: number, p: Point, end: number): void {
  if (g === order.next.length) {
    const ends = new Float64Array(g * 2);
    ends.set(order.ends);
    const next = new Int32Array(g * 2);
    next.set(order.next);
    order.ends = ends;
    order.next = next;
  }
  order.points[g] = p;
  order.ends[g] = end;
  order.next[g] = -1;
}

/**
 * The request of the batches, handed to `take` as a view of a buffer written
 * over by the next request (take copies it, or compresses it): no buffer per
 * request besides what take makes.
 */
export function encodeMetricsRequestWith<T>(
  batches: readonly Batch[],
  resource: Attributes,
  defaultStart: number,
  scopeVersion: string,
  take: (bytes: Buffer) => T,
): T {
  // one Metric per registry metric, its points in batch order (the first and last of each, linked through `order`)
  const byMetric = new Map<MetricDef, { first: number; last: number }>();
  let n = 0;
  for (const b of batches) {
    for (let i = 0; i < b.points.length; i++) {
      const p = b.points[i]!;
      // a histogram metric's point without buckets is a plugin's mistake, not a histogram: left out, as by every sink
      if (p.metric.kind === 'histogram' && !p.hist) continue;
      ordered(n, p, b.time);
      const m = byMetric.get(p.metric);
      if (m) {
        order.next[m.last] = n;
        m.last = n;
      } else byMetric.set(p.metric, { first: n, last: n });
      n++;
    }
  }
  try {
    return writeRequest(byMetric, resource, defaultStart, scopeVersion, take);
  } finally {
    // the points are not held until the next request
    order.points.fill(undefined, 0, n);
  }
}

function writeRequest<T>(
  byMetric: Map<MetricDef, { first: number }>,
  resource: Attributes,
  defaultStart: number,
  scopeVersion: string,
  take: (bytes: Buffer) => T,
): T {
  const times = new TimeFields();
  const w = request;
  w.reset();
  const rm = w.begin(1, 3);
  const res = w.begin(1, 1);
  keyValues(w, 1, resource);
  // dropped_attributes_count = 0, written as the OpenTelemetry serializer writes it
  w.tag(2, 0);
  w.varint(0);
  w.end(res);
  const sm = w.begin(2, 3);
  const scope = w.begin(1, 1);
  w.string(1, 'l9gpu');
  w.string(2, scopeVersion);
  w.end(scope);
  const { points, ends, next } = order;
  for (const [def, { first }] of byMetric) {
    const metric = w.begin(2, 2);
    w.string(1, def.name);
    w.string(2, def.description);
    if (def.unit) w.string(3, def.unit);
    const hist = def.kind === 'histogram';
    const gauge = def.kind === 'gauge';
    const data = w.begin(gauge ? 5 : hist ? 9 : 7, 2);
    for (let g = first; g !== -1; g = next[g]!) {
      const p = points[g]!;
      const end = ends[g]!;
      const point = w.begin(1, 2);
      // gauges: start = end (OTLP ignores it); sums and histograms: the series' start
      w.raw(times.start(gauge ? end : (p.start ?? defaultStart)));
      w.raw(times.end(end));
      if (hist) {
        histogramFields(w, p.hist!);
        pointAttributes(w, 9, p.attributes);
      } else {
        w.double(4, p.value);
        pointAttributes(w, 7, p.attributes);
      }
      w.end(point);
    }
    if (def.kind !== 'gauge') {
      w.tag(2, 0);
      w.varint(CUMULATIVE);
      if (def.kind === 'sum') {
        w.tag(3, 0);
        w.varint(1);
      }
    }
    w.end(data);
    w.end(metric);
  }
  w.end(sm);
  w.end(rm);
  const out = take(w.buf.subarray(0, w.pos));
  w.reset();
  return out;
}

/**
 * ExportMetricsServiceResponse { ExportMetricsPartialSuccess partial_success = 1 }
 * with { int64 rejected_data_points = 1; string error_message = 2 }: what a
 * backend refused of a request it accepted. Unknown fields are skipped.
 */
export function decodeExportResponse(b: Uint8Array): { rejected: number; message?: string } {
  let pos = 0;
  const fail = (what: string): never => {
    throw new Error(`OTLP response: ${what} at byte ${pos} of ${b.length}`);
  };
  const varint = (end: number): number => {
    let v = 0;
    let mul = 1;
    // a varint has at most 10 bytes (64 bits): more is no protobuf, and would overflow to Infinity
    const lim = Math.min(end, b.length);
    for (let i = 0; i < 10 && pos < lim; i++) {
      const c = b[pos++]!;
      v += (c & 0x7f) * mul;
      if (c < 0x80) return v;
      mul *= 128;
    }
    return fail(pos < lim ? 'a varint longer than 10 bytes' : 'a truncated varint');
  };
  const skip = (wire: number, end: number): void => {
    if (wire === 0) varint(end);
    else if (wire === 1) pos += 8;
    else if (wire === 2) pos += varint(end);
    else if (wire === 5) pos += 4;
    else fail(`wire type ${wire}`);
  };
  const out: { rejected: number; message?: string } = { rejected: 0 };
  while (pos < b.length) {
    const key = varint(b.length);
    if (key >> 3 !== 1 || (key & 7) !== 2) {
      skip(key & 7, b.length);
      continue;
    }
    const end = pos + varint(b.length);
    while (pos < end) {
      const k = varint(end);
      if (k >> 3 === 1 && (k & 7) === 0) out.rejected = varint(end);
      else if (k >> 3 === 2 && (k & 7) === 2) {
        const n = varint(end);
        out.message = Buffer.from(b.subarray(pos, pos + n)).toString('utf8');
        pos += n;
      } else skip(k & 7, end);
    }
  }
  if (pos > b.length) fail('a truncated message');
  return out;
}
