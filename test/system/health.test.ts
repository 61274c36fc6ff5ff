/**
 * GPU health: the rules case by case (rules.ts over hand-made facts), then
 * end to end through the fake NVML loaded by the production koffi code: the
 * daemon sees Xid events, ECC counts, remapped rows, PCIe replays, throttle
 * reasons and a lost GPU as a real driver reports them, and `l9gpu health`
 * (--json, --nhc) says what each GPU has and what to do.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { assess, type HealthFacts } from '../../src/health/rules.js';
import { nhcLine, type HealthReport } from '../../src/cli/health-command.js';
import { parseNodeState, isDrained } from '../../slurm/node-drain.js';
import { DaemonProcess, parseLines, runCli } from '../helpers/daemon.js';
import { FakeNvml, h100, type FakeGpu } from '../helpers/fake-nvml.js';
import { ROOT, tempDir } from '../helpers/paths.js';
import { renderHealthTables } from '../../src/health/docs.js';
import { waitFor } from '../helpers/wait.js';

const NOW = Date.parse('2026-11-23T12:00:00Z');
const facts = (over: Partial<HealthFacts> = {}): HealthFacts => ({
  uuid: 'GPU-0a1b2c3d',
  index: 0,
  model: 'NVIDIA H100 80GB HBM3',
  seen: NOW,
  lost: false,
  xids: [],
  eccUncorrectedVolatile: 0,
  eccUncorrectedRise: 0,
  remapPending: false,
  remapFailed: false,
  retiredPages: null,
  retirePending: null,
  pcieReplaysPerMin: 0,
  thermalShare: 0,
  powerBrakeShare: 0,
  ...over,
});
const judge = (f: HealthFacts, xidSince = 0, missingBefore: number | null = null) => assess(f, { now: NOW, xidSince, missingBefore });
const xid = (code: number, n = 1, time = NOW - 1000) => ({ code, time, n });

describe('health rules, case by case', () => {
  const cases: [string, Partial<HealthFacts>, 0 | 1 | 2, number, string[]][] = [
    ['a healthy GPU', {}, 0, 1, []],
    ["Xid 13 (an application's fault): listed, the GPU stays ok", { xids: [xid(13, 3)] }, 0, 1, ['xid-13']],
    ['Xid 79: fell off the bus', { xids: [xid(79)] }, 2, 0, ['xid-79']],
    ['Xid 48: double-bit ECC', { xids: [xid(48)] }, 2, 0, ['xid-48']],
    ['Xid 63: a row remapping recorded', { xids: [xid(63)] }, 1, 0.7, ['xid-63']],
    ['Xid 64: a row remapping failed', { xids: [xid(64)] }, 2, 0, ['xid-64']],
    ['Xid 94: contained ECC error', { xids: [xid(94)] }, 1, 0.7, ['xid-94']],
    ['Xid 95: uncontained ECC error', { xids: [xid(95)] }, 2, 0, ['xid-95']],
    ['lost GPU', { lost: true }, 2, 0, ['lost']],
    ['uncorrected ECC since the driver loaded', { eccUncorrectedVolatile: 2 }, 1, 0.7, ['ecc-uncorrected']],
    ['uncorrected ECC rising', { eccUncorrectedRise: 1 }, 1, 0.7, ['ecc-uncorrected-rising']],
    ['pending row remap', { remapPending: true }, 1, 0.8, ['remap-pending']],
    ['failed row remap', { remapFailed: true }, 2, 0, ['remap-failed']],
    ['14 retired pages: fine', { retiredPages: 14 }, 0, 1, []],
    ['15 retired pages: warning', { retiredPages: 15 }, 1, 0.8, ['retired-pages-many']],
    ['60 retired pages: failed', { retiredPages: 60 }, 2, 0, ['retired-pages']],
    ['pending page retirement', { retirePending: true }, 1, 0.8, ['retirement-pending']],
    ['8 PCIe replays a minute: at the limit, fine', { pcieReplaysPerMin: 8 }, 0, 1, []],
    ['9 PCIe replays a minute', { pcieReplaysPerMin: 9 }, 1, 0.9, ['pcie-replays']],
    ['thermal slowdown 9% of the time: fine', { thermalShare: 0.09 }, 0, 1, []],
    ['thermal slowdown 10% of the time', { thermalShare: 0.1 }, 1, 0.9, ['thermal-throttle']],
    ['power brake engaged', { powerBrakeShare: 0.02 }, 1, 0.9, ['power-brake']],
    ['two warnings multiply', { remapPending: true, pcieReplaysPerMin: 20 }, 1, 0.72, ['remap-pending', 'pcie-replays']],
    [
      'a failure and a warning: failed, score 0, the failure first',
      { pcieReplaysPerMin: 20, remapFailed: true },
      2,
      0,
      ['remap-failed', 'pcie-replays'],
    ],
  ];
  for (const [name, over, state, score, codes] of cases) {
    test(name, () => {
      const h = judge(facts(over));
      assert.equal(h.state, state);
      assert.equal(h.score, score);
      assert.deepEqual(
        h.findings.map((f) => f.code),
        codes,
      );
      for (const f of h.findings) assert.ok(f.text.length > 0 && f.action.length > 0, `${f.code} says what and what to do`);
    });
  }

  test("an Xid stops counting at the window's start, the boot or a clear (xidSince); the unknown code is a warning that says so", () => {
    assert.equal(judge(facts({ xids: [xid(79, 1, NOW - 5000)] }), NOW - 4000).state, 0);
    assert.equal(judge(facts({ xids: [xid(79, 1, NOW - 5000)] }), NOW - 6000).state, 2);
    const u = judge(facts({ xids: [xid(9999)] }));
    assert.equal(u.state, 1);
    assert.match(u.findings[0]!.text + u.findings[0]!.action, /catalog/);
  });

  test('Xid 79 reads as NVIDIA names it, with its count and time, and a hardware action', () => {
    const f = judge(facts({ xids: [xid(79, 2)] })).findings[0]!;
    assert.match(f.text, /^Xid 79 \(.*fallen off the bus.*\) x2, last at 2026-11-23T11:59:59/i);
    assert.match(f.action, /reboot|hardware|RMA|support/i);
  });

  test('a GPU not collected while the others were is missing (failed)', () => {
    const h = judge(facts({ seen: NOW - 10_000 }), 0, NOW - 3000);
    assert.equal(h.state, 2);
    assert.deepEqual(
      h.findings.map((f) => f.code),
      ['missing'],
    );
    assert.equal(judge(facts(), 0, NOW - 3000).state, 0);
  });

  test('--nhc line: ok, unknown, and the worst GPU first with what to do', () => {
    const r = (gpus: ReturnType<typeof judge>[]): HealthReport => ({
      node: 'n1',
      state: 'ok',
      unknown: null,
      written: null,
      gpus: gpus.map((g) => ({ ...g, state_name: '' })),
    });
    assert.equal(nhcLine(r([judge(facts()), judge(facts())])), 'l9gpu: 2 GPU(s) ok');
    assert.equal(nhcLine({ ...r([]), state: 'unknown', unknown: 'no health file' }), 'l9gpu: health unknown: no health file');
    const line = nhcLine(r([judge(facts({ remapPending: true })), judge(facts({ index: 3, uuid: 'GPU-77777777-1', lost: true }))]));
    assert.match(
      line,
      new RegExp(
        String.raw`^l9gpu: GPU 3 \(GPU-77777777\) failed: the driver reports the GPU lost: it fell ` +
          String.raw`off the bus: drain the node and reboot it.* \(\+1 more GPU\(s\) not ok\)$`,
      ),
    );
    assert.ok(!line.includes('\n'));
  });

  test('scontrol show node -o: state and the drain reason, with or without the [user@time] stamp', () => {
    const s = parseNodeState(
      'NodeName=n1 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 State=IDLE+DRAIN ThreadsPerCore=1 ' +
        'Reason=l9gpu: GPU 1 (GPU-01a1b2c3) failed: Xid 79 [root@2026-11-23T12:00:00] ' +
        'Comment=(null)\n',
    );
    assert.equal(s.state, 'IDLE+DRAIN');
    assert.equal(s.reason, 'l9gpu: GPU 1 (GPU-01a1b2c3) failed: Xid 79');
    assert.ok(isDrained(s));
    const idle = parseNodeState('NodeName=n1 State=IDLE ThreadsPerCore=1 Reason=(null)');
    assert.equal(idle.reason, null);
    assert.ok(!isDrained(idle));
    assert.throws(() => parseNodeState('garbage'), /no State=/);
  });
});

describe('health through the fake NVML and the daemon', () => {
  const dir = tempDir('l9gpu-health-');
  const stateDir = join(dir, 'state');
  const config = join(dir, 'l9gpu.ini');
  const pointsFile = join(dir, 'points.jsonl');
  // one GPU per case: 0 healthy, 1 lost after Xid 79, 2 Xid 48, 3 Xid 63 + pending remap, 4 Xid 64 + failed remap,
  // 5 Xid 94, 6 Xid 95, 7 uncorrected ECC (volatile, and the lifetime count rising), 8 PCIe replays, 9 Xid 13,
  // 10 thermal slowdown + power brake
  const N = 11;
  const healthy: FakeGpu[] = Array.from({ length: N }, (_, i) => h100(i, { processes: [] }));
  const fake = new FakeNvml({ devices: healthy, events: [] });
  let daemon: DaemonProcess;
  const cli = (...args: string[]) => runCli(['health', '--config', config, ...args]);
  const report = async () => JSON.parse((await cli('--json')).stdout) as HealthReport;
  const byIndex = (r: HealthReport, i: number) => r.gpus.find((g) => g.index === i)!;
  const startDaemon = () => new DaemonProcess(['--config', config], fake.env());

  before(async () => {
    writeFileSync(
      config,
      `[daemon]\nplugins = nvml\nsinks = file\ninterval = 200ms\nattribution = none\nstate_dir = ${stateDir}\n[nvml]\nevents ` +
        `= true\n[file]\npath = ${pointsFile}\nresource = false\n[health]\nreplay_window = ` +
        `3s\nthrottle_window = 3s\n`,
    );
    daemon = startDaemon();
    await waitFor('the first health file', async () => (await report()).gpus.length === N || undefined, 30_000);
  });
  after(async () => {
    assert.equal(await daemon.stop(), 0, daemon.stderr);
  });

  test('healthy GPUs: ok, and --nhc exits 0 with one line', async () => {
    const r = await report();
    assert.equal(r.state, 'ok');
    assert.ok(r.gpus.every((g) => g.state === 0 && g.score === 1));
    const nhc = await cli('--nhc');
    assert.equal(nhc.status, 0, nhc.stderr);
    assert.equal(nhc.stdout, `l9gpu: ${N} GPU(s) ok\n`);
  });

  test(
    'every fault as the driver reports it: each GPU its state, reasons and score; --nhc exits ' + '1; gpu.health points carry the reasons',
    async () => {
      const d = healthy.map((g) => ({ ...g }));
      d[1] = { ...d[1]!, lost: true };
      d[3] = { ...d[3]!, remapped: { corrected: 0, uncorrected: 1, pending: 1, failure: 0 } };
      d[4] = { ...d[4]!, remapped: { corrected: 0, uncorrected: 9, pending: 0, failure: 1 } };
      d[7] = { ...d[7]!, ecc: { corrected_volatile: 0, uncorrected_volatile: 2, corrected_aggregate: 5, uncorrected_aggregate: 3 } };
      d[8] = { ...d[8]!, pcie_replay: 500 };
      d[10] = { ...d[10]!, clock_reasons: 0x40 | 0x80 };
      const ev = (device: number, code: number) => ({ device, type: 8, data: code });
      fake.write({ devices: d, events: [ev(1, 79), ev(2, 48), ev(3, 63), ev(4, 64), ev(5, 94), ev(6, 95), ev(9, 13), ev(9, 13)] });
      // the lifetime count rises on GPU 7 after the daemon has read it once
      await waitFor(
        'GPU 7 read with 3 lifetime errors',
        async () => byIndex(await report(), 7).findings.some((f) => f.code === 'ecc-uncorrected') || undefined,
        20_000,
      );
      d[7] = { ...d[7]!, ecc: { corrected_volatile: 0, uncorrected_volatile: 2, corrected_aggregate: 5, uncorrected_aggregate: 4 } };
      fake.write({ ...fake.desc, devices: d });
      const want: Record<number, [number, string[]]> = {
        0: [0, []],
        1: [2, ['xid-79', 'lost']],
        2: [2, ['xid-48']],
        3: [1, ['xid-63', 'remap-pending']],
        4: [2, ['xid-64', 'remap-failed']],
        5: [1, ['xid-94']],
        6: [2, ['xid-95']],
        7: [1, ['ecc-uncorrected', 'ecc-uncorrected-rising']],
        8: [1, ['pcie-replays']],
        9: [0, ['xid-13']],
        10: [1, ['thermal-throttle', 'power-brake']],
      };
      const seen = (r: HealthReport) =>
        Object.entries(want).every(([i, [state, codes]]) => {
          const g = byIndex(r, Number(i));
          return g.state === state && [...g.findings.map((f) => f.code)].sort().join() === [...codes].sort().join();
        });
      const r = await waitFor(
        'every fault judged',
        async () => {
          const x = await report();
          return seen(x) ? x : undefined;
        },
        30_000,
      ).catch(async (e: Error) => {
        throw new Error(
          `${e.message}: ${JSON.stringify((await report()).gpus.map((g) => [g.index, g.state, g.findings.map((f) => f.code)]))}`,
        );
      });
      assert.equal(r.state, 'failed');
      assert.equal(byIndex(r, 9).findings[0]!.severity, 0, "an application's Xid is information only");
      assert.match(byIndex(r, 9).findings[0]!.text, /^Xid 13 .* x2,/);
      assert.equal(byIndex(r, 3).score, 0.56);
      assert.equal(byIndex(r, 10).score, 0.81);
      const nhc = await cli('--nhc');
      assert.equal(nhc.status, 1);
      assert.match(nhc.stdout, /^l9gpu: GPU 1 \(GPU-01a1b2c3\) failed: Xid 79 .*\(\+\d+ more GPU\(s\) not ok\)\n$/);
      const text = (await cli()).stdout;
      assert.match(text, /GPU 4 \(GPU-04a1b2c3\) GPU-04a1b2c3-d4e5-f6a7-b8c9-d0e1f2a3b404:\n  failed: Xid 64 /);
      assert.match(text, /-> open a hardware ticket \(RMA\): the GPU has no spare rows left/);
      const pts = parseLines(readFileSync(pointsFile, 'utf8'));
      const last = (i: number, name: string) => pts.filter((p) => p.name === name && p.attributes['gpu.index'] === i).at(-1)!;
      assert.equal(last(1, 'gpu.health').value, 2);
      assert.equal(last(1, 'gpu.health').attributes['gpu.health.reason'], 'xid-79,lost');
      assert.equal(last(0, 'gpu.health').attributes['gpu.health.reason'], '');
      assert.equal(last(0, 'gpu.health.score').value, 1);
      assert.equal(last(3, 'gpu.health.score').value, 0.56);
    },
  );

  test('a daemon restart keeps the Xid events; repaired GPUs and --clear bring the node back to ok', async () => {
    assert.equal(await daemon.stop(), 0, daemon.stderr);
    fake.write({ devices: healthy, events: [] });
    daemon = startDaemon();
    // the restarted daemon has read the repaired GPUs (not lost, no remap) but still holds the Xids of before
    const r = await waitFor(
      'the repaired GPUs judged by the new daemon',
      async () => {
        const x = await report();
        return x.unknown === null &&
          !byIndex(x, 1).findings.some((f) => f.code === 'lost') &&
          !byIndex(x, 3).findings.some((f) => f.code === 'remap-pending')
          ? x
          : undefined;
      },
      30_000,
    );
    assert.deepEqual(
      byIndex(r, 1).findings.map((f) => f.code),
      ['xid-79'],
    );
    assert.deepEqual(
      byIndex(r, 2).findings.map((f) => f.code),
      ['xid-48'],
    );
    assert.equal((await cli('--nhc')).status, 1);
    const bad = await cli('--clear', 'GPU-99');
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /--clear: no GPU "GPU-99"/);
    const c = await cli('--clear', 'all');
    assert.equal(c.status, 0, c.stderr);
    await waitFor('ok after the clear', async () => (await report()).state === 'ok' || undefined, 20_000).catch(async (e: Error) => {
      throw new Error(
        `${e.message}: ${JSON.stringify((await report()).gpus.map((g) => [g.index, g.state, g.findings.map((f) => f.code)]))}`,
      );
    });
    const nhc = await cli('--nhc');
    assert.equal(nhc.status, 0);
  });

  const gpuRows = async () =>
    JSON.stringify((await report()).gpus.map((g) => [g.index, g.uuid.slice(0, 12), g.state, g.findings.map((f) => f.code)]));
  const fileUuids = () =>
    (JSON.parse(readFileSync(join(stateDir, 'health.json'), 'utf8')) as { gpus: HealthFacts[] }).gpus.map((g) => g.uuid);
  const restart = async (devices: FakeGpu[], what: string, ready: (r: HealthReport) => boolean) => {
    assert.equal(await daemon.stop(), 0, daemon.stderr);
    fake.write({ devices, events: [] });
    daemon = startDaemon();
    return waitFor(
      what,
      async () => {
        const x = await report();
        return x.unknown === null && ready(x) ? x : undefined;
      },
      30_000,
    ).catch(async (e: Error) => {
      throw new Error(`${e.message}: ${await gpuRows()}`);
    });
  };
  // the GPUs of the node from here on: GPU 1 is swapped for another board in the same slot below
  const node = healthy.map((g) => ({ ...g }));

  test(
    'a GPU replaced in its slot (RMA: same PCI bus id, new UUID) is gone with its findings, ' +
      'across restarts: --nhc passes, nothing left to drain',
    async () => {
      // the board that fails: lost after an Xid 79, as the earlier case
      fake.write({ devices: node.map((g, i) => (i === 1 ? { ...g, lost: true } : g)), events: [{ device: 1, type: 8, data: 79 }] });
      await waitFor('GPU 1 failed', async () => byIndex(await report(), 1).state === 2 || undefined, 20_000);
      // swapped (the node rebooted for it: a new daemon), the new board in the same slot
      const old = node[1]!.uuid;
      node[1] = { ...node[1]!, uuid: 'GPU-5e0f1a2b-0000-4c3d-8e9f-a0b1c2d3e4f5' };
      const r = await restart(
        node,
        'the new board judged',
        (x) => x.gpus.some((g) => g.uuid === node[1]!.uuid) && !x.gpus.some((g) => g.uuid === old),
      );
      assert.equal(r.state, 'ok', await gpuRows());
      assert.equal(r.gpus.length, N);
      assert.deepEqual(byIndex(r, 1).findings, []);
      await waitFor('the old board out of health.json', () => !fileUuids().includes(old) || undefined, 10_000);
      const nhc = await cli('--nhc');
      assert.equal(nhc.status, 0, nhc.stdout);
      // and after another restart (the file the new daemon reads has no trace of the old board)
      const again = await restart(node, 'the node judged after a second restart', (x) => x.gpus.length === N);
      assert.equal(again.state, 'ok', await gpuRows());
    },
  );

  test(
    'fewer GPUs monitored: the one left out is missing (failed) across restarts until --clear ' + 'forgets it; the daemon then drops it',
    async () => {
      const fewer = node.slice(0, N - 1);
      const gone = node[N - 1]!.uuid;
      const r = await restart(fewer, 'GPU 10 missing', (x) =>
        x.gpus.some((g) => g.uuid === gone && g.findings.some((f) => f.code === 'missing')),
      );
      assert.equal(r.state, 'failed');
      assert.equal((await cli('--nhc')).status, 1);
      const c = await cli('--clear', 'all');
      assert.equal(c.status, 0, c.stderr);
      assert.match(
        c.stdout,
        new RegExp(`^cleared the Xid events so far of every GPU\nforgot GPU 10 ${gone} \\(missing since [^)]+\\): no longer collected`),
      );
      // the report leaves it out at once; the daemon drops it from its file at a collection
      const now = await report();
      assert.equal(now.state, 'ok', await gpuRows());
      assert.equal(now.gpus.length, N - 1);
      await waitFor('the forgotten GPU out of health.json', () => !fileUuids().includes(gone) || undefined, 20_000);
      const again = await restart(fewer, 'the node judged after a restart', (x) => x.gpus.length === N - 1);
      assert.equal(again.state, 'ok', await gpuRows());
      assert.equal((await cli('--nhc')).status, 0);
      // back in the node: judged afresh
      const back = await restart(node, 'GPU 10 back', (x) => x.gpus.length === N);
      assert.equal(back.state, 'ok', await gpuRows());
    },
  );

  test('--clear names one GPU: an ambiguous UUID prefix, or no name at all, is an error saying so; nothing is cleared', async () => {
    const before = existsSync(join(stateDir, 'health-clears.json')) ? readFileSync(join(stateDir, 'health-clears.json'), 'utf8') : null;
    const amb = await cli('--clear', 'GPU-0');
    assert.equal(amb.status, 2, amb.stdout);
    assert.match(
      amb.stderr,
      new RegExp(
        String.raw`--clear: "GPU-0" is ambiguous: 10 GPUs have that UUID prefix \(GPU-0[0-9a-f-]+ ` +
          String.raw`\(GPU \d+\), .*, \.\.\. 6 more\); give the whole UUID`,
      ),
    );
    for (const arg of [',', ' , ']) {
      const none = await cli('--clear', arg);
      assert.equal(none.status, 2, none.stdout);
      assert.match(none.stderr, /--clear: no GPU named in "[ ,]+" \(give a UUID, an index, or all\)/);
    }
    const one = await cli('--clear', 'GPU-5e0f');
    assert.equal(one.status, 0, one.stderr);
    assert.equal(one.stdout, 'cleared the Xid events so far of GPU 1 GPU-5e0f1a2b-0000-4c3d-8e9f-a0b1c2d3e4f5\n');
    assert.notEqual(readFileSync(join(stateDir, 'health-clears.json'), 'utf8'), before);
  });

  test('no daemon writing: unknown, which passes --nhc unless --unknown-fails', async () => {
    const other = join(dir, 'other.ini');
    writeFileSync(other, `[daemon]\nstate_dir = ${join(dir, 'nothing-here')}\n`);
    const r = await runCli(['health', '--nhc', '--config', other]);
    assert.equal(r.status, 0);
    assert.match(r.stdout, /^l9gpu: health unknown: no health file in .*nothing-here/);
    assert.equal((await runCli(['health', '--nhc', '--unknown-fails', '--config', other])).status, 1);
    const drain = await runCli(['health', '--drain', '--config', other]);
    assert.equal(drain.status, 2);
    assert.match(drain.stderr, /--drain goes with --nhc/);
  });
});

test('docs/health.md has the rules and the Xid catalog as the code has them (npm run docs)', () => {
  const doc = readFileSync(join(ROOT, 'docs', 'health.md'), 'utf8');
  assert.ok(doc.includes(renderHealthTables()), 'docs/health.md is stale: run npm run docs');
  assert.match(doc, /\| `remap-failed` \| a row remapping failed .* \| failed \| 0 \|/);
  assert.match(doc, /\| 79 \| GPU has fallen off the bus \| .* \| failed \|/);
});
