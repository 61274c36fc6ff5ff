/**
 * The NVML sampler in this process, through the production koffi binding
 * against the fake libnvidia-ml.so.1, counting the NVML calls each tick makes
 * (the fake counts them: each async one is a hop to a libuv pool thread and
 * back, ~20-30 µs of CPU). What a tick reads, and how it falls back when the
 * driver does not answer a field. Every test runs on each driver profile whose
 * symbol set is a real library's (test/helpers/fake-nvml.ts): R535 early and
 * late, R550, and one with nvmlDeviceGetTemperatureV.
 */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { describe, test } from 'node:test';
import { loadNvml, type NvmlBinding } from '../../plugins/nvml/binding.js';
import { Sampler } from '../../plugins/nvml/sampler.js';
import type { GpuSnapshot } from '../../plugins/nvml/snapshot.js';
import { FakeNvml, fakeNvmlLibraries, h100, PROFILES, type FakeGpu, type Profile } from '../helpers/fake-nvml.js';

const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi').default;
const SAMPLER_PROFILES: readonly Profile[] = ['r535-early', 'r535', 'r550', 'r570'];
const HOUR = 3_600_000;
const MIG_UUID = (j: number) => `MIG-${j}0000000-1111-2222-3333-444444444444`;

/** An H100 whose driver samples every 50 µs (every tick finds new samples) and whose GPM counts PCIe traffic too. */
function gpu(i: number, over: Record<string, unknown> = {}): FakeGpu {
  const g = h100(i, { sample_period_ms: 0.05, ...over });
  return { ...g, gpm: { ...(g.gpm as object), pcie_tx_mibs: 12, pcie_rx_mibs: 30 } };
}

async function sampler(
  profile: Profile,
  fake: FakeNvml,
  stateIntervalMs: number,
): Promise<{ s: Sampler; nvml: NvmlBinding; tick: () => Promise<{ gpus: GpuSnapshot[]; calls: number }> }> {
  process.env.FAKE_NVML_CONFIG = fake.path;
  // GPM counters refresh every µs: ticks back to back each get a GPM window (NVML's refresh is ~100 ms)
  process.env.FAKE_NVML_GPM_REFRESH_US = '1';
  const lib = fakeNvmlLibraries()[profile];
  const fakeCalls = koffi.load(lib).func('unsigned long long fakeNvmlCalls()') as () => number | bigint;
  const nvml = loadNvml(lib);
  assert.equal(await nvml.init(), 0);
  const s = new Sampler(nvml, true, 0, stateIntervalMs);
  await s.enumerate();
  const tick = async () => {
    const before = Number(fakeCalls());
    const { gpus } = await s.sample();
    return { gpus, calls: Number(fakeCalls()) - before };
  };
  return { s, nvml, tick };
}

async function close(x: { s: Sampler; nvml: NvmlBinding }): Promise<void> {
  await x.s.release();
  await x.nvml.shutdown();
}

for (const profile of SAMPLER_PROFILES) {
  describe(`driver profile ${profile}: ${PROFILES[profile].source}`, () => {
    test(
      'one field-values call serves ECC, remapped rows, retired pages, energy, power limit and ' +
        'PCIe replays; GPM gives PCIe traffic over the interval: 11 NVML calls a GPU a tick between ' +
        'state reads',
      async () => {
        const fake = new FakeNvml({ devices: [gpu(0, { retired: { sbe: 3, dbe: 1 } }), gpu(1)] });
        const x = await sampler(profile, fake, HOUR);
        try {
          const first = await x.tick();
          await x.tick();
          const t = await x.tick();
          const g = t.gpus[0]!;
          assert.deepEqual(g.ecc, { correctedVolatile: 1, uncorrectedVolatile: 0, correctedAggregate: 5, uncorrectedAggregate: 0 });
          assert.deepEqual(g.remapped, { corrected: 2, uncorrected: 0, pending: 0, failure: 0 });
          assert.equal(g.retiredSbe, 3);
          assert.equal(g.retiredDbe, 1);
          assert.equal(g.energyMj, 123_456_789);
          assert.equal(g.powerLimitMw, 700_000);
          assert.equal(g.pcieReplay, 3);
          assert.equal(g.tempMemC, 50);
          assert.equal(g.pcieTxKBs, 12 * 1024, 'GPM MiB/s -> KiB/s, not the 20 ms nvmlDeviceGetPcieThroughput reading (1000)');
          assert.equal(g.pcieRxKBs, 30 * 1024);
          assert.ok(g.utilGpuPct !== undefined && g.powerMw !== undefined && g.gpm?.sm !== undefined && g.clockSmMhz === 1755);
          // fields, 3 sample buffers, memory, temperature, SM clock, clock event reasons, processes, GPM sample, GPM metrics
          assert.equal(t.calls, 2 * 11, `NVML calls for 2 GPUs in a tick between state reads: ${t.calls}`);
          assert.ok(
            g.fanPct === 30 && g.pstate === 0 && g.clockMemMhz === 2619,
            'the state as last read, every tick (a pull sink serves the latest tick)',
          );
          assert.ok(
            first.gpus[0]!.fanPct === 30 &&
              first.gpus[0]!.pstate === 0 &&
              first.gpus[0]!.clockMemMhz === 2619 &&
              first.gpus[0]!.clockGraphicsMhz === 1755,
            'the first tick reads the state',
          );
        } finally {
          await close(x);
        }
      },
    );

    test(
      'a driver that does not answer a field (an older driver: INVALID_ARGUMENT per field) falls ' +
        "back to the field's own call, the retired-pages size query looping on INSUFFICIENT_SIZE",
      async () => {
        const old = Object.fromEntries([3, 4, 5, 6, 29, 30, 83, 94, 142, 143, 144, 145, 185, 190].map((id) => [String(id), { ret: 2 }]));
        const fields = { ...(h100(0).fields as object), ...old };
        const fake = new FakeNvml({ devices: [gpu(0, { retired: { sbe: 3, dbe: 1 }, fields }), gpu(1, { fields })] });
        const x = await sampler(profile, fake, HOUR);
        try {
          await x.tick();
          await x.tick();
          const t = await x.tick();
          const g = t.gpus[0]!;
          assert.deepEqual(g.ecc, { correctedVolatile: 1, uncorrectedVolatile: 0, correctedAggregate: 5, uncorrectedAggregate: 0 });
          assert.deepEqual(g.remapped, { corrected: 2, uncorrected: 0, pending: 0, failure: 0 });
          assert.equal(g.retiredSbe, 3, 'nvmlDeviceGetRetiredPages: size query, then a buffer of the needed count');
          assert.equal(g.retiredDbe, 1);
          assert.equal(t.gpus[1]!.retiredSbe, 0);
          assert.equal(g.energyMj, 123_456_789);
          assert.equal(g.powerLimitMw, 700_000);
          assert.equal(g.pcieReplay, 3);
          assert.ok(t.calls > 2 * 11, `the fallbacks are calls of their own: ${t.calls}`);
        } finally {
          await close(x);
        }
      },
    );

    test(
      'MIG mode turned on between state reads: the call that stops being supported reads the ' +
        'state at the next tick; MIG instances are read once, their memory every tick, and again ' +
        'when a process runs on a GPU instance not seen',
      async () => {
        const inst = (j: number) => ({
          slot: j,
          uuid: MIG_UUID(j),
          name: 'NVIDIA H100 80GB HBM3 MIG 1g.10gb',
          gi: 7 + j,
          ci: 0,
          mem_total: 10_737_418_240,
          mem_used: 1_048_576 * (j + 1),
          mem_free: 10_736_369_664,
          gpm: { graphics: 40 },
        });
        const fake = new FakeNvml({ devices: [gpu(0)] });
        const x = await sampler(profile, fake, HOUR);
        try {
          await x.tick();
          await x.tick();
          fake.write({ devices: [gpu(0, { mig_mode: 1, mig_max: 7, mig: [inst(0), inst(1)] })] });
          const turned = await x.tick();
          assert.equal(turned.gpus[0]!.utilGpuPct, undefined, 'utilization samples: NOT_SUPPORTED with MIG on');
          const on = await x.tick();
          assert.equal(on.gpus[0]!.migMode, 1, 'MIG mode read again at the next tick, not an hour later');
          assert.deepEqual(
            on.gpus[0]!.mig?.map((m) => [m.uuid, m.gi, m.memUsed]),
            [
              [MIG_UUID(0), 7, 1_048_576],
              [MIG_UUID(1), 8, 2_097_152],
            ],
          );
          const steady = await x.tick();
          assert.deepEqual(
            steady.gpus[0]!.mig?.map((m) => m.uuid),
            [MIG_UUID(0), MIG_UUID(1)],
          );
          const again = await x.tick();
          // between state reads a MIG GPU makes its own 9 calls (PCIe throughput too: GPM counts GPU instances in MIG mode)
          // plus a memory call, a GPM sample and its metrics an instance: no MIG mode, no enumeration (7 slots: handle, UUID,
          // name, GPU and compute instance ids)
          assert.equal(again.calls, 9 + 3 * 2, `a MIG GPU with 2 instances between state reads: ${again.calls} calls`);
          // a GPU instance made since, with a process on it: read the instances again
          fake.write({
            devices: [
              gpu(0, {
                mig_mode: 1,
                mig_max: 7,
                mig: [inst(0), inst(1), inst(2)],
                processes: [{ pid: 77, used: 1_048_576, gi: 9, ci: 0 }],
              }),
            ],
          });
          await x.tick();
          const grown = await x.tick();
          assert.deepEqual(
            grown.gpus[0]!.mig?.map((m) => m.uuid),
            [MIG_UUID(0), MIG_UUID(1), MIG_UUID(2)],
          );
          // an instance destroyed: its memory call fails, and the next tick reads the mode and instances again
          fake.write({ devices: [gpu(0, { mig_mode: 1, mig_max: 7, mig: [inst(0)] })] });
          await x.tick();
          const shrunk = await x.tick();
          assert.deepEqual(
            shrunk.gpus[0]!.mig?.map((m) => m.uuid),
            [MIG_UUID(0)],
          );
        } finally {
          await close(x);
        }
      },
    );

    test(
      'state_interval 0: the state is read every tick: a fan that changes shows at the next tick, ' +
        'at 5 calls a tick more than between state reads',
      async () => {
        const fake = new FakeNvml({ devices: [gpu(0)] });
        const x = await sampler(profile, fake, 0);
        try {
          await x.tick();
          const t = await x.tick();
          assert.ok(t.gpus[0]!.fanPct === 30 && t.gpus[0]!.pstate === 0 && t.gpus[0]!.clockMemMhz === 2619 && t.gpus[0]!.migMode === 0);
          // MIG mode, graphics and memory clocks, fan, performance state
          assert.equal(t.calls, 11 + 5, `a tick that reads the state: ${t.calls} calls`);
          fake.write({ devices: [gpu(0, { fan: 100 })] });
          assert.equal((await x.tick()).gpus[0]!.fanPct, 100, 'the new fan speed at the next tick');
        } finally {
          await close(x);
        }
      },
    );

    test(
      "the board's serial number and VBIOS version: read once when the GPUs are enumerated (no call a tick), " +
        'trimmed, control and format characters made "?", as long as their nvml.h buffers hold; a board without ' +
        'a serial (NOT_SUPPORTED) has none and nothing is said, another error is said once',
      async () => {
        const longest = 'S'.repeat(29); // NVML_DEVICE_SERIAL_BUFFER_SIZE 30, the NUL included
        const fake = new FakeNvml({
          devices: [
            // an OSC sequence, a bell and a right-to-left override; a newline and spaces around
            gpu(0, { serial: ' SN\u001b]0;pwned\u0007\u202e42 ', vbios_version: '96.00.99.00.01\n' }),
            gpu(1, { serial: undefined, vbios_version: '96.00.99.00.01' }),
            gpu(2, { serial: longest, errors: { nvmlDeviceGetVbiosVersion: 999 } }),
          ],
        });
        const x = await sampler(profile, fake, HOUR);
        try {
          const notes = x.s.takeNotes().map((n) => n.msg);
          const first = await x.tick();
          const t = await x.tick();
          assert.deepEqual(
            t.gpus.map((g) => [g.serial, g.vbiosVersion]),
            [
              ['SN?]0;pwned??42', '96.00.99.00.01'],
              [undefined, '96.00.99.00.01'],
              [longest, undefined],
            ],
          );
          assert.deepEqual(
            first.gpus.map((g) => g.serial),
            t.gpus.map((g) => g.serial),
            'every tick, as read once',
          );
          assert.equal(t.calls, 3 * 11, `no serial or VBIOS call a tick: ${t.calls} calls for 3 GPUs`);
          assert.deepEqual(
            notes.filter((m) => /Serial|Vbios/.test(m)),
            [`GPU 2 (${fake.desc.devices[2]!.uuid}): nvmlDeviceGetVbiosVersion: Unknown Error (999): gpu.info goes without it`],
            'NOT_SUPPORTED is not said; another error is, once',
          );
          assert.deepEqual(
            x.s.takeNotes().filter((n) => /Serial|Vbios/.test(n.msg)),
            [],
            'not again a tick',
          );
        } finally {
          await close(x);
        }
      },
    );

    test(
      'every compute process of a GPU, in the entries this driver writes: pid, memory and MIG ids ' +
        "of each (early R535's 32-byte entries read as 32)",
      async () => {
        // protected memory (cc_used) fills the 32-byte entries' tail: a reader that steps 24 bytes takes it for the next pid
        const procs = [
          { pid: 101, used: 1_073_741_824, cc_used: 4096 },
          { pid: 202, used: 2_147_483_648, cc_used: 8192 },
          { pid: 303, used: 3_221_225_472, cc_used: 12288 },
        ];
        const mig = {
          slot: 0,
          uuid: MIG_UUID(0),
          name: 'NVIDIA H100 80GB HBM3 MIG 3g.40gb',
          gi: 1,
          ci: 0,
          mem_total: 42_949_672_960,
          mem_used: 1,
          mem_free: 42_949_672_959,
        };
        const onMig = procs.map((p, i) => ({ ...p, gi: 1 + i, ci: i }));
        const fake = new FakeNvml({
          devices: [gpu(0, { processes: procs }), gpu(1, { mig_mode: 1, mig_max: 7, mig: [mig], processes: onMig })],
        });
        const x = await sampler(profile, fake, HOUR);
        try {
          const { gpus } = await x.tick();
          assert.deepEqual(
            gpus[0]!.processes,
            procs.map((p) => ({ pid: p.pid, usedBytes: p.used })),
          );
          assert.deepEqual(
            gpus[1]!.processes,
            onMig.map((p) => ({ pid: p.pid, usedBytes: p.used, gi: p.gi, ci: p.ci })),
          );
          assert.equal(
            x.nvml.processInfo.size,
            'processInfoCc' in PROFILES[profile] ? 32 : 24,
            'the binding tells early R535 by its symbols',
          );
          // more processes than the buffer holds (16 entries): the size query's count, then all of them
          const many = Array.from({ length: 40 }, (_, i) => ({ pid: 1000 + i, used: 1_048_576 * (i + 1), cc_used: 1 }));
          fake.write({ devices: [gpu(0, { processes: many }), gpu(1)] });
          const grown = await x.tick();
          assert.deepEqual(
            grown.gpus[0]!.processes,
            many.map((p) => ({ pid: p.pid, usedBytes: p.used })),
          );
        } finally {
          await close(x);
        }
      },
    );
  });
}
