/** `l9gpu gpus`: one snapshot across vendors, as a table and as JSON. */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { runCli } from '../helpers/daemon.js';
import { FakeNvml, h100 } from '../helpers/fake-nvml.js';
import { FakeTools } from '../helpers/fake-tools.js';
import { tempDir } from '../helpers/paths.js';

test('gpus --json: NVIDIA (with MIG and processes), AMD and Gaudi together, detected by plugins = auto', async () => {
  const nv = new FakeNvml({
    driver_version: '550.54.15',
    devices: [
      h100(0, { clock_reasons: 0x20 }),
      h100(1, {
        name: 'NVIDIA A100-SXM4-40GB',
        mig_mode: 1,
        mig_max: 7,
        processes: [],
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
        ],
      }),
    ],
  });
  const tools = new FakeTools().amd('mi300x').hl('units');
  const r = await runCli(['gpus', '--json'], { ...nv.env(), ...tools.env(), FAKE_NVML_TRACE_EVENTS: '1' });
  assert.equal(r.status, 0, r.stderr);
  // a one-shot does not create the Xid event set (it would see only events after it starts)
  assert.doesNotMatch(r.stderr, /fake NVML: event set created/);
  const out = JSON.parse(r.stdout) as { gpus: Record<string, unknown>[]; errors: unknown[] };
  assert.deepEqual(out.errors, []);
  assert.deepEqual(
    out.gpus.map((g) => [g.vendor, g.index]),
    [
      ['amd', 0],
      ['amd', 1],
      ['intel', 0],
      ['intel', 1],
      ['intel', 2],
      ['nvidia', 0],
      ['nvidia', 1],
    ],
  );
  const n0 = out.gpus.find((g) => g.uuid === nv.desc.devices[0]!.uuid)!;
  assert.equal(n0.utilization, 0.87);
  assert.equal(n0.power_watts, 350.123);
  assert.equal(n0.energy_joules, 123456.789);
  assert.equal(n0.memory_total_bytes, 85_899_345_920);
  assert.deepEqual(n0.temperature_celsius, { edge: 45, memory: 50 });
  assert.deepEqual(n0.throttle_causes, ['thermal']);
  assert.deepEqual(n0.processes, [{ pid: 4242, memory_bytes: 1_048_576_000 }]);
  assert.equal(n0.pci_bus_id, '0000:18:00.0');
  const n1 = out.gpus.find((g) => g.uuid === nv.desc.devices[1]!.uuid)!;
  assert.deepEqual(n1.mig, [
    {
      uuid: 'MIG-aaaaaaaa-1111-2222-3333-444444444444',
      model: 'NVIDIA A100-SXM4-40GB MIG 3g.20gb',
      gpu_instance_id: 1,
      compute_instance_id: 0,
      memory_used_bytes: 13_631_488,
      memory_total_bytes: 20_937_965_568,
    },
  ]);
  assert.equal(n1.utilization, null);
  assert.match(
    String(n1.notes),
    new RegExp(
      String.raw`^no utilization: NVML has none for a GPU in MIG mode\. The daemon reports each ` +
        String.raw`MIG instance's utilization as its GPU instance's engine activity \(GPM, Hopper ` +
        String.raw`and later; an instance alone`,
    ),
    'says what is missing and why',
  );
  assert.deepEqual(n0.notes, []);
  const a0 = out.gpus.find((g) => g.uuid === 'ccff74a1-0000-1000-8031-7b4fd9c1e28f')!;
  assert.equal(a0.utilization, 0.93);
  assert.deepEqual(a0.temperature_celsius, { hotspot: 71, memory: 58 });
  assert.equal(out.gpus.find((g) => g.uuid === '01P4-HL3090A0-18-U4V193-09-01-05')!.utilization, null, '[N/A] stays unknown');
});

test('gpus: a readable table; a failing vendor tool is named on stderr with its error', async () => {
  const nv = new FakeNvml({ devices: [h100(0, { clock_reasons: 0x4 }), h100(1, { lost: true })] });
  const tools = new FakeTools();
  const r = await runCli(['gpus', '--plugin', 'nvml,hlsmi'], { ...nv.env(), ...tools.env() });
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.trimEnd().split('\n');
  assert.match(lines[0]!, /^IDX\s+UUID\s+MODEL\s+UTIL\s+MEM GiB\s+TEMP\s+POWER\s+ENERGY kWh\s+THROTTLE\s+PROCS$/);
  assert.match(
    lines[1]!,
    /^0\s+GPU-00a1b2c3\S+\s+NVIDIA H100 80GB HBM3\s+87%\s+40\.0\/80\.0\s+45C\s+350\/700W\s+0\.03\s+power\s+4242\(1\.0\)$/,
  );
  assert.equal(lines.length, 2, 'a GPU lost before NVML could open it has no UUID: it is named on stderr instead');
  assert.match(r.stderr, /GPU 1: nvmlDeviceGetHandleByIndex_v2: GPU is lost \(15\): not sampled/);
  assert.doesNotMatch(r.stdout, /\x1b\[/, 'no colour when not a TTY');
  // the stand-in has no recorded output: it fails like a broken hl-smi would
  assert.match(
    r.stderr,
    /^l9gpu: hlsmi: \S+\/hl-smi -Q index,uuid,\S+ -f csv: exit code 1: cat: \S+hl-smi\.csv: No such file or directory$/m,
  );
});

test('gpus: what a vendor tool prints (a model name, an error) reaches the terminal without its control characters', async () => {
  // the recorded hl-smi output, its model name carrying an OSC title and a screen clear
  const tools = new FakeTools().hl('units');
  const csv = join(tools.data, 'hl-smi.csv');
  writeFileSync(csv, readFileSync(csv, 'utf8').replace('HL-325L', 'HL-325L\x1b]0;pwned\x07\x1b[2J'));
  const r = await runCli(['gpus', '--plugin', 'hlsmi'], tools.env());
  assert.equal(r.status, 0, r.stderr);
  assert.doesNotMatch(r.stdout, /[\x00-\x09\x0b-\x1f\x7f]/, 'no control character but newlines');
  assert.match(r.stdout, /HL-325L\?\]0;pwned\?\?\[2J/);
  // --json carries the name as it is, escaped by JSON
  const j = await runCli(['gpus', '--json', '--plugin', 'hlsmi'], tools.env());
  assert.equal((JSON.parse(j.stdout) as { gpus: { model: string }[] }).gpus[0]!.model, 'HL-325L\x1b]0;pwned\x07\x1b[2J');
  // a failing tool's own words on stderr: a colour and a forged line neutralised
  const errFile = join(tempDir('l9gpu-tool-err-'), 'err');
  writeFileSync(errFile, 'hl-smi: device busy\x1b[31m\r\nforged: line\n');
  tools.fail('hl-smi', errFile);
  const f = await runCli(['gpus', '--plugin', 'hlsmi'], tools.env());
  assert.doesNotMatch(f.stderr, /[\x00-\x09\x0b-\x1f\x7f]/);
  assert.match(f.stderr, /^l9gpu: hlsmi: .*hl-smi: device busy\?\[31m/m);
  assert.doesNotMatch(f.stderr, /^forged/m);
});
