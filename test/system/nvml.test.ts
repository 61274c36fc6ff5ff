/**
 * The nvml plugin through the production koffi binding, loaded against the
 * fake libnvidia-ml.so.1 (real symbols, real struct layouts), end to end
 * through `l9gpu daemon`.
 */
import assert from 'node:assert/strict';
import { chmodSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { METRICS } from '../../src/core/metrics/registry.js';
import { loaderMayFind } from '../../plugins/nvml/index.js';
import { recordEnd, recordStart } from '../../src/store/jobs.js';
import { openStore } from '../../src/store/open.js';
import { DaemonProcess, parseLines, runCli, type JsonPoint, ownStateDir } from '../helpers/daemon.js';
import { FakeNvml, h100 } from '../helpers/fake-nvml.js';
import { tempDir } from '../helpers/paths.js';
import { slurmControllerDown } from '../helpers/slurm-down.js';
import { waitFor } from '../helpers/wait.js';

// beside the other files of the system lane: state in a folder of this file's own, not the node's /var/lib/l9gpu
ownStateDir();

/** What GPM gives (two samples a window, Hopper and later; test/system/nvml-gpm.test.ts checks each value). */
const GPM_NAMES = [
  'gpu.engine.active',
  'gpu.sm.active',
  'gpu.sm.occupancy',
  'gpu.tensor.active',
  'gpu.dram.active',
  'gpu.tensor.pipe.active',
  'gpu.pipe.active',
  'gpu.nvlink.throughput',
  'gpu.sm.cycles.elapsed',
  'gpu.sm.cycles.active',
  'gpu.tensor.cycles.active',
  'gpu.tensor.pipe.cycles.active',
  'gpu.pipe.cycles.active',
  'gpu.pcie.io',
];

/** A configuration that reads each GPU's state (MIG mode, clocks that follow the performance state, fan) every tick. */
function stateEveryTick(): string[] {
  const path = join(tempDir('l9gpu-nvml-conf-'), 'l9gpu.ini');
  writeFileSync(path, '[nvml]\nstate_interval = 0\n');
  return ['--config', path];
}

function pick(pts: JsonPoint[], name: string, attrs: Record<string, unknown> = {}): JsonPoint[] {
  return pts.filter((p) => p.name === name && Object.entries(attrs).every(([k, v]) => p.attributes[k] === v));
}
function one(pts: JsonPoint[], name: string, attrs: Record<string, unknown> = {}): number {
  const m = pick(pts, name, attrs);
  assert.equal(m.length, 1, `${name} ${JSON.stringify(attrs)}: ${m.length} points`);
  return m[0]!.value;
}

test('every NVML field arrives with the registry name and unit, converted exactly', async () => {
  // GPU 0 has retired pages (the size query then answers INSUFFICIENT_SIZE with the count, as the real library does);
  // NVML reports one process's memory as NVML_VALUE_NOT_AVAILABLE (-1: WDDM, or no permission under MIG)
  const fake = new FakeNvml({
    driver_version: '550.54.15',
    devices: [
      h100(0, {
        clock_reasons: 0x4 | 0x1,
        retired: { sbe: 3, dbe: 1 },
        processes: [
          { pid: 4242, used: 1_048_576_000 },
          { pid: 4343, used: '18446744073709551615' },
        ],
      }),
      // no serial number: NOT_SUPPORTED, as a GeForce board answers
      h100(1, { serial: undefined }),
    ],
  });
  const r = await runCli(['daemon', '--once', '--plugin', 'nvml', '--sink', 'stdout'], fake.env());
  assert.equal(r.status, 0, r.stderr);
  const pts = parseLines(r.stdout);
  const g0 = { 'gpu.uuid': fake.desc.devices[0]!.uuid };
  for (const p of pick(pts, 'gpu.utilization')) {
    assert.equal(p.attributes['gpu.vendor'], 'nvidia');
    assert.equal(p.attributes['gpu.model'], 'NVIDIA H100 80GB HBM3');
  }
  assert.deepEqual(
    pick(pts, 'gpu.utilization').map((p) => [p.attributes['gpu.index'], p.attributes['gpu.pci.bus_id']]),
    [
      [0, '0000:18:00.0'],
      [1, '0000:28:00.0'],
    ],
    'the sysfs form, whatever NVML prints',
  );
  assert.equal(one(pts, 'gpu.utilization', g0), 0.87, 'percent -> ratio');
  assert.equal(one(pts, 'gpu.memory.controller.utilization', g0), 0.4);
  assert.equal(one(pts, 'gpu.memory.used', g0), 42_949_672_960);
  assert.equal(one(pts, 'gpu.memory.free', g0), 42_412_802_048);
  assert.equal(one(pts, 'gpu.memory.total', g0), 85_899_345_920);
  assert.equal(one(pts, 'gpu.memory.reserved', g0), 536_870_912);
  assert.equal(one(pts, 'gpu.temperature', { ...g0, 'gpu.temperature.sensor': 'edge' }), 45);
  assert.equal(one(pts, 'gpu.temperature', { ...g0, 'gpu.temperature.sensor': 'memory' }), 50, 'field 82 MEMORY_TEMP');
  assert.equal(one(pts, 'gpu.power.draw', g0), 350.123, 'mW -> W');
  assert.equal(one(pts, 'gpu.power.limit', g0), 700, 'mW -> W');
  assert.equal(one(pts, 'gpu.energy.consumption', g0), 123_456.789, 'mJ -> J');
  assert.equal(one(pts, 'gpu.clock.frequency', { ...g0, 'gpu.clock.type': 'sm' }), 1755e6);
  assert.equal(one(pts, 'gpu.clock.frequency', { ...g0, 'gpu.clock.type': 'graphics' }), 1755e6);
  assert.equal(one(pts, 'gpu.clock.frequency', { ...g0, 'gpu.clock.type': 'memory' }), 2619e6);
  assert.equal(one(pts, 'gpu.throttle.active', { ...g0, 'gpu.throttle.cause': 'power' }), 1, 'SwPowerCap');
  for (const c of ['thermal', 'hw', 'sw'])
    assert.equal(one(pts, 'gpu.throttle.active', { ...g0, 'gpu.throttle.cause': c }), 0, `${c}: idle (0x1) is not throttling`);
  assert.equal(one(pts, 'gpu.ecc.errors', { ...g0, 'error.type': 'corrected', 'gpu.ecc.scope': 'volatile' }), 1);
  assert.equal(one(pts, 'gpu.ecc.errors', { ...g0, 'error.type': 'corrected', 'gpu.ecc.scope': 'aggregate' }), 5);
  assert.equal(one(pts, 'gpu.ecc.errors', { ...g0, 'error.type': 'uncorrected', 'gpu.ecc.scope': 'aggregate' }), 0);
  assert.equal(one(pts, 'gpu.memory.remapped_rows', { ...g0, 'gpu.memory.remap.cause': 'corrected' }), 2);
  assert.equal(one(pts, 'gpu.memory.remap.pending', g0), 0);
  assert.equal(one(pts, 'gpu.memory.retired_pages', { ...g0, 'gpu.memory.retirement.cause': 'multiple_single_bit_ecc' }), 3);
  assert.equal(one(pts, 'gpu.memory.retired_pages', { ...g0, 'gpu.memory.retirement.cause': 'double_bit_ecc' }), 1);
  assert.equal(
    one(pts, 'gpu.memory.retired_pages', { 'gpu.uuid': fake.desc.devices[1]!.uuid, 'gpu.memory.retirement.cause': 'double_bit_ecc' }),
    0,
  );
  assert.equal(one(pts, 'gpu.memory.retirement.pending', g0), 0);
  assert.equal(one(pts, 'gpu.pcie.throughput', { ...g0, 'network.io.direction': 'transmit' }), 1000 * 1024, 'KB/s -> By/s');
  assert.equal(one(pts, 'gpu.pcie.throughput', { ...g0, 'network.io.direction': 'receive' }), 2000 * 1024);
  assert.equal(one(pts, 'gpu.pcie.replays', g0), 3);
  assert.equal(one(pts, 'gpu.fan.speed_ratio', g0), 0.3, 'percent -> ratio');
  assert.equal(one(pts, 'gpu.performance_state', g0), 0);
  assert.equal(
    one(pts, 'gpu.interconnect.io', { ...g0, 'network.io.direction': 'transmit', 'gpu.interconnect.type': 'nvlink' }),
    1000 * 1024,
    'KiB -> By',
  );
  assert.equal(pick(pts, 'gpu.interconnect.throughput').length, 0, 'a rate needs two samples');
  assert.equal(one(pts, 'gpu.process.count', g0), 2);
  assert.equal(one(pts, 'gpu.process.memory.used', { ...g0, 'process.pid': 4242 }), 1_048_576_000);
  assert.equal(
    pick(pts, 'gpu.process.memory.used').filter((p) => p.attributes['process.pid'] === 4343).length,
    0,
    'NVML_VALUE_NOT_AVAILABLE is no value, not 1.8e19 bytes',
  );
  assert.equal(one(pts, 'gpu.info', { ...g0, 'gpu.driver.version': '550.54.15' }), 1);
  assert.deepEqual(
    pick(pts, 'gpu.info').map((p) => [
      p.attributes['gpu.device.minor'],
      p.attributes['gpu.serial_number'],
      p.attributes['gpu.firmware.version'],
    ]),
    [
      [0, '1654922010000', '96.00.99.00.01'],
      [1, undefined, '96.00.99.00.01'],
    ],
    'nvmlDeviceGetSerial and nvmlDeviceGetVbiosVersion, read once; a board without a serial has no attribute, and no error said',
  );
  assert.doesNotMatch(r.stderr, /nvmlDeviceGetSerial|nvmlDeviceGetVbiosVersion/);
  assert.equal(one(pts, 'gpu.lost', g0), 0);
  for (const p of pts) assert.ok(['gpu.', 'l9gpu.'].some((x) => p.name.startsWith(x)));
  // every GPU metric of the registry, but for AMD's per-block ECC, those that need more than
  // one sample or an event (asserted in the Xid/NVLink, sample-buffer and GPM tests below), and
  // the two the Slurm attribution adds (gpu.job.*, outside_allocation: test/helpers/slurm-suite.ts), dcgm-exporter's own (dcgm.*),
  // and the cost rates, which need prices (test/system/cost.test.ts); the health stage's gpu.health and gpu.health.score are in
  const notNvml = [
    'gpu.ecc.block.errors',
    'gpu.xid.errors',
    'gpu.interconnect.throughput',
    'gpu.utilization.max',
    'gpu.power.draw.max',
    'gpu.process.outside_allocation',
    ...GPM_NAMES,
  ];
  const expected = METRICS.filter((m) => m.scope === 'gpu')
    .map((m) => m.name)
    .filter((n) => !notNvml.includes(n) && !n.startsWith('gpu.job.') && !n.startsWith('gpu.cost.') && !n.startsWith('dcgm.'));
  assert.deepEqual([...new Set(pts.filter((p) => p.name.startsWith('gpu.')).map((p) => p.name))].sort(), expected.sort());
  for (const p of pick(pts, 'gpu.energy.consumption')) assert.equal(p.kind, 'sum');
});

test('NOT_SUPPORTED fields are skipped and said once per GPU; other errors too', async () => {
  // GPU 0 keeps no sample buffers either (power would come from them)
  const fake = new FakeNvml({
    devices: [h100(0, { errors: { nvmlDeviceGetFanSpeed: 3, nvmlDeviceGetPowerUsage: 999, nvmlDeviceGetSamples: 3 } }), h100(1)],
  });
  const d = new DaemonProcess([...stateEveryTick(), '--plugin', 'nvml', '--sink', 'stdout', '--interval', '100ms'], fake.env());
  try {
    await waitFor('5 collections', () => pick(d.points(), 'gpu.utilization').length >= 10);
    // stdout and stderr are two pipes: a loaded machine may deliver the points before the first tick's notes
    await d.waitStderr(/fan speed is not supported/);
    await d.waitStderr(/power: Unknown Error \(999\)/);
    const pts = d.points();
    const g0 = fake.desc.devices[0]!.uuid;
    assert.equal(pick(pts, 'gpu.fan.speed_ratio', { 'gpu.uuid': g0 }).length, 0);
    assert.equal(pick(pts, 'gpu.power.draw', { 'gpu.uuid': g0 }).length, 0);
    assert.ok(pick(pts, 'gpu.fan.speed_ratio', { 'gpu.uuid': fake.desc.devices[1]!.uuid }).length >= 5, 'the other GPU still reports it');
    assert.equal(d.stderr.split('fan speed is not supported').length - 1, 1, 'said once');
    assert.equal(d.stderr.split('power: Unknown Error (999)').length - 1, 1, 'an unexpected error is said once too');
  } finally {
    assert.equal(await d.stop(), 0);
  }
});

test("an older driver (R470's symbol set) without the newer entry points: memory v1, throttle reasons, processes v2", async () => {
  const fake = new FakeNvml({ devices: [h100(0, { clock_reasons: 0x40 })] });
  const r = await runCli(['daemon', '--once', '--plugin', 'nvml', '--sink', 'stdout'], fake.env('r470'));
  assert.equal(r.status, 0, r.stderr);
  const pts = parseLines(r.stdout);
  assert.equal(one(pts, 'gpu.memory.used'), 42_949_672_960 + 536_870_912, 'v1 counts the reservation as used');
  assert.equal(pick(pts, 'gpu.memory.reserved').length, 0);
  assert.equal(one(pts, 'gpu.throttle.active', { 'gpu.throttle.cause': 'thermal' }), 1, 'via nvmlDeviceGetCurrentClocksThrottleReasons');
  assert.equal(one(pts, 'gpu.throttle.active', { 'gpu.throttle.cause': 'hw' }), 1);
  assert.equal(one(pts, 'gpu.process.memory.used', { 'process.pid': 4242 }), 1_048_576_000);
});

test('MIG: instances with their own UUID, memory and ids, and the parent UUID', async () => {
  const parent = h100(0, {
    name: 'NVIDIA A100-SXM4-40GB',
    mig_mode: 1,
    mig_max: 7,
    mig: [
      {
        slot: 0,
        uuid: 'MIG-aaaaaaaa-1111-2222-3333-444444444444',
        name: 'NVIDIA A100-SXM4-40GB MIG 3g.20gb',
        gi: 1,
        ci: 0,
        mem_total: 20_937_965_568,
        mem_used: 13_631_488,
        mem_free: 20_924_334_080,
      },
      {
        slot: 3,
        uuid: 'MIG-bbbbbbbb-1111-2222-3333-444444444444',
        name: 'NVIDIA A100-SXM4-40GB MIG 1g.5gb',
        gi: 9,
        ci: 0,
        mem_total: 4_966_055_936,
        mem_used: 4_000_000_000,
        mem_free: 966_055_936,
      },
    ],
    processes: [{ pid: 77, used: 3_900_000_000, gi: 9, ci: 0 }],
  });
  const fake = new FakeNvml({ devices: [parent] });
  const r = await runCli(['daemon', '--once', '--plugin', 'nvml', '--sink', 'stdout'], fake.env());
  assert.equal(r.status, 0, r.stderr);
  const pts = parseLines(r.stdout);
  const mig = { 'gpu.uuid': 'MIG-bbbbbbbb-1111-2222-3333-444444444444' };
  assert.equal(one(pts, 'gpu.memory.used', mig), 4_000_000_000);
  assert.equal(one(pts, 'gpu.memory.total', mig), 4_966_055_936);
  const p = pick(pts, 'gpu.memory.total', mig)[0]!;
  assert.equal(p.attributes['gpu.mig.parent_uuid'], parent.uuid);
  assert.equal(p.attributes['gpu.mig.instance_id'], 9);
  assert.equal(p.attributes['gpu.mig.compute_instance_id'], 0);
  assert.equal(p.attributes['gpu.model'], 'NVIDIA A100-SXM4-40GB MIG 1g.5gb');
  assert.equal(pick(pts, 'gpu.memory.total').length, 3, 'the parent and its two instances');
  assert.equal(pick(pts, 'gpu.memory.remapped_rows').length, 0, 'NOT_SUPPORTED with MIG on');
  const proc = pick(pts, 'gpu.process.memory.used', { 'process.pid': 77 })[0]!;
  assert.equal(proc.attributes['gpu.mig.instance_id'], 9);
  assert.match(r.stderr, /remapped rows is not supported/);
});

test('Xid events are counted per code as a monotonic sum; NVLink gets a rate between samples', async () => {
  const gpus = [h100(0), h100(1)];
  const fake = new FakeNvml({ devices: gpus, events: [] });
  const d = new DaemonProcess(['--plugin', 'nvml', '--sink', 'stdout', '--interval', '200ms'], {
    ...fake.env(),
    FAKE_NVML_TRACE_EVENTS: '1',
  });
  try {
    await waitFor('first samples', () => pick(d.points(), 'gpu.utilization').length >= 2);
    // Xid alone: ECC events would queue ahead of the Xids (the ECC counters count those errors)
    assert.deepEqual(
      [...d.stderr.matchAll(/fake NVML: device (\d+) registered event types (\S+)/g)].map((m) => [m[1], m[2]]),
      [
        ['0', '0x8'],
        ['1', '0x8'],
      ],
    );
    fake.write({
      devices: [h100(0, { fields: { '138': { value: 5000 }, '139': { value: 9000 } } }), h100(1)],
      events: [
        { device: 1, type: 8, data: 79 },
        { device: 1, type: 1, data: 0 },
        { device: 1, type: 8, data: 79 },
        { device: 0, type: 8, data: 13 },
      ],
    });
    const xid = await waitFor('Xid counts', () => {
      const x = pick(d.points(), 'gpu.xid.errors', { 'gpu.uuid': gpus[1]!.uuid, 'gpu.xid.code': '79' });
      return x.length && x[x.length - 1]!.value === 2 ? x : undefined;
    });
    assert.equal(xid[0]!.kind, 'sum');
    assert.equal(xid[0]!.monotonic, true);
    await waitFor(
      'Xid 13 on GPU 0',
      () => pick(d.points(), 'gpu.xid.errors', { 'gpu.uuid': gpus[0]!.uuid, 'gpu.xid.code': '13' }).length > 0,
    );
    assert.equal(pick(d.points(), 'gpu.xid.errors', { 'gpu.xid.code': '0' }).length, 0, 'an ECC event is not an Xid');
    assert.match(d.stderr, /Xid error gpu=GPU-01a1b2c3\S* xid=79/);
    const rate = await waitFor('NVLink rate', () =>
      pick(d.points(), 'gpu.interconnect.throughput', { 'gpu.uuid': gpus[0]!.uuid, 'network.io.direction': 'transmit' }).find(
        (p) => p.value > 0,
      ),
    );
    // 4000 KiB more between two samples about 200 ms apart (NVML's own timestamps)
    assert.ok(rate.value > 4000 * 1024 && rate.value < 4000 * 1024 * 20, `rate ${rate.value} By/s`);
  } finally {
    assert.equal(await d.stop(), 0);
  }
});

test('a lost GPU is reported and NVML re-initialised with backoff; the GPU comes back', async () => {
  const gpus = [h100(0), h100(1)];
  const fake = new FakeNvml({ devices: gpus });
  const d = new DaemonProcess(['--plugin', 'nvml', '--sink', 'stdout', '--interval', '100ms'], fake.env());
  try {
    await waitFor('samples', () => pick(d.points(), 'gpu.utilization').length >= 2);
    fake.write({ devices: [h100(0), h100(1, { lost: true })] });
    await waitFor('gpu.lost = 1', () => pick(d.points(), 'gpu.lost', { 'gpu.uuid': gpus[1]!.uuid }).some((p) => p.value === 1));
    await d.waitStderr(/GPU 1 \(GPU-01\S+\) is lost \(NVML_ERROR_GPU_IS_LOST\)/);
    const mark = d.stdout.length;
    fake.write({ devices: [h100(0), h100(1)] });
    await d.waitStderr(/NVML is back/, 15_000);
    await waitFor('GPU 1 samples again', () =>
      d.pointsSince(mark).some((p) => p.name === 'gpu.utilization' && p.attributes['gpu.uuid'] === gpus[1]!.uuid),
    );
    assert.equal(d.stderr.split('is lost (NVML_ERROR_GPU_IS_LOST)').length - 1, 1, 'said once per loss');
  } finally {
    assert.equal(await d.stop(), 0);
  }
  // the fake says what the real library would punish: a set freed after nvmlShutdown, or in a later session
  assert.doesNotMatch(d.stderr, /fake NVML: misuse/, 'the event set is freed before nvmlShutdown, on re-init and on stop');
});

test('Xids a healthy GPU queued after the last sample are read before a re-init frees the event set', async () => {
  const gpus = [h100(0), h100(1)];
  const fake = new FakeNvml({ devices: gpus, events: [] });
  // 2 s ticks: the re-init (1 s after the loss was seen) is the first thing the next tick does
  const d = new DaemonProcess(['--plugin', 'nvml', '--sink', 'stdout', '--interval', '2s'], fake.env());
  try {
    await waitFor('first samples', () => pick(d.points(), 'gpu.utilization').length >= 2, 15_000);
    fake.write({ devices: [h100(0), h100(1, { lost: true })], events: [] });
    // said after that tick's sample and event read
    await d.waitStderr(/GPU 1 \(GPU-01\S+\) is lost \(NVML_ERROR_GPU_IS_LOST\)/, 15_000);
    // queued before the next tick, whose re-init frees the set (the fake drops what a freed set held, as the driver does)
    fake.write({ devices: [h100(0), h100(1, { lost: true })], events: [{ device: 0, type: 8, data: 13 }] });
    await waitFor(
      'Xid 13 on GPU 0',
      () => pick(d.points(), 'gpu.xid.errors', { 'gpu.uuid': gpus[0]!.uuid, 'gpu.xid.code': '13' }).length > 0,
      15_000,
    );
    assert.match(d.stderr, /Xid error gpu=GPU-00\S* xid=13/);
  } finally {
    assert.equal(await d.stop(), 0);
  }
  assert.doesNotMatch(d.stderr, /fake NVML: misuse/);
});

test(
  'a call blocked in the driver: the event loop goes on (host points every tick), the sample ' +
    'times out, no calls pile up behind the blocked one, and sampling resumes when the driver ' +
    'answers',
  async () => {
    const fake = new FakeNvml({ devices: [h100(0)] });
    const d = new DaemonProcess(['--plugin', 'nvml', '--plugin', 'host', '--sink', 'stdout', '--interval', '200ms'], fake.env());
    try {
      await waitFor('samples', () => pick(d.points(), 'gpu.utilization').length >= 2);
      // every sample now blocks 2.5 s in nvmlDeviceGetEnforcedPowerLimit, as a wedged driver does
      fake.write({ devices: [h100(0, { hang_ms: { nvmlDeviceGetEnforcedPowerLimit: 2500 } })] });
      await d.waitStderr(/collection timed out: its ticks are skipped until it returns plugin=nvml/);
      await d.waitStderr(
        new RegExp(
          String.raw`collection failed plugin=nvml error="NVML has not answered the previous sample's` +
            String.raw` calls \(a call blocked in the driver since \S+\): no new calls until it does"`,
        ),
      );
      const mark = d.stdout.length;
      const since = () => d.pointsSince(mark);
      // ten ticks of host points while NVML is stuck: the daemon's event loop never waits for the driver
      await waitFor('host points every tick', () => new Set(pick(since(), 'system.cpu.utilization').map((p) => p.time)).size >= 10, 15_000);
      assert.equal(pick(since(), 'gpu.utilization').length <= 2, true, "at most the blocked samples' own points (one each 2.5 s)");
      const refused = d.stderr.match(/NVML has not answered the previous sample's calls/g)?.length ?? 0;
      const blocked = d.stderr.match(/collection timed out: its ticks are skipped until it returns plugin=nvml/g)?.length ?? 0;
      assert.ok(refused <= blocked, `the refusal is said once per blocked call (${blocked}), not once a tick (${refused})`);
      fake.write({ devices: [h100(0)] });
      const back = d.stdout.length;
      await waitFor('samples every tick again', () => pick(d.pointsSince(back), 'gpu.utilization').length >= 5, 15_000);
    } finally {
      assert.equal(await d.stop(), 0, d.stderr);
    }
    assert.doesNotMatch(d.stderr, /fake NVML: misuse/);
  },
);

test(
  'a GPU that stays lost: the healthy GPU is sampled every tick, the lost one stays reported ' +
    'lost, NVML is re-initialised with a backoff the re-init does not reset',
  async () => {
    const gpus = [h100(0), h100(1)];
    const fake = new FakeNvml({ devices: gpus });
    const d = new DaemonProcess(['--plugin', 'nvml', '--plugin', 'host', '--sink', 'stdout', '--interval', '100ms'], {
      ...fake.env(),
      FAKE_NVML_TRACE_INIT: '1',
    });
    try {
      await waitFor('samples', () => pick(d.points(), 'gpu.utilization').length >= 4);
      fake.write({ devices: [h100(0), h100(1, { lost: true })] });
      await waitFor('gpu.lost = 1', () => pick(d.points(), 'gpu.lost', { 'gpu.uuid': gpus[1]!.uuid }).some((p) => p.value === 1));
      const mark = d.stdout.length;
      const inits = () => d.stderr.match(/fake NVML: nvmlInit_v2/g)?.length ?? 0;
      const initsAtLoss = inits();
      const since = () => d.pointsSince(mark);
      // 4 s of 100 ms ticks: host ticks as the reference
      await waitFor('4 s of ticks', () => new Set(pick(since(), 'system.cpu.utilization').map((p) => p.time)).size >= 40, 20_000);
      const pts = since();
      const ticks = new Set(pick(pts, 'system.cpu.utilization').map((p) => p.time)).size;
      const healthy = pick(pts, 'gpu.utilization', { 'gpu.uuid': gpus[0]!.uuid }).length;
      assert.ok(healthy >= ticks - 2, `GPU 0 sampled every tick while GPU 1 is lost (${healthy} samples, ${ticks} ticks)`);
      const lost = pick(pts, 'gpu.lost', { 'gpu.uuid': gpus[1]!.uuid });
      assert.ok(
        lost.length >= ticks - 2 && lost.every((p) => p.value === 1),
        `GPU 1 reported lost every tick, re-inits included (${lost.length} of ${ticks})`,
      );
      // re-inits at 1, 2 (then 4, 8...) s after the loss: 2 or 3 in 4 s, not one a tick
      assert.ok(inits() - initsAtLoss <= 3, `re-initialised ${inits() - initsAtLoss} times in ${ticks} ticks`);
      assert.doesNotMatch(d.stderr, /collection failed plugin=nvml/);
      fake.write({ devices: [h100(0), h100(1)] });
      await d.waitStderr(/NVML initialised/, 15_000);
      await waitFor(
        'GPU 1 back',
        () => pick(d.pointsSince(mark), 'gpu.lost', { 'gpu.uuid': gpus[1]!.uuid }).some((p) => p.value === 0),
        20_000,
      );
    } finally {
      assert.equal(await d.stop(), 0, d.stderr);
    }
    assert.doesNotMatch(d.stderr, /fake NVML: misuse/);
  },
);

test('a driver not loaded at start is an error counted per tick, said once, and recovered from', async () => {
  const fake = new FakeNvml({ init_error: 9, devices: [h100(0)] });
  const d = new DaemonProcess(['--plugin', 'nvml', '--sink', 'stdout', '--interval', '100ms'], fake.env());
  try {
    await waitFor('errors counted', () => pick(d.points(), 'l9gpu.collector.errors', { 'l9gpu.plugin': 'nvml' }).some((p) => p.value >= 3));
    assert.match(
      d.stderr,
      new RegExp(
        String.raw`collection failed plugin=nvml error="nvmlInit_v2: Driver Not Loaded \(9\): NVML ` +
          String.raw`couldn't communicate with the NVIDIA driver\. Make sure that the NVIDIA driver ` +
          String.raw`is installed and loaded \(lsmod \| grep nvidia; modprobe nvidia; dmesg \| grep ` +
          String.raw`-i nvrm\) \(tried again with a backoff, 1 s doubling to 60 s\)"`,
      ),
    );
    assert.equal(d.stderr.match(/collection failed plugin=nvml/g)?.length, 1, `said once, not once a tick: ${d.stderr}`);
    fake.write({ init_error: 0, devices: [h100(0)] });
    await waitFor('samples after the driver loads', () => pick(d.points(), 'gpu.utilization').length > 0, 15_000);
    await d.waitStderr(/plugin recovered plugin=nvml/);
  } finally {
    assert.equal(await d.stop(), 0);
  }
});

test('a missing library: a clear error in the daemon and in doctor', async () => {
  const r = await runCli(['daemon', '--once', '--plugin', 'nvml', '--sink', 'stdout'], {
    L9GPU_NVML_LIBRARY: '/nonexistent/libnvidia-ml.so.1',
  });
  assert.equal(r.status, 1, 'the one plugin asked for failed');
  // a one-shot promises no retry
  assert.match(
    r.stderr,
    new RegExp(
      String.raw`collection failed plugin=nvml error="cannot load NVML library ` +
        String.raw`\/nonexistent\/libnvidia-ml.so.1: Failed to load shared library: .* \(\[nvml\] ` +
        String.raw`library or L9GPU_NVML_LIBRARY\)"\n`,
    ),
  );
  const doc = await runCli(['doctor'], { L9GPU_PLUGINS: 'nvml', L9GPU_NVML_LIBRARY: '/nonexistent/libnvidia-ml.so.1' });
  assert.equal(doc.status, 1);
  assert.match(doc.stdout, /FAIL nvml\s+enabled\s+\/nonexistent\/libnvidia-ml.so.1 not found/);
  const fake = new FakeNvml({ driver_version: '550.54.15', devices: [h100(0), h100(1)] });
  const ok = await runCli(['doctor'], { L9GPU_PLUGINS: 'nvml', ...fake.env() });
  assert.match(ok.stdout, /ok\s+nvml\s+enabled\s+driver 550.54.15, 2 GPU\(s\) via \S+libnvidia-ml.so.1/);
  // a bare name as dlopen() looks for it: found through LD_LIBRARY_PATH, or said missing without loading koffi
  const libDir = dirname(fake.env().L9GPU_NVML_LIBRARY!);
  const bare = await runCli(['doctor'], {
    ...fake.env(),
    L9GPU_PLUGINS: 'nvml',
    L9GPU_NVML_LIBRARY: 'libnvidia-ml.so.1',
    LD_LIBRARY_PATH: libDir,
  });
  assert.match(bare.stdout, /ok\s+nvml\s+enabled\s+driver 550.54.15, 2 GPU\(s\) via libnvidia-ml.so.1/);
  const none = await runCli(['doctor'], { L9GPU_PLUGINS: 'nvml', L9GPU_NVML_LIBRARY: 'libl9gpu-absent.so.1' });
  assert.match(
    none.stdout,
    new RegExp(
      String.raw`FAIL nvml\s+enabled\s+libl9gpu-absent.so.1 not found by the dynamic loader ` +
        String.raw`\(LD_LIBRARY_PATH, \/etc\/ld.so.cache, \/usr\/lib\): no NVIDIA driver`,
    ),
  );
});

test('loaderMayFind: a superset of where dlopen() looks (LD_LIBRARY_PATH, the cache, the default folders)', () => {
  assert.equal(loaderMayFind('libc.so.6', {}), true, 'in the cache and the multiarch folder');
  assert.equal(loaderMayFind('libl9gpu-absent.so.1', {}), false);
  const d = tempDir();
  writeFileSync(join(d, 'libl9gpu-absent.so.1'), '');
  assert.equal(loaderMayFind('libl9gpu-absent.so.1', { LD_LIBRARY_PATH: `/nonexistent:${d}` }), true);
});

test(
  'plugins = auto with a lost GPU: NVIDIA monitoring stays on; daemon --once and gpus report ' + 'the healthy GPU and the lost one',
  async () => {
    // GPU 1 was opened at init and then fell off the bus: its queries answer GPU_IS_LOST (15)
    const gpus = [h100(0), h100(1, { errors: { nvmlDeviceGetUtilizationRates: 15 } })];
    const fake = new FakeNvml({ driver_version: '550.54.15', devices: gpus });
    const r = await runCli(['daemon', '--once', '--sink', 'stdout'], fake.env());
    assert.equal(r.status, 0, r.stderr);
    const pts = parseLines(r.stdout);
    assert.equal(one(pts, 'gpu.utilization', { 'gpu.uuid': gpus[0]!.uuid }), 0.87, 'the healthy GPU is sampled');
    assert.equal(one(pts, 'gpu.lost', { 'gpu.uuid': gpus[1]!.uuid }), 1, 'the lost one is reported as lost');
    assert.match(r.stderr, /GPU 1 \(GPU-01\S+\) is lost \(NVML_ERROR_GPU_IS_LOST\)/);
    const g = await runCli(['gpus', '--json'], fake.env());
    assert.equal(g.status, 0, g.stderr);
    const listed = (JSON.parse(g.stdout) as { gpus: { uuid: string; lost?: boolean }[] }).gpus;
    assert.deepEqual(
      listed.map((x) => [x.uuid, x.lost ?? false]),
      [
        [gpus[0]!.uuid, false],
        [gpus[1]!.uuid, true],
      ],
    );
  },
);

test(
  'a library without nvmlDeviceGetTemperature (deprecated in 13.0) or nvmlEventSetWait_v2 ' +
    'loads: temperature through nvmlDeviceGetTemperatureV, Xid counting off, said once',
  async () => {
    const fake = new FakeNvml({ driver_version: '580.65.06', devices: [h100(0)] });
    const d = new DaemonProcess(['--plugin', 'nvml', '--sink', 'stdout', '--interval', '100ms'], fake.env('lean'));
    try {
      await waitFor('3 collections', () => pick(d.points(), 'gpu.utilization').length >= 3);
      assert.equal(
        one(d.points().slice(-60), 'gpu.temperature', { 'gpu.temperature.sensor': 'edge' }),
        45,
        'nvmlDeviceGetTemperatureV (the fake checks its struct version)',
      );
      await d.waitStderr(
        /lacks nvmlEventSetCreate\/nvmlDeviceRegisterEvents\/nvmlEventSetWait_v2\/nvmlEventSetFree: Xid errors will not be counted/,
      );
      assert.equal(d.stderr.split('Xid errors will not be counted').length - 1, 1, 'said once');
      assert.doesNotMatch(d.stderr, /collection failed/);
    } finally {
      assert.equal(await d.stop(), 0, d.stderr);
    }
  },
);

test(
  'MIG mode on: no device utilization (NOT_SUPPORTED, as on real GPUs), said why; MIG mode ' + 'off again: utilization comes back',
  async () => {
    const on = h100(0, {
      name: 'NVIDIA A100-SXM4-40GB',
      mig_mode: 1,
      mig_max: 7,
      mig: [
        {
          slot: 0,
          uuid: 'MIG-cccccccc-1111-2222-3333-444444444444',
          name: 'NVIDIA A100-SXM4-40GB MIG 7g.40gb',
          gi: 0,
          ci: 0,
          mem_total: 40_000_000_000,
          mem_used: 1,
          mem_free: 39_999_999_999,
        },
      ],
    });
    const fake = new FakeNvml({ devices: [on] });
    const d = new DaemonProcess(['--plugin', 'nvml', '--sink', 'stdout', '--interval', '100ms'], fake.env());
    try {
      await waitFor('3 collections', () => pick(d.points(), 'gpu.memory.total', { 'gpu.uuid': on.uuid }).length >= 3);
      assert.equal(pick(d.points(), 'gpu.utilization', { 'gpu.uuid': on.uuid }).length, 0);
      await d.waitStderr(/utilization is not supported while MIG mode is on: not read until MIG mode changes/);
      const mark = d.stdout.length;
      fake.write({ devices: [h100(0, { name: 'NVIDIA A100-SXM4-40GB', uuid: on.uuid, mig_mode: 0, util_gpu: 64 })] });
      await d.waitStderr(/MIG mode turned off: every field is tried again/);
      const back = await waitFor('utilization again', () =>
        d.pointsSince(mark).find((p) => p.name === 'gpu.utilization' && p.attributes['gpu.uuid'] === on.uuid),
      );
      assert.equal(back.value, 0.64);
    } finally {
      assert.equal(await d.stop(), 0, d.stderr);
    }
  },
);

test(
  "interval means from NVML's sample buffers: 1 s bursts read every 2 s give the exact mean " + '(0.5), not 0 or 1, and the peak',
  async () => {
    // the driver's samples every 200 ms: 1 s at 100 %, 1 s at 0 %; power 300 W then 100 W. Ten consecutive samples
    // (one 2 s tick) hold five of each whatever the phase: one reading a tick would say 1 or 0
    const g = h100(0, {
      sample_period_ms: 200,
      bursts: {
        util_gpu: { on_ms: 1000, off_ms: 1000, on: 100, off: 0 },
        power_mw: { on_ms: 1000, off_ms: 1000, on: 300_000, off: 100_000 },
      },
    });
    const fake = new FakeNvml({ devices: [g] });
    const d = new DaemonProcess(['--plugin', 'nvml', '--sink', 'stdout', '--interval', '2s'], fake.env());
    try {
      const maxes = await waitFor(
        '4 interval peaks',
        () => {
          const m = pick(d.points(), 'gpu.utilization.max');
          return m.length >= 4 ? m : undefined;
        },
        30_000,
      );
      const means = pick(d.points(), 'gpu.utilization').slice(1); // the first tick has no interval yet: one reading
      assert.ok(means.length >= 4);
      // a tick that lands a little early or late holds 9 or 11 samples (4/9..5/9), never 0 or 1 as one reading would
      const values = means.map((p) => p.value);
      for (const v of values) assert.ok(v >= 4 / 9 - 1e-9 && v <= 5 / 9 + 1e-9, `interval mean ${v} of ${values.join(', ')}`);
      assert.equal(
        [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)],
        0.5,
        `most windows hold ten samples, five of each: ${values.join(', ')}`,
      );
      assert.ok(
        maxes.every((p) => p.value === 1),
        'the peak of each interval',
      );
      const watts = pick(d.points(), 'gpu.power.draw')
        .slice(1)
        .map((p) => p.value);
      assert.equal([...watts].sort((a, b) => a - b)[Math.floor(watts.length / 2)], 200, `mean power ${watts.join(', ')}`);
      assert.ok(pick(d.points(), 'gpu.power.draw.max').every((p) => p.value === 300));
    } finally {
      assert.equal(await d.stop(), 0, d.stderr);
    }
  },
);

test(
  'GPM on Hopper: SM, engine, tensor and DRAM activity over each interval from the second ' +
    'tick; a GPU without GPM and a library without it are skipped cleanly',
  async () => {
    const ampere = { ...h100(1, { name: 'NVIDIA A100-SXM4-80GB' }), gpm: undefined }; // before Hopper: the support query says no
    const fake = new FakeNvml({ devices: [h100(0), ampere] });
    const d = new DaemonProcess(['--plugin', 'nvml', '--sink', 'stdout', '--interval', '1s'], fake.env());
    try {
      const g0 = { 'gpu.uuid': fake.desc.devices[0]!.uuid };
      await waitFor('3 GPM intervals', () => pick(d.points(), 'gpu.sm.active', g0).length >= 3, 30_000);
      const pts = d.points();
      const ticks = pick(pts, 'gpu.memory.total', g0).length;
      assert.ok(pick(pts, 'gpu.sm.active', g0).length < ticks, 'the first tick only takes the start sample');
      // exact: the fake's counters integrate constant percentages, so every window's mean is the percentage
      const want: Record<string, number> = {
        'gpu.engine.active': 0.85,
        'gpu.sm.active': 0.7,
        'gpu.sm.occupancy': 0.35,
        'gpu.tensor.active': 0.4,
        'gpu.dram.active': 0.55,
      };
      for (const [name, v] of Object.entries(want)) {
        const got = pick(pts, name, g0);
        assert.ok(got.length >= 3, name);
        assert.ok(
          got.every((p) => p.value === v && p.unit === '1'),
          `${name}: ${got.map((p) => p.value).join(', ')}`,
        );
      }
      assert.ok(
        pick(pts, 'gpu.utilization', g0).every((p) => p.value === 0.87),
        "on a whole GPU, gpu.utilization stays NVML's device utilization",
      );
      for (const name of GPM_NAMES) assert.equal(pick(pts, name, { 'gpu.uuid': ampere.uuid }).length, 0, `${name} on the A100`);
      await d.waitStderr(/GPU 1 \(GPU-[^)]+\): SM\/engine activity \(GPM\) is not supported/);
      assert.equal(d.stderr.split('SM/engine activity (GPM) is not supported').length - 1, 1, 'said once');
    } finally {
      assert.equal(await d.stop(), 0, d.stderr);
    }
    assert.doesNotMatch(
      d.stderr,
      /fake NVML: misuse/,
      'every GPM sample freed before nvmlShutdown; the 550 driver not asked for a GPM id its nvml.h lacks',
    );

    const old = new DaemonProcess(
      ['--plugin', 'nvml', '--sink', 'stdout', '--interval', '1s'],
      new FakeNvml({ devices: [h100(0)] }).env('r470'),
    );
    try {
      await waitFor('3 collections', () => pick(old.points(), 'gpu.memory.total').length >= 3, 30_000);
      for (const name of GPM_NAMES) assert.equal(pick(old.points(), name).length, 0, `${name} without the GPM entry points`);
    } finally {
      assert.equal(await old.stop(), 0, old.stderr);
    }
    const doctor = await runCli(['doctor'], new FakeNvml({ devices: [h100(0)] }).env('r470'));
    assert.match(
      doctor.stdout,
      /this library lacks [^\n]*gpm \(no SM\/engine\/tensor\/pipe\/DRAM activity or NVLink traffic, no MIG instance utilization\)/,
      doctor.stdout,
    );
  },
);

test(
  "GPM on a MIG GPU: each instance reports its GPU instance's activity, as gpu.utilization " +
    "too (1 s bursts read every 2 s of the GPU's time: the exact mean); a GI shared by two " +
    'compute instances gives neither figures; a GI made again is a new window; samples are ' +
    'freed when a GI goes and when the GPU is lost',
  async () => {
    const mig = (slot: number, uuid: string, gi: number, ci: number, gpm?: Record<string, unknown>) => ({
      slot,
      uuid,
      name: 'NVIDIA H100 80GB HBM3 MIG 3g.40gb',
      gi,
      ci,
      mem_total: 42_949_672_960,
      mem_used: 1_000_000,
      mem_free: 42_948_672_960,
      ...(gpm ? { gpm } : {}),
    });
    const [A, B, C, D] = ['MIG-aaaaaaaa', 'MIG-bbbbbbbb', 'MIG-cccccccc', 'MIG-dddddddd'].map(
      (p) => `${p}-1111-2222-3333-444444444444`,
    ) as [string, string, string, string];
    const bursts = { graphics: { on_ms: 1000, off_ms: 1000, on: 100, off: 0 } };
    const parent = (instances: unknown[]) => h100(0, { mig_mode: 1, mig_max: 7, mig: instances });
    const fake = new FakeNvml({
      devices: [
        parent([
          mig(0, A, 1, 0, { sm: 30, bursts }),
          mig(4, C, 2, 0, { graphics: 20, sm: 10 }),
          mig(5, B, 3, 0),
          mig(6, D, 3, 1, { graphics: 70 }),
        ]),
      ],
    });
    // the GPU's counters at twice the wall clock's pace: each 1 s tick is a 2 s window of the description's time
    const d = new DaemonProcess(['--plugin', 'nvml', '--sink', 'stdout', '--interval', '1s'], {
      ...fake.env(),
      FAKE_NVML_TRACE_GPM: '1',
      FAKE_NVML_GPM_TIME_SCALE: '2',
    });
    const uuid = fake.desc.devices[0]!.uuid;
    const live = () => Number([...d.stderr.matchAll(/fake NVML: GPM samples live: (\d+)/g)].at(-1)?.[1]);
    try {
      const utilA = await waitFor(
        '5 intervals of GI 1',
        () => {
          const u = pick(d.points(), 'gpu.utilization', { 'gpu.uuid': A });
          return u.length >= 5 ? u : undefined;
        },
        60_000,
      );
      const pts = d.points();
      // GPM counters refresh every 100 ms: a 2 s tick spans 19 to 21 refreshes, 9 to 11 of them busy; most span 20, 10 busy
      const values = utilA.map((p) => p.value);
      for (const v of values) assert.ok(v >= 9 / 21 - 1e-9 && v <= 11 / 19 + 1e-9, `interval mean ${v} of ${values.join(', ')}`);
      assert.equal(
        [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)],
        0.5,
        `most windows hold ten busy refreshes of twenty: ${values.join(', ')}`,
      );
      assert.deepEqual(
        pick(pts, 'gpu.engine.active', { 'gpu.uuid': A }).map((p) => p.value),
        values,
        'gpu.utilization of an instance is its engine activity',
      );
      for (const ci of [B, D])
        assert.equal(
          pick(pts, 'gpu.utilization', { 'gpu.uuid': ci }).length + pick(pts, 'gpu.engine.active', { 'gpu.uuid': ci }).length,
          0,
          "GI 3 holds two compute instances (two jobs): its activity is neither one's",
        );
      assert.equal(
        d.stderr.split('GPU instance 3 holds 2 compute instances: NVML counts activity (GPM) by GPU instance only').length - 1,
        1,
        'said once',
      );
      assert.equal(live(), 4, 'two sample handles for each GPU instance read (1 and 2), none for the shared one');
      assert.ok(pick(pts, 'gpu.sm.active', { 'gpu.uuid': A }).every((p) => p.value === 0.3));
      const c = pick(pts, 'gpu.utilization', { 'gpu.uuid': C });
      assert.ok(c.length >= 4 && c.every((p) => p.value === 0.2), `GI 2: ${c.map((p) => p.value).join(', ')}`);
      assert.ok(pick(pts, 'gpu.sm.active', { 'gpu.uuid': C }).every((p) => p.value === 0.1));
      const a = pick(pts, 'gpu.utilization', { 'gpu.uuid': A })[0]!.attributes;
      assert.equal(a['gpu.mig.parent_uuid'], uuid);
      assert.equal(a['gpu.mig.instance_id'], 1);
      assert.equal(pick(pts, 'gpu.utilization', { 'gpu.uuid': uuid }).length, 0, 'the parent in MIG mode: no device utilization');
      assert.equal(pick(pts, 'gpu.engine.active', { 'gpu.uuid': uuid }).length, 0);

      // GI 2 destroyed and made again under the same id, busier (and GI 3 destroyed): GI 2's first window starts
      // afresh (a difference across the two would be nonsense: the old GI's counters against the new one's)
      const mark = d.stdout.length;
      const E = 'MIG-ffffffff-1111-2222-3333-444444444444';
      fake.write({ devices: [parent([mig(0, A, 1, 0, { sm: 30, bursts }), mig(4, E, 2, 0, { graphics: 60, sm: 10 })])] });
      const fresh = () => d.pointsSince(mark);
      await waitFor('3 intervals of the new GI 2', () => pick(fresh(), 'gpu.utilization', { 'gpu.uuid': E }).length >= 3, 60_000);
      const ev = pick(fresh(), 'gpu.utilization', { 'gpu.uuid': E }).map((p) => p.value);
      assert.ok(
        ev.every((v) => v === 0.6),
        `new GI 2: ${ev.join(', ')}`,
      );
      assert.ok(pick(fresh(), 'gpu.memory.total', { 'gpu.uuid': E }).length > ev.length, 'its first tick only took the start sample');
      assert.equal(live(), 4, 'the same two windows (GI 2 reseeded in place)');
      fake.write({ devices: [parent([mig(0, A, 1, 0, { sm: 30, bursts })])] });
      await waitFor("GI 2's samples freed when it goes", () => live() === 2, 30_000);

      // a lost GPU ends the NVML session: its GPM samples are freed before nvmlShutdown, never in the next session
      fake.write({ devices: [{ ...parent([mig(0, A, 1, 0, { sm: 30, bursts })]), lost: true }] });
      await d.waitStderr(/is lost \(NVML_ERROR_GPU_IS_LOST\)/);
      await waitFor('every sample freed with the session', () => live() === 0, 30_000);
      const back = d.stdout.length;
      fake.write({ devices: [parent([mig(0, A, 1, 0, { sm: 30, bursts })])] });
      await waitFor(
        'GI 1 again after the re-init',
        () => pick(d.pointsSince(back), 'gpu.sm.active', { 'gpu.uuid': A }).length >= 2,
        60_000,
      );
    } finally {
      assert.equal(await d.stop(), 0, d.stderr);
    }
    assert.doesNotMatch(d.stderr, /fake NVML: misuse/);
  },
);

test("a MIG job's report has utilization: its instance's GPM engine activity, attributed and rolled up by the daemon", async () => {
  const d0 = tempDir('l9gpu-mig-job-');
  chmodSync(d0, 0o755);
  const slurm = slurmControllerDown(d0, 'gpunode1');
  const state = slurm.state;
  const config = join(d0, 'l9gpu.ini');
  writeFileSync(config, `[daemon]\n${slurm.daemon}interval = 1s\n${slurm.slurm}`);
  const MIG = 'MIG-eeeeeeee-1111-2222-3333-444444444444';
  const fake = new FakeNvml({
    devices: [
      h100(0, {
        mig_mode: 1,
        mig_max: 7,
        mig: [
          {
            slot: 0,
            uuid: MIG,
            name: 'NVIDIA H100 80GB HBM3 MIG 1g.10gb',
            gi: 3,
            ci: 0,
            mem_total: 10_737_418_240,
            mem_used: 5_368_709_120,
            mem_free: 5_368_709_120,
            gpm: { graphics: 42, sm: 30 },
          },
        ],
      }),
    ],
  });
  const db = openStore(state);
  const start = Date.now();
  recordStart(
    db,
    { jobId: '88', runKey: 'r0', user: 'alice', uid: 1001, partition: 'gpu' },
    [{ uuid: MIG, shared: false }],
    'prolog',
    start,
  );
  db.close();
  const d = new DaemonProcess(['--config', config, '--plugin', 'nvml', '--sink', 'stdout'], fake.env());
  try {
    const pts = await waitFor(
      '3 attributed utilization points of the instance',
      () => {
        const u = pick(d.points(), 'gpu.utilization', { 'gpu.uuid': MIG, 'slurm.job.id': '88' });
        return u.length >= 3 ? u : undefined;
      },
      30_000,
    );
    assert.ok(pts.every((p) => p.value === 0.42 && p.attributes['slurm.user'] === 'alice'));
  } finally {
    assert.equal(await d.stop(), 0, d.stderr);
  }
  const rw = openStore(state);
  recordEnd(rw, { jobId: '88', runKey: 'r0' }, { endTime: Date.now(), state: 'COMPLETED', exitCode: 0 }, [], 'epilog');
  rw.close();
  const r = await runCli(['jobs', 'show', '88', '--json', '--config', config]);
  assert.equal(r.status, 0, r.stderr);
  const report = JSON.parse(r.stdout) as {
    gpus: { uuid: string; figures: { util_mean: number | null; samples: number } }[];
    totals: { util_mean: number | null };
  };
  assert.equal(report.gpus.length, 1);
  assert.equal(report.gpus[0]!.uuid, MIG);
  assert.equal(report.gpus[0]!.figures.util_mean, 0.42, "every sample of the instance is its GI's activity");
  assert.equal(report.totals.util_mean, 0.42);
  const table = await runCli(['jobs', 'show', '88', '--config', config]);
  assert.match(table.stdout, /42\s*%/);
  assert.match(
    table.stdout,
    new RegExp(
      String.raw`is a MIG instance: its utilization is its GPU instance's engine activity \(GPM, ` +
        String.raw`Hopper and later\), and NVML measures no power or energy per instance`,
    ),
  );
});

test(
  'GPM on a MIG GPU: a tick whose MIG-mode read fails reads no GPM, and the next ones go on ' + '(not switched off for 10 minutes)',
  async () => {
    const MIG = 'MIG-99999999-1111-2222-3333-444444444444';
    const gpu = (errors: Record<string, number>) =>
      h100(0, {
        mig_mode: 1,
        mig_max: 7,
        errors,
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
            gpm: { graphics: 33 },
          },
        ],
      });
    const fake = new FakeNvml({ devices: [gpu({})] });
    const d = new DaemonProcess([...stateEveryTick(), '--plugin', 'nvml', '--sink', 'stdout', '--interval', '1s'], fake.env());
    try {
      await waitFor('2 GPM intervals', () => pick(d.points(), 'gpu.utilization', { 'gpu.uuid': MIG }).length >= 2, 30_000);
      fake.write({ devices: [gpu({ nvmlDeviceGetMigMode: 999 })] });
      await d.waitStderr(/nvmlDeviceGetMigMode|mig: Unknown Error \(999\)/);
      const mark = d.stdout.length;
      fake.write({ devices: [gpu({})] });
      const again = await waitFor(
        'GPM again',
        () => {
          const u = pick(d.pointsSince(mark), 'gpu.utilization', { 'gpu.uuid': MIG });
          return u.length >= 2 ? u : undefined;
        },
        30_000,
      );
      assert.ok(again.every((p) => p.value === 0.33));
      assert.doesNotMatch(d.stderr, /SM\/engine activity \(GPM\) is not supported/);
    } finally {
      assert.equal(await d.stop(), 0, d.stderr);
    }
  },
);
