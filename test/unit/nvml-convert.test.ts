/** The two-sample logic of the NVML conversion, on exact snapshots. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PointBuffer } from '../../src/core/metrics/model.js';
import { NvmlConverter } from '../../plugins/nvml/convert.js';
import type { GpuSnapshot, Snapshot } from '../../plugins/nvml/snapshot.js';

const gpu = (over: Partial<GpuSnapshot>): GpuSnapshot => ({ index: 0, uuid: 'GPU-x', name: 'H100', pciBusId: '00000000:18:00.0', ...over });
const snap = (time: number, g: GpuSnapshot): Snapshot => ({ driverVersion: '550', time, gpus: [g], notes: [] });

test('NVLink: By/s from the KiB counter delta over NVML timestamps; no rate across a reset', () => {
  const c = new NvmlConverter();
  const rate = (s: Snapshot) => {
    const b = new PointBuffer();
    c.convert(s, b);
    return b.points
      .filter((p) => p.metric.name === 'gpu.interconnect.throughput')
      .map((p) => [p.attributes['network.io.direction'], p.value]);
  };
  assert.deepEqual(rate(snap(1000, gpu({ nvlinkTxKiB: 1000, nvlinkRxKiB: 0, nvlinkTimestampUs: 1_000_000 }))), []);
  assert.deepEqual(rate(snap(3000, gpu({ nvlinkTxKiB: 3000, nvlinkRxKiB: 500, nvlinkTimestampUs: 3_000_000 }))), [
    ['transmit', 1024 * 1000],
    ['receive', 256 * 1000],
  ]);
  assert.deepEqual(
    rate(snap(5000, gpu({ nvlinkTxKiB: 10, nvlinkRxKiB: 10, nvlinkTimestampUs: 5_000_000 }))),
    [],
    'counter reset: no negative rate',
  );
  assert.deepEqual(rate(snap(6000, gpu({ nvlinkTxKiB: 1034, nvlinkRxKiB: 10, nvlinkTimestampUs: 6_000_000 }))), [
    ['transmit', 1024 * 1024],
    ['receive', 0],
  ]);
});

test('energy: mJ -> J, and a counter that goes down starts a new series', () => {
  const c = new NvmlConverter();
  const energy = (s: Snapshot) => {
    const b = new PointBuffer();
    c.convert(s, b);
    const p = b.points.find((x) => x.metric.name === 'gpu.energy.consumption')!;
    return [p.value, p.start];
  };
  assert.deepEqual(energy(snap(10_000, gpu({ energyMj: 5_000_000 }))), [5000, 9_999]);
  assert.deepEqual(energy(snap(20_000, gpu({ energyMj: 6_500_000 }))), [6500, 9_999]);
  assert.deepEqual(energy(snap(30_000, gpu({ energyMj: 1000 }))), [1, 29_999], 'driver reload');
});

test(
  'Xid events count per GPU and code; ECC events are not Xids; a lost GPU says it is lost, ' +
    'with its Xid counts (the one that took it off the bus) and nothing else',
  () => {
    const c = new NvmlConverter();
    c.addEvent({ uuid: 'GPU-x', eventType: 8, data: 79, time: 1 });
    c.addEvent({ uuid: 'GPU-x', eventType: 8, data: 79, time: 2 });
    c.addEvent({ uuid: 'GPU-x', eventType: 8, data: 48, time: 3 });
    c.addEvent({ uuid: 'GPU-x', eventType: 2, data: 0, time: 4 });
    const b = new PointBuffer();
    c.convert(snap(5, gpu({ utilGpuPct: 50 })), b);
    assert.deepEqual(
      b.points.filter((p) => p.metric.name === 'gpu.xid.errors').map((p) => [p.attributes['gpu.xid.code'], p.value]),
      [
        ['79', 2],
        ['48', 1],
      ],
    );
    const lost = new PointBuffer();
    c.convert(snap(6, gpu({ lost: true })), lost);
    assert.deepEqual(
      lost.points.map((p) => [p.metric.name, p.value]),
      [
        ['gpu.lost', 1],
        ['gpu.xid.errors', 2],
        ['gpu.xid.errors', 1],
      ],
    );
  },
);
