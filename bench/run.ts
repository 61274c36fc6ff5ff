/**
 * `npm run bench`: prints the figures the issues set targets for.
 * BENCH_DAEMON_SECONDS (default 60) sets how long the daemon is watched.
 */
import { benchDaemon } from './daemon.js';
import { benchNvml } from './nvml.js';
import { benchPipeline } from './pipeline.js';

const fmt = (n: number, d = 0) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
const line = (name: string, value: string, target: string, ok: boolean) =>
  process.stdout.write(`${name.padEnd(46)} ${value.padStart(16)}   ${target.padEnd(22)} ${ok ? 'ok' : 'MISSED'}\n`);

process.stdout.write(`l9gpu benchmarks (node ${process.version}, ${new Date().toISOString()})\n\n`);
const p = benchPipeline(Number(process.env.BENCH_PIPELINE_SECONDS ?? 2));
line(`pipeline: points/s (${p.pointsPerBatch}-point batches)`, fmt(p.pointsPerSecond), '>= 200,000', p.pointsPerSecond >= 200_000);
line('pipeline: points/s incl. gzip', fmt(p.pointsPerSecondGzip), '(info)', true);
line('pipeline: OTLP request bytes per batch', `${fmt(p.bytesPerBatch)} / ${fmt(p.bytesPerBatchGzip)} gz`, '(info)', true);

const n = await benchNvml(8);
line(`nvml: sampling cost per GPU (${n.gpus} fake GPUs, full set)`, `${fmt(n.usPerGpuSample, 1)} us`, '<= 200 us', n.usPerGpuSample <= 200);
line(`nvml: conversion to ${fmt(n.fieldsPerGpu)} points per GPU`, `${fmt(n.usPerGpuConvert, 1)} us`, '(info)', true);
line('nvml: event-loop lag during event wait, max', `${fmt(n.eventLoopLagMaxMs, 2)} ms`, '< 5 ms', n.eventLoopLagMaxMs < 5);
line('nvml: event-loop lag during event wait, p99', `${fmt(n.eventLoopLagP99Ms, 2)} ms`, '(info)', true);

const d = await benchDaemon(Number(process.env.BENCH_DAEMON_SECONDS ?? 60), 10);
line(`daemon (8 sim GPUs + host, 10 s): CPU of one core`, `${fmt(d.cpuPercentOfOneCore, 3)} %`, '<= 0.5 %', d.cpuPercentOfOneCore <= 0.5);
line('daemon: CPU per tick', `${fmt(d.cpuMsPerTick, 1)} ms`, '(info)', true);
line('daemon: RSS after start-up', `${fmt(d.rssMb, 1)} MB`, '<= 64 MB', d.rssMb <= 64);
line('daemon: peak RSS', `${fmt(d.peakRssMb, 1)} MB`, '<= 64 MB', d.peakRssMb <= 64);
line('bare `node -e 0`: peak RSS', `${fmt(d.bareNodePeakRssMb, 1)} MB`, '(reference)', true);
line(`daemon: OTLP requests in ${fmt(d.seconds)} s`, fmt(d.otlpRequests), '(info)', true);
