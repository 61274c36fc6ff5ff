/** Every sink l9gpu has, by name. */
import { fileSink } from './file.js';
import { otlpSink } from './otlp.js';
import { prometheusSink } from './prometheus.js';
import type { SinkFactory } from './sink.js';
import { stdoutSink } from './stdout.js';
import { webhookSink } from './webhook.js';

export const SINKS: readonly SinkFactory[] = [otlpSink, prometheusSink, stdoutSink, fileSink, webhookSink];
