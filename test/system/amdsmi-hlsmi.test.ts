/**
 * AMD (amd-smi) and Intel Gaudi (hl-smi) plugins end to end through
 * `l9gpu daemon --once`, with the tools replaced by executables on PATH that
 * print recorded real-format output.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { emitRows, parseCsv } from '../../plugins/hlsmi/parse.js';
import { gpuEntries, leaf } from '../../plugins/amdsmi/parse.js';
import { DaemonProcess, parseLines, runCli, type JsonPoint, ownStateDir } from '../helpers/daemon.js';
import { AMD_TD, FakeTools, HL_TD } from '../helpers/fake-tools.js';
import { PointBuffer } from '../../src/core/metrics/model.js';
import { waitFor } from '../helpers/wait.js';

// beside the other files of the system lane: state in a folder of this file's own, not the node's /var/lib/l9gpu
ownStateDir();

const MiB = 1024 * 1024;

function get(pts: JsonPoint[], name: string, attrs: Record<string, unknown>): number | undefined {
  const m = pts.filter((p) => p.name === name && Object.entries(attrs).every(([k, v]) => p.attributes[k] === v));
  assert.ok(m.length <= 1, `${name} ${JSON.stringify(attrs)}: ${m.length} points`);
  return m[0]?.value;
}

test('amd-smi {"gpu_data": [...]} output: every field in the registry unit, N/A skipped', async () => {
  const t = new FakeTools().amd('mi300x');
  const r = await runCli(['daemon', '--once', '--plugin', 'amdsmi', '--sink', 'stdout'], t.env());
  assert.equal(r.status, 0, r.stderr);
  const pts = parseLines(r.stdout).filter((p) => p.name.startsWith('gpu.'));
  const g0 = { 'gpu.uuid': 'ccff74a1-0000-1000-8031-7b4fd9c1e28f' };
  const first = pts.find((p) => p.attributes['gpu.uuid'] === g0['gpu.uuid'])!;
  assert.deepEqual(
    { ...first.attributes },
    {
      'gpu.index': 0,
      'gpu.uuid': g0['gpu.uuid'],
      'gpu.model': 'AMD Instinct MI300X',
      'gpu.vendor': 'amd',
      'gpu.pci.bus_id': '0000:0c:00.0',
    },
  );
  assert.equal(get(pts, 'gpu.utilization', g0), 0.93, 'percent -> ratio, the same as NVIDIA');
  assert.equal(get(pts, 'gpu.engine.active', g0), 0.93, "the graphics engine's busy share is GPM GRAPHICS_UTIL's meaning too");
  // umc_activity is the memory controller's busy share, not bandwidth over the maximum: no gpu.dram.active; no SM or pipe figure at all
  for (const name of [
    'gpu.dram.active',
    'gpu.sm.active',
    'gpu.sm.occupancy',
    'gpu.tensor.active',
    'gpu.pipe.active',
    'gpu.pcie.throughput',
  ])
    assert.equal(pts.filter((p) => p.name === name).length, 0, name);
  assert.equal(get(pts, 'gpu.memory.controller.utilization', g0), 0.41);
  assert.equal(get(pts, 'gpu.memory.total', g0), 196592 * MiB, 'amd-smi MB is MiB');
  assert.equal(get(pts, 'gpu.memory.used', g0), 181203 * MiB);
  assert.equal(get(pts, 'gpu.memory.free', g0), 15389 * MiB);
  assert.equal(
    get(pts, 'gpu.temperature', { ...g0, 'gpu.temperature.sensor': 'edge' }),
    undefined,
    'edge is N/A on MI300X: skipped, not 0',
  );
  assert.equal(get(pts, 'gpu.temperature', { ...g0, 'gpu.temperature.sensor': 'hotspot' }), 71);
  assert.equal(get(pts, 'gpu.temperature', { ...g0, 'gpu.temperature.sensor': 'memory' }), 58);
  assert.equal(get(pts, 'gpu.power.draw', g0), 612);
  assert.equal(get(pts, 'gpu.power.limit', g0), 750, 'from static limit.socket_power');
  assert.equal(get(pts, 'gpu.power.limit', { 'gpu.uuid': '36ff74a1-0000-1000-80ba-bb7c3f5a0c54' }), 700);
  assert.equal(get(pts, 'gpu.energy.consumption', g0), 4738123.891);
  assert.equal(get(pts, 'gpu.clock.frequency', { ...g0, 'gpu.clock.type': 'graphics' }), 2100e6);
  assert.equal(get(pts, 'gpu.clock.frequency', { ...g0, 'gpu.clock.type': 'memory' }), 1300e6);
  assert.equal(get(pts, 'gpu.ecc.errors', { ...g0, 'error.type': 'corrected', 'gpu.ecc.scope': 'volatile' }), 12);
  assert.equal(get(pts, 'gpu.ecc.errors', { ...g0, 'error.type': 'uncorrected', 'gpu.ecc.scope': 'volatile' }), 0);
  assert.equal(get(pts, 'gpu.ecc.block.errors', { ...g0, 'error.type': 'corrected', 'gpu.ecc.block': 'umc' }), 10);
  assert.equal(get(pts, 'gpu.ecc.block.errors', { ...g0, 'error.type': 'corrected', 'gpu.ecc.block': 'gfx' }), 2);
  assert.equal(get(pts, 'gpu.ecc.block.errors', { ...g0, 'error.type': 'corrected', 'gpu.ecc.block': 'pcie_bif' }), undefined);
  assert.equal(get(pts, 'gpu.pcie.replays', g0), 7);
  assert.equal(get(pts, 'gpu.fan.speed_ratio', g0), undefined, 'N/A');
  assert.equal(get(pts, 'gpu.process.count', g0), 1);
  assert.equal(get(pts, 'gpu.process.memory.used', { ...g0, 'process.pid': 2391045 }), 178012 * MiB);
  assert.equal(get(pts, 'gpu.process.count', { 'gpu.uuid': '36ff74a1-0000-1000-80ba-bb7c3f5a0c54' }), 0);
  for (const p of pts.filter((x) => x.name === 'gpu.energy.consumption' || x.name === 'gpu.ecc.errors')) assert.equal(p.kind, 'sum');
  assert.deepEqual(t.calls('amd-smi').sort(), ['list --json', 'metric --json', 'process --json', 'static --json']);
  // static's driver.version, asic.asic_serial (this static.json has no board section) and vbios.version, which GPU 1's lacks
  assert.deepEqual(
    pts
      .filter((p) => p.name === 'gpu.info')
      .map((p) => [
        p.attributes['gpu.index'],
        p.value,
        p.attributes['gpu.driver.version'],
        p.attributes['gpu.serial_number'],
        p.attributes['gpu.firmware.version'],
      ]),
    [
      [0, 1, '6.8.5', '0x7B4FD9C1E28F0000', '022.040.003.042.000001'],
      [1, 1, '6.8.5', '0xBB7C3F5A0C540000', undefined],
    ],
  );
  assert.deepEqual(
    [...new Set(pts.map((p) => p.name))].sort(),
    [
      'gpu.clock.frequency',
      'gpu.ecc.block.errors',
      'gpu.ecc.errors',
      'gpu.energy.consumption',
      'gpu.engine.active',
      'gpu.health',
      'gpu.health.score',
      'gpu.info',
      'gpu.memory.capacity.utilization',
      'gpu.memory.controller.utilization',
      'gpu.memory.free',
      'gpu.memory.total',
      'gpu.memory.used',
      'gpu.pcie.replays',
      'gpu.power.draw',
      'gpu.power.limit',
      'gpu.process.count',
      'gpu.process.memory.used',
      'gpu.temperature',
      'gpu.utilization',
    ],
    'every metric amd-smi can give (fan is N/A on MI300X; asserted in the W7900 case), and the health the daemon judges from them',
  );
});

test('amd-smi bare-list output of older releases, other units (uJ), and a process list message', async () => {
  const t = new FakeTools().amd('w7900');
  const r = await runCli(['daemon', '--once', '--plugin', 'amdsmi', '--sink', 'stdout'], t.env());
  assert.equal(r.status, 0, r.stderr);
  const pts = parseLines(r.stdout);
  const g = { 'gpu.uuid': 'a7ff7448-0000-1000-8000-5c63e2a4f1d0' };
  assert.equal(get(pts, 'gpu.utilization', g), 0.42);
  assert.equal(get(pts, 'gpu.temperature', { ...g, 'gpu.temperature.sensor': 'edge' }), 34);
  assert.equal(get(pts, 'gpu.energy.consumption', g), 81.234567, 'uJ -> J');
  assert.equal(get(pts, 'gpu.power.limit', g), 241, 'socket_power N/A: max_power');
  assert.equal(get(pts, 'gpu.fan.speed_ratio', g), 0.17);
  assert.equal(get(pts, 'gpu.ecc.errors', { ...g, 'error.type': 'corrected', 'gpu.ecc.scope': 'volatile' }), undefined, 'N/A');
  assert.equal(get(pts, 'gpu.process.count', g), 0);
  assert.equal(pts.find((p) => p.name === 'gpu.utilization')!.attributes['gpu.model'], 'AMD Radeon PRO W7900');
  assert.equal(pts.filter((p) => p.name === 'gpu.info').length, 0, 'a static output without driver, serial or VBIOS: no gpu.info');
});

test('a failing or missing amd-smi is a clear, counted error and a FAIL in doctor', async () => {
  const t = new FakeTools().amd('mi300x').fail('amd-smi', join(AMD_TD, 'driver-not-loaded.stderr'));
  const d = new DaemonProcess(['--plugin', 'amdsmi,sim', '--sink', 'stdout', '--interval', '100ms'], { ...t.env(), L9GPU_SINKS: 'stdout' });
  try {
    await waitFor('errors counted while sim goes on', () => {
      const pts = d.points();
      return (
        pts.some((p) => p.name === 'l9gpu.collector.errors' && p.attributes['l9gpu.plugin'] === 'amdsmi' && p.value >= 3) &&
        pts.some((p) => p.name === 'gpu.utilization')
      );
    });
    assert.match(
      d.stderr,
      /collection failed plugin=amdsmi error="\S+\/amd-smi (list|static) --json: exit code 1: ERROR:root:Unable to detect any GPU devices/,
    );
    // the first, cold collection may also time out at 100 ms on a loaded machine (a warning of its own, and the
    // amd-smi it cut a failure of another kind): this failure itself is said once, however many ticks repeat it
    const said = d.stderr.split('\n').filter((l) => /collection failed plugin=amdsmi .*Unable to detect any GPU devices/.test(l));
    assert.equal(said.length, 1, `said once:\n${d.stderr}`);
  } finally {
    assert.equal(await d.stop(), 0);
  }
  const doc = await runCli(['doctor'], { ...t.env(), L9GPU_PLUGINS: 'amdsmi' });
  assert.match(doc.stdout, /FAIL amdsmi\s+enabled\s+\S+amd-smi list --json: exit code 1: ERROR:root:Unable to detect/);
  const none = await runCli(['doctor'], { PATH: '/nonexistent', L9GPU_PLUGINS: 'amdsmi,hlsmi' });
  assert.match(none.stdout, /FAIL amdsmi\s+enabled\s+amd-smi not found in PATH or \/opt\/rocm\/bin/);
  assert.match(none.stdout, /FAIL hlsmi\s+enabled\s+hl-smi not found in PATH/);
});

test('hl-smi CSV with units: mapped by header, converted, [N/A] skipped, refreshed every tick', async () => {
  const t = new FakeTools().hl('units');
  const d = new DaemonProcess(['--plugin', 'hlsmi', '--sink', 'stdout', '--interval', '100ms'], t.env());
  try {
    await waitFor(
      '3 collections',
      () => d.points().filter((p) => p.name === 'gpu.utilization' && p.attributes['gpu.index'] === 0).length >= 3,
    );
  } finally {
    assert.equal(await d.stop(), 0);
  }
  assert.ok(t.calls('hl-smi').length >= 3, 'hl-smi runs every tick, not once');
  assert.match(
    t.calls('hl-smi')[0]!,
    /^-Q index,uuid,name,bus_id,driver_version,temperature\.aip,utilization\.aip,memory\.total,.* -f csv$/,
  );
  const pts = d.points();
  const last = (uuid: string, name: string, extra: Record<string, unknown> = {}) =>
    pts
      .filter((p) => p.name === name && p.attributes['gpu.uuid'] === uuid && Object.entries(extra).every(([k, v]) => p.attributes[k] === v))
      .at(-1)?.value;
  const g1 = '01P4-HL3090A0-18-U4V176-03-04-04';
  assert.equal(last(g1, 'gpu.utilization'), 0.97);
  assert.equal(last(g1, 'gpu.memory.total'), 131072 * MiB);
  assert.equal(last(g1, 'gpu.memory.used'), 98304 * MiB);
  assert.equal(last(g1, 'gpu.power.draw'), 771);
  assert.equal(last(g1, 'gpu.power.limit'), 900);
  assert.equal(last(g1, 'gpu.temperature', { 'gpu.temperature.sensor': 'edge' }), 51);
  assert.equal(last(g1, 'gpu.ecc.errors', { 'error.type': 'corrected', 'gpu.ecc.scope': 'volatile' }), 1);
  assert.equal(last(g1, 'gpu.info', { 'gpu.driver.version': '1.18.0-ee698fb' }), 1);
  assert.match(t.calls('hl-smi')[0]!, /,serial -f csv$/, "the board's serial number is queried");
  assert.equal(
    pts.filter((x) => x.name === 'gpu.info' && 'gpu.serial_number' in x.attributes).length,
    0,
    'this testdata predates the serial column: no serial made up',
  );
  const p = pts.find((x) => x.attributes['gpu.uuid'] === g1)!;
  assert.equal(p.attributes['gpu.vendor'], 'intel');
  assert.equal(p.attributes['gpu.model'], 'HL-325L');
  assert.equal(p.attributes['gpu.pci.bus_id'], '0000:b3:00.0');
  assert.deepEqual(
    [...new Set(pts.filter((x) => x.name.startsWith('gpu.')).map((x) => x.name))].sort(),
    [
      'gpu.ecc.errors',
      'gpu.health',
      'gpu.health.score',
      'gpu.info',
      'gpu.memory.capacity.utilization',
      'gpu.memory.free',
      'gpu.memory.total',
      'gpu.memory.used',
      'gpu.power.draw',
      'gpu.power.limit',
      'gpu.temperature',
      'gpu.utilization',
    ],
    'every metric hl-smi can give, and the health the daemon judges from them',
  );
  const g2 = '01P4-HL3090A0-18-U4V193-09-01-05';
  assert.equal(last(g2, 'gpu.utilization'), undefined, '[N/A] is skipped, not 0');
  assert.equal(last(g2, 'gpu.memory.total'), 131072 * MiB);
  assert.equal(last(g2, 'gpu.power.draw'), undefined);
});

test('hl-smi: no units in cells, and columns in another order, give the same values', () => {
  for (const f of ['nounits', 'reordered']) {
    const out = new PointBuffer();
    emitRows(parseCsv(readFileSync(join(HL_TD, f, 'hl-smi.csv'), 'utf8')), out, 0);
    const v = (n: string) => out.points.find((p) => p.metric.name === n)!.value;
    assert.equal(v('gpu.utilization'), 0.15, f);
    assert.equal(v('gpu.memory.used'), 512 * MiB, f);
    assert.equal(v('gpu.power.draw'), 103, f);
    assert.equal(v('gpu.power.limit'), 350, f);
    assert.equal(v('gpu.temperature'), 36, f);
    assert.equal(out.points[0]!.attributes['gpu.uuid'], '00P1-HL2000A1-14-P64W99-13-05-03');
  }
});

test(
  'malformed tool output is an error naming the tool; a cell that cannot be read leaves out ' +
    'that field alone, naming the device and the field',
  () => {
    assert.throws(() => parseCsv('index, name\n0, HL-205\n'), /no uuid column in the header/);
    assert.throws(() => parseCsv('index, uuid\n0, a, b\n', 'hl-smi -f csv'), {
      message: 'hl-smi -f csv: line 2 has 3 fields, the header 2',
    });
    const cells = new PointBuffer();
    emitRows(parseCsv('index, uuid, power.draw [W], temperature.aip [C]\n0, X, lots, 41 C\n'), cells, 0);
    assert.deepEqual([...cells.unread], [['hl-smi device 0 power.draw', '"lots" is not a number']]);
    assert.deepEqual(
      cells.points.map((p) => [p.metric.name, p.value]),
      [['gpu.temperature', 41]],
      'the readable field of the same GPU',
    );
    const unit = new PointBuffer();
    emitRows(parseCsv('index, uuid, power.draw [furlongs]\n0, X, 3\n'), unit, 0);
    assert.deepEqual([...unit.unread], [['hl-smi device 0 power.draw', 'unknown unit "furlongs"']]);
    assert.throws(() => gpuEntries('{"error": 1}', 'amd-smi metric --json'), {
      message: 'amd-smi metric --json: neither a list nor {"gpu_data": [...]}',
    });
    assert.throws(() => gpuEntries('Traceback (most recent call last):', 'amd-smi metric --json'), /amd-smi metric --json: not JSON/);
    assert.throws(() => leaf({ value: 5, unit: 'W' }, 'J', 'energy'), { message: 'energy: unit "W" is not a J unit' });
    assert.equal(leaf('N/A', 'W', 'x'), undefined);
    assert.equal(leaf({ value: 'N/A', unit: 'W' }, 'W', 'x'), undefined);
  },
);

test(
  "values outside their metric's range (a utilization of 5, a negative memory size) are " +
    'skipped field by field and said once; the rest of the GPU and the other GPUs are exported',
  async () => {
    // the recorded hl-smi 1.18 output (testdata/units) with two cells of GPU 0 made impossible
    const tools = new FakeTools().hl('units');
    const csv = readFileSync(join(HL_TD, 'units', 'hl-smi.csv'), 'utf8').split('\n');
    csv[1] = csv[1]!.replace(' 0 %,', ' 500 %,').replace(' 672 MiB,', ' -672 MiB,');
    writeFileSync(join(tools.data, 'hl-smi.csv'), csv.join('\n'));
    const d = new DaemonProcess(['--plugin', 'hlsmi', '--sink', 'stdout', '--interval', '200ms'], tools.env());
    try {
      await waitFor(
        'two ticks',
        () =>
          new Set(
            d
              .points()
              .filter((p) => p.name === 'gpu.temperature')
              .map((p) => p.time),
          ).size >= 2,
      );
      const pts = d.points();
      const of = (uuid: string, name: string) => pts.filter((p) => p.attributes['gpu.uuid'] === uuid && p.name === name);
      const [g0, g1] = ['01P4-HL3090A0-18-U4V193-22-07-00', '01P4-HL3090A0-18-U4V176-03-04-04'];
      assert.equal(of(g0, 'gpu.utilization').length, 0, 'not 5 passed on as a utilization');
      assert.equal(of(g0, 'gpu.memory.used').length, 0, 'not a negative size');
      assert.ok(of(g0, 'gpu.temperature').length >= 2 && of(g0, 'gpu.memory.total').length >= 2, "the GPU's other fields");
      assert.ok(of(g1, 'gpu.utilization').every((p) => p.value === 0.97) && of(g1, 'gpu.utilization').length >= 2, 'the other GPU whole');
      assert.equal(
        d.stderr.match(/value out of range: skipped plugin=hlsmi metric=gpu.utilization value=5 gpu=01P4-HL3090A0-18-U4V193-22-07-00/g)
          ?.length,
        1,
        'said once',
      );
      assert.match(d.stderr, /value out of range: skipped plugin=hlsmi metric=gpu.memory.used value=-704643072/);
    } finally {
      assert.equal(await d.stop(), 0, d.stderr);
    }
  },
);

test(
  'a cell of hl-smi or a leaf of amd-smi that is no number: that field of that GPU is left ' +
    "out and said once; the GPU's other fields and the other GPUs are exported",
  async () => {
    // the recorded outputs (hl-smi 1.18 testdata/units, amd-smi testdata/mi300x) with one field of GPU 0 garbled each
    const tools = new FakeTools().hl('units').amd('mi300x');
    const csv = readFileSync(join(HL_TD, 'units', 'hl-smi.csv'), 'utf8').split('\n');
    csv[1] = csv[1]!.replace(' 226 W,', ' 2x6 W,');
    writeFileSync(join(tools.data, 'hl-smi.csv'), csv.join('\n'));
    const metric = JSON.parse(readFileSync(join(tools.data, 'amd-metric.json'), 'utf8')) as unknown;
    const list = (Array.isArray(metric) ? metric : (metric as { gpu_data: Record<string, Record<string, unknown>>[] }).gpu_data) as Record<
      string,
      Record<string, unknown>
    >[];
    (list[0]!.power as Record<string, unknown>).socket_power = { value: 'overheating', unit: 'W' };
    writeFileSync(join(tools.data, 'amd-metric.json'), JSON.stringify(metric));
    const d = new DaemonProcess(['--plugin', 'hlsmi', '--plugin', 'amdsmi', '--sink', 'stdout', '--interval', '200ms'], tools.env());
    try {
      await waitFor('three ticks of both', () =>
        ['intel', 'amd'].every(
          (v) =>
            new Set(
              d
                .points()
                .filter((p) => p.name === 'gpu.temperature' && p.attributes['gpu.vendor'] === v)
                .map((p) => p.time),
            ).size >= 3,
        ),
      );
      const pts = d.points();
      const byGpu = (vendor: string, index: number, name: string) =>
        pts.filter((p) => p.attributes['gpu.vendor'] === vendor && p.attributes['gpu.index'] === index && p.name === name);
      assert.equal(byGpu('intel', 0, 'gpu.power.draw').length, 0, 'the garbled cell is left out, not read as 2');
      assert.ok(
        byGpu('intel', 0, 'gpu.temperature').length >= 3 && byGpu('intel', 1, 'gpu.power.draw').length >= 3,
        "the GPU's other fields, the other GPU",
      );
      assert.equal(byGpu('amd', 0, 'gpu.power.draw').length, 0);
      assert.ok(byGpu('amd', 0, 'gpu.utilization').length >= 3 && byGpu('amd', 1, 'gpu.power.draw').length >= 3);
      assert.equal(
        d.stderr.match(/field not readable: skipped plugin=hlsmi field="hl-smi device 0 power.draw" error="\\"2x6 W\\" is not a number"/g)
          ?.length,
        1,
        `said once: ${d.stderr}`,
      );
      assert.equal(
        d.stderr.match(
          new RegExp(
            String.raw`field not readable: skipped plugin=amdsmi field="amd-smi metric --json gpu 0 ` +
              String.raw`power.socket_power" error="value \\"overheating\\" is not a number"`,
            'g',
          ),
        )?.length,
        1,
      );
      assert.doesNotMatch(d.stderr, /collection failed/);
    } finally {
      assert.equal(await d.stop(), 0, d.stderr);
    }
  },
);
