/**
 * OTLP/HTTP protobuf: batches -> ExportMetricsServiceRequest bytes, written
 * here rather than by @opentelemetry/otlp-transformer, whose generated
 * protobufjs code and the SDK under it cost the daemon ~9 MB of heap (and
 * ~15 MB at start-up) to write a handful of message types. The messages and
 * field numbers are opentelemetry-proto's (metrics/v1, common/v1,
 * resource/v1, collector/metrics/v1); what a point becomes is what
 * resource-metrics.ts gives the OpenTelemetry serializers (one Metric per
 * registry metric, gauges, cumulative sums, double values, integer
 * attributes as int_value), and test/sinks.test.ts decodes both with an
 * independent decoder and compares them.
 */
import type { Attributes, AttributeValue, Batch } from '../core/metrics/model.js';
import type { MetricDef } from '../core/metrics/registry.js';

const CUMULATIVE = 2;

/** A protobuf writer: varints, fixed64, doubles, strings, and nested messages measured before they are written. */
class Writer {
  private buf = Buffer.allocUnsafe(64 * 1024);
  pos = 0;

  private room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

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

  fixed64(field: number, v: bigint): void {
    this.tag(field, 1);
    this.room(8);
    this.pos = this.buf.writeBigUInt64LE(v, this.pos);
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

  /** A length-delimited field whose body body() writes: the length is back-filled (5 bytes reserved, shifted after). */
  message(field: number, body: () => void): void {
    this.tag(field, 2);
    this.room(5);
    const at = this.pos;
    this.pos += 5;
    body();
    const len = this.pos - at - 5;
    let n = 1;
    for (let v = len; v > 0x7f; v = Math.floor(v / 128)) n++;
    if (n < 5) this.buf.copy(this.buf, at + n, at + 5, this.pos);
    this.pos -= 5 - n;
    let v = len;
    for (let i = 0; i < n; i++) {
      this.buf[at + i] = i < n - 1 ? (v & 0x7f) | 0x80 : v;
      v = Math.floor(v / 128);
    }
  }

  bytes(): Buffer {
    return Buffer.from(this.buf.subarray(0, this.pos));
  }
}

/** ms since the epoch (fractions kept to the ns) -> ns, exactly. */
function nanos(ms: number): bigint {
  const whole = Math.floor(ms);
  return BigInt(whole) * 1_000_000n + BigInt(Math.round((ms - whole) * 1e6));
}

function anyValue(w: Writer, v: AttributeValue): void {
  if (typeof v === 'string') w.string(1, v);
  else if (typeof v === 'boolean') {
    w.tag(2, 0);
    w.varint(v ? 1 : 0);
  } else if (Number.isInteger(v)) w.int64(3, v);
  else w.double(4, v);
}

function keyValues(w: Writer, field: number, a: Attributes): void {
  for (const k in a) {
    const v = a[k]!;
    w.message(field, () => {
      w.string(1, k);
      w.message(2, () => anyValue(w, v));
    });
  }
}

export function encodeMetricsRequest(batches: readonly Batch[], resource: Attributes, defaultStart: number, scopeVersion: string): Buffer {
  // one Metric per registry metric, its points in batch order
  const byMetric = new Map<MetricDef, { attributes: Attributes; value: number; start: bigint; end: bigint }[]>();
  const defaultStartNs = nanos(defaultStart);
  for (const b of batches) {
    const end = nanos(b.time);
    for (const p of b.points) {
      let pts = byMetric.get(p.metric);
      if (!pts) byMetric.set(p.metric, (pts = []));
      // gauges: start = end (OTLP ignores it); sums: the series' start
      const start = p.metric.kind === 'gauge' ? end : p.start !== undefined ? nanos(p.start) : defaultStartNs;
      pts.push({ attributes: p.attributes, value: p.value, start, end });
    }
  }
  const w = new Writer();
  w.message(1, () => {
    w.message(1, () => {
      keyValues(w, 1, resource);
      // dropped_attributes_count = 0, written as the OpenTelemetry serializer writes it
      w.tag(2, 0);
      w.varint(0);
    });
    w.message(2, () => {
      w.message(1, () => {
        w.string(1, 'l9gpu');
        w.string(2, scopeVersion);
      });
      for (const [def, pts] of byMetric) {
        w.message(2, () => {
          w.string(1, def.name);
          w.string(2, def.description);
          if (def.unit) w.string(3, def.unit);
          w.message(def.kind === 'gauge' ? 5 : 7, () => {
            for (const p of pts) {
              w.message(1, () => {
                w.fixed64(2, p.start);
                w.fixed64(3, p.end);
                w.double(4, p.value);
                keyValues(w, 7, p.attributes);
              });
            }
            if (def.kind !== 'gauge') {
              w.tag(2, 0);
              w.varint(CUMULATIVE);
              if (def.kind === 'sum') {
                w.tag(3, 0);
                w.varint(1);
              }
            }
          });
        });
      }
    });
  });
  return w.bytes();
}

/**
 * ExportMetricsServiceResponse { ExportMetricsPartialSuccess partial_success = 1 }
 * with { int64 rejected_data_points = 1; string error_message = 2 }: what a
 * backend refused of a request it accepted. Unknown fields are skipped.
 */
export function decodeExportResponse(b: Uint8Array): { rejected: number; message?: string } {
  let pos = 0;
  const varint = (end: number): number => {
    let v = 0;
    let mul = 1;
    while (pos < end) {
      const c = b[pos++]!;
      v += (c & 0x7f) * mul;
      if (c < 0x80) return v;
      mul *= 128;
    }
    throw new Error('truncated varint');
  };
  const skip = (wire: number, end: number): void => {
    if (wire === 0) varint(end);
    else if (wire === 1) pos += 8;
    else if (wire === 2) pos += varint(end);
    else if (wire === 5) pos += 4;
    else throw new Error(`wire type ${wire}`);
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
  if (pos > b.length) throw new Error('truncated message');
  return out;
}
