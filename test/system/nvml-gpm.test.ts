/**
 * Every GPM metric the nvml plugin reads, in its one nvmlGpmMetricsGet call a
 * window, through the production binding and converter against the fake
 * libnvidia-ml.so.1, with windows of exactly one second: the fake's counters
 * refresh once a second here (FAKE_NVML_GPM_REFRESH_US, set before this
 * process's first GPM sample, so that its refreshes fall on the wall clock's
 * seconds), and each sample is taken just after a second begins, so that a
 * window holds one refresh. The means are then exact: SM activity alternating
 * 20 % and 80 % each second reads 0.2, 0.8, 0.2, ... A metric the GPU does not
 * count, or that the driver's nvml.h lacks, is absent, and so is a NaN.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { GPM_READ, gpmRequest } from '../../plugins/nvml/gpm.js';
import type { Point } from '../../src/core/metrics/model.js';
import { FakeNvml, h100, type FakeNvmlDescription } from '../helpers/fake-nvml.js';
import { gpmWindows } from '../helpers/gpm-windows.js';

const MIB = 1024 * 1024;
const MIG = 'MIG-77777777-1111-2222-3333-444444444444';
/** A driver of the 595 branch (NVML v595: the first with DMMA_TENSOR_UTIL and the raw counters). */
const V595 = '595.0.0';

/** GPU 0: every kind of figure, SM activity alternating each second, FP64 not counted, FP16 not computable (NaN). */
const busy = {
  graphics: 85,
  sm_occupancy: 35,
  tensor: 40,
  dram: 55,
  hmma: 30,
  imma: 5,
  integer: 12,
  fp32: 30,
  fp16: 'nan',
  pcie_tx_mibs: 12,
  pcie_rx_mibs: 30,
  nvlink_rx_mibs: 100,
  nvlink_tx_mibs: 200,
  // raw counters, per second: 2e6 SM cycles elapsed, half of them active
  sm_cycles_elapsed: 2_000_000,
  sm_cycles_active: 1_000_000,
  mma_cycles_active: 800_000,
  hmma_cycles_active: 600_000,
  fp32_cycles_active: 400_000,
  integer_cycles_active: 240_000,
  pcie_tx_bytes: 12 * MIB,
  pcie_rx_bytes: 30 * MIB,
  bursts: { sm: { on_ms: 1000, off_ms: 1000, on: 20, off: 80 } },
};
/** GPU 1: an FP64 job (FP64 counted on this GPU only), no raw counters. */
const fp64 = { graphics: 90, sm: 60, sm_occupancy: 25, tensor: 50, dram: 20, fp64: 25, dfma: 15, dmma: 10, fp32: 5 };

function description(driver: string): FakeNvmlDescription {
  return {
    driver_version: driver,
    devices: [
      h100(0, { gpm: busy }),
      h100(1, { gpm: fp64 }),
      // MIG mode: GPM by GPU instance
      h100(2, {
        mig_mode: 1,
        mig_max: 7,
        mig: [
          {
            slot: 0,
            uuid: MIG,
            name: 'NVIDIA H100 80GB HBM3 MIG 7g.80gb',
            gi: 0,
            ci: 0,
            mem_total: 85_000_000_000,
            mem_used: 1,
            mem_free: 84_999_999_999,
            gpm: { graphics: 70, sm: 40, fp64: 8, dram: 30, sm_cycles_elapsed: 1_000_000, fp64_cycles_active: 80_000 },
          },
        ],
      }),
    ],
  };
}

const fake = new FakeNvml(description(V595));
before(() => {
  process.env.FAKE_NVML_CONFIG = fake.path;
  process.env.FAKE_NVML_GPM_REFRESH_US = '1000000';
});

/** The points of n one-second windows (test/helpers/gpm-windows.ts). */
const windows = async (driver: string, n: number): Promise<Point[][]> =>
  (await gpmWindows(fake, description(driver), n)).map((w) => w.points);

/** The values of one metric (and attribute) on one GPU, window by window. */
function series(ws: Point[][], name: string, uuid: string, attr?: [string, string]): (number | undefined)[] {
  return ws.map(
    (pts) =>
      pts.find((p) => p.metric.name === name && p.attributes['gpu.uuid'] === uuid && (!attr || p.attributes[attr[0]] === attr[1]))?.value,
  );
}

const uuid = (i: number) => h100(i).uuid;
let v595: Point[][];

test(
  'driver 595: every GPM metric in one call, exact over one-second windows: SM activity ' +
    'alternates 0.2 and 0.8, DRAM constant, FP64 only on the GPU that counts it, a NaN absent',
  async () => {
    v595 = await windows(V595, 5);
    const sm = series(v595, 'gpu.sm.active', uuid(0));
    assert.ok(
      sm.every((v) => v === 0.2 || v === 0.8),
      sm.join(', '),
    );
    for (let i = 1; i < sm.length; i++) assert.notEqual(sm[i], sm[i - 1], `alternates each second: ${sm.join(', ')}`);
    const exact: [string, [string, string] | undefined, number][] = [
      ['gpu.dram.active', undefined, 0.55],
      ['gpu.engine.active', undefined, 0.85],
      ['gpu.sm.occupancy', undefined, 0.35],
      ['gpu.tensor.active', undefined, 0.4],
      ['gpu.tensor.pipe.active', ['gpu.tensor.pipe', 'hmma'], 0.3],
      ['gpu.tensor.pipe.active', ['gpu.tensor.pipe', 'imma'], 0.05],
      ['gpu.pipe.active', ['gpu.pipe', 'fp32'], 0.3],
      ['gpu.pipe.active', ['gpu.pipe', 'integer'], 0.12],
      ['gpu.nvlink.throughput', ['network.io.direction', 'receive'], 100 * MIB],
      ['gpu.nvlink.throughput', ['network.io.direction', 'transmit'], 200 * MIB],
      ['gpu.pcie.throughput', ['network.io.direction', 'transmit'], 12 * MIB],
      ['gpu.pcie.throughput', ['network.io.direction', 'receive'], 30 * MIB],
    ];
    for (const [name, attr, v] of exact)
      assert.deepEqual(series(v595, name, uuid(0), attr), Array(5).fill(v), `${name} ${attr?.join('=') ?? ''}`);
    // not counted by GPU 0 (absent from its description: NOT_SUPPORTED), or NaN (fp16): absent, never 0
    for (const [name, attr] of [
      ['gpu.pipe.active', ['gpu.pipe', 'fp64']],
      ['gpu.pipe.active', ['gpu.pipe', 'fp16']],
      ['gpu.tensor.pipe.active', ['gpu.tensor.pipe', 'dfma']],
      ['gpu.tensor.pipe.active', ['gpu.tensor.pipe', 'dmma']],
    ] as const) {
      assert.deepEqual(series(v595, name, uuid(0), [...attr]), Array(5).fill(undefined), `${name} ${attr.join('=')} on GPU 0`);
    }
    // FP64 is GPU 1's alone
    assert.deepEqual(series(v595, 'gpu.pipe.active', uuid(1), ['gpu.pipe', 'fp64']), Array(5).fill(0.25));
    assert.deepEqual(series(v595, 'gpu.tensor.pipe.active', uuid(1), ['gpu.tensor.pipe', 'dfma']), Array(5).fill(0.15));
    assert.deepEqual(
      series(v595, 'gpu.tensor.pipe.active', uuid(1), ['gpu.tensor.pipe', 'dmma']),
      Array(5).fill(0.1),
      'DMMA from a 595 driver',
    );
    assert.deepEqual(series(v595, 'gpu.sm.active', uuid(1)), Array(5).fill(0.6));
  },
);

test(
  'driver 595: the raw counters are cumulative sums whose increase over a window is exact, ' +
    "their ratio the window's mean; GPU instances have them too",
  () => {
    const inc = (xs: (number | undefined)[]) => xs.slice(1).map((x, i) => x! - xs[i]!);
    const elapsed = series(v595, 'gpu.sm.cycles.elapsed', uuid(0));
    assert.ok(
      elapsed.every((v) => v !== undefined && v > 0),
      elapsed.join(', '),
    );
    assert.deepEqual(inc(elapsed), Array(4).fill(2_000_000), 'one second of 2e6 cycles a window');
    assert.deepEqual(inc(series(v595, 'gpu.sm.cycles.active', uuid(0))), Array(4).fill(1_000_000));
    assert.deepEqual(inc(series(v595, 'gpu.tensor.cycles.active', uuid(0))), Array(4).fill(800_000));
    assert.deepEqual(inc(series(v595, 'gpu.tensor.pipe.cycles.active', uuid(0), ['gpu.tensor.pipe', 'hmma'])), Array(4).fill(600_000));
    assert.deepEqual(inc(series(v595, 'gpu.pipe.cycles.active', uuid(0), ['gpu.pipe', 'fp32'])), Array(4).fill(400_000));
    assert.deepEqual(inc(series(v595, 'gpu.pipe.cycles.active', uuid(0), ['gpu.pipe', 'integer'])), Array(4).fill(240_000));
    assert.deepEqual(inc(series(v595, 'gpu.pcie.io', uuid(0), ['network.io.direction', 'transmit'])), Array(4).fill(12 * MIB));
    assert.deepEqual(inc(series(v595, 'gpu.pcie.io', uuid(0), ['network.io.direction', 'receive'])), Array(4).fill(30 * MIB));
    const point = v595[0]!.find((p) => p.metric.name === 'gpu.sm.cycles.elapsed')!;
    assert.equal(point.metric.kind, 'sum');
    assert.equal(point.metric.unit, '{cycle}');
    // GPU 1 counts none of them: absent
    for (const name of ['gpu.sm.cycles.elapsed', 'gpu.sm.cycles.active', 'gpu.pcie.io'])
      assert.deepEqual(series(v595, name, uuid(1)), Array(5).fill(undefined), name);
    // the MIG instance: its GPU instance's figures, attributes those of the instance
    assert.deepEqual(series(v595, 'gpu.pipe.active', MIG, ['gpu.pipe', 'fp64']), Array(5).fill(0.08));
    assert.deepEqual(inc(series(v595, 'gpu.pipe.cycles.active', MIG, ['gpu.pipe', 'fp64'])), Array(4).fill(80_000));
    assert.deepEqual(inc(series(v595, 'gpu.sm.cycles.elapsed', MIG)), Array(4).fill(1_000_000));
    const m = v595[0]!.find((p) => p.metric.name === 'gpu.pipe.active' && p.attributes['gpu.uuid'] === MIG)!;
    assert.equal(m.attributes['gpu.mig.parent_uuid'], uuid(2));
    assert.equal(
      series(v595, 'gpu.pipe.active', uuid(2), ['gpu.pipe', 'fp64']).filter((v) => v !== undefined).length,
      0,
      'the parent in MIG mode has none of its own',
    );
  },
);

test(
  "driver 550 (R550's nvml.h: 98 entries, no DMMA, no raw counters): not asked for what its " + 'header lacks, the rest as exact',
  async () => {
    const ws = await windows('550.54.15', 3);
    assert.deepEqual(series(ws, 'gpu.dram.active', uuid(0)), [0.55, 0.55, 0.55]);
    assert.deepEqual(series(ws, 'gpu.pipe.active', uuid(1), ['gpu.pipe', 'fp64']), [0.25, 0.25, 0.25]);
    assert.deepEqual(series(ws, 'gpu.nvlink.throughput', uuid(0), ['network.io.direction', 'transmit']), [200 * MIB, 200 * MIB, 200 * MIB]);
    assert.deepEqual(
      series(ws, 'gpu.tensor.pipe.active', uuid(1), ['gpu.tensor.pipe', 'dmma']),
      [undefined, undefined, undefined],
      "DMMA is NVML v595's",
    );
    for (const name of [
      'gpu.sm.cycles.elapsed',
      'gpu.sm.cycles.active',
      'gpu.tensor.cycles.active',
      'gpu.tensor.pipe.cycles.active',
      'gpu.pipe.cycles.active',
      'gpu.pcie.io',
    ]) {
      assert.equal(ws.flat().filter((p) => p.metric.name === name).length, 0, `${name} from a 550 driver`);
    }
  },
);

test("the request: one entry a metric, sized for the largest header, the ids each driver's nvml.h has", () => {
  const ids = (v: string) => gpmRequest(v).map(([, id]) => id);
  assert.deepEqual(ids('550.54.15'), [1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 20, 21, 60, 61]);
  assert.deepEqual(ids('590.48.01'), ids('550.54.15'));
  assert.deepEqual(ids(V595), [
    1,
    2,
    3,
    4,
    5,
    6,
    7,
    8,
    9,
    10,
    11,
    12,
    13,
    20,
    21,
    60,
    61,
    ...Array.from({ length: 13 }, (_, i) => 248 + i),
  ]);
  assert.deepEqual(ids(''), ids('550.54.15'), 'a driver of unknown version: the oldest set');
  assert.equal(new Set(GPM_READ.map(([key]) => key)).size, GPM_READ.length);
});

after(() => {
  delete process.env.FAKE_NVML_GPM_REFRESH_US;
});
