/**
 * Decodes OTLP ExportMetricsServiceRequest bytes exactly, with the protobufjs
 * root shipped by @opentelemetry/otlp-transformer 0.215 (installed under the
 * alias otlp-proto-decoder): an independent decoder, not our encoder's twin.
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const root = require('otlp-proto-decoder/build/src/generated/root.js') as {
  opentelemetry: {
    proto: {
      collector: {
        metrics: { v1: { ExportMetricsServiceRequest: { decode(b: Uint8Array): unknown; toObject(m: unknown, o: object): unknown } } };
      };
    };
  };
};
const Req = root.opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest;

export interface OtlpAnyValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}
export interface OtlpKeyValue {
  key: string;
  value: OtlpAnyValue;
}
export interface OtlpNumberDataPoint {
  attributes?: OtlpKeyValue[];
  startTimeUnixNano: string;
  timeUnixNano: string;
  asDouble?: number;
  asInt?: string;
}
export interface OtlpMetric {
  name: string;
  description?: string;
  unit?: string;
  gauge?: { dataPoints: OtlpNumberDataPoint[] };
  sum?: { dataPoints: OtlpNumberDataPoint[]; aggregationTemporality: number; isMonotonic?: boolean };
}
export interface OtlpRequest {
  resourceMetrics: {
    resource: { attributes: OtlpKeyValue[] };
    scopeMetrics: { scope: { name: string; version?: string }; metrics: OtlpMetric[] }[];
  }[];
}

export function decodeOtlp(body: Uint8Array): OtlpRequest {
  return Req.toObject(Req.decode(body), { longs: String, defaults: false, arrays: true }) as OtlpRequest;
}

export function attrs(kvs: OtlpKeyValue[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const kv of kvs ?? []) {
    const v = kv.value;
    out[kv.key] = v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.doubleValue ?? v.boolValue!;
  }
  return out;
}
