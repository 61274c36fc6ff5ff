/**
 * A node whose GPU driver is installed but not loaded (boot order, a DKMS
 * build that failed, a driver reload): the daemon under `plugins = auto`
 * starts NVIDIA sampling when the driver appears, without a restart, and
 * gpus, doctor and daemon --once call the node's missing GPUs a problem in
 * their first lines, with what to do, and exit 1. The driver is the fake
 * libnvidia-ml.so.1 loaded through the production koffi binding; its
 * nvmlInit_v2 answers NVML_ERROR_DRIVER_NOT_LOADED (9 in nvml.h) while its
 * description says so, and succeeds once the test rewrites it.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { upsertInventory } from '../../src/store/jobs.js';
import { openStore } from '../../src/store/open.js';
import { DaemonProcess, runCli, ownStateDir } from '../helpers/daemon.js';
import { FakeNvml, h100 } from '../helpers/fake-nvml.js';
import { tempDir } from '../helpers/paths.js';
import { waitFor } from '../helpers/wait.js';

// beside the other files of the system lane: state in a folder of this file's own, not the node's /var/lib/l9gpu
ownStateDir();

/** nvml.h: NVML_ERROR_DRIVER_NOT_LOADED. */
const DRIVER_NOT_LOADED = 9;
const ADVICE = new RegExp(
  String.raw`nvmlInit_v2: Driver Not Loaded \(9\): NVML couldn't communicate with the NVIDIA ` +
    String.raw`driver\. Make sure that the NVIDIA driver is installed and loaded \(lsmod \| ` +
    String.raw`grep nvidia; modprobe nvidia; dmesg \| grep -i nvrm\)`,
);

/** A config of its own: stdout only (doctor checks no port), a state folder of its own. */
function config(extra = ''): { path: string; state: string } {
  const dir = tempDir('l9gpu-presence-');
  const path = join(dir, 'l9gpu.ini');
  writeFileSync(path, `[daemon]\nsinks = stdout\nstate_dir = ${join(dir, 'state')}\n${extra}`);
  return { path, state: join(dir, 'state') };
}

const lines = (s: string): string[] => s.split('\n').filter(Boolean);

test('plugins = auto: a driver loaded after the daemon started is sampled without a restart, and the log says when', async () => {
  const fake = new FakeNvml({ init_error: DRIVER_NOT_LOADED, devices: [h100(0)] });
  const d = new DaemonProcess(['--sink', 'stdout', '--interval', '100ms'], { ...fake.env(), L9GPU_LOG_LEVEL: 'debug' });
  try {
    await d.waitStderr(
      new RegExp(
        `warn \\[l9gpu\\] plugins = auto: not enabled; probed again, 1 s doubling to every 60 s plugin=nvml source="${ADVICE.source}"`,
      ),
    );
    // two probes more, 1 s then 2 s apart, each waiting twice as long for the next: the driver is still not there
    const waits = () => [...d.stderr.matchAll(/plugins = auto: still not enabled plugin=nvml .* next_s=(\d+)$/gm)].map((m) => Number(m[1]));
    await waitFor('two probes more', () => waits().length >= 2);
    assert.deepEqual(waits().slice(0, 2), [2, 4]);
    assert.ok(!d.points().some((p) => p.name === 'gpu.utilization'), 'no GPU sampled while the driver is not loaded');
    // a reload meanwhile: its build probes afresh, and the earlier probes start nothing
    d.child.kill('SIGHUP');
    await d.waitStderr(/configuration reloaded/);
    fake.write({ devices: [h100(0)] });
    await d.waitStderr(
      new RegExp(
        String.raw`info \[l9gpu\] plugins = auto: its source answers now: started plugin=nvml ` +
          String.raw`source="driver \S+, 1 GPU\(s\) via \S+libnvidia-ml.so.1" since_start_s=\d+`,
      ),
      20_000,
    );
    await waitFor('GPU 0 sampled', () => d.points().some((p) => p.name === 'gpu.utilization' && p.attributes['gpu.uuid'] === h100(0).uuid));
    assert.equal(d.child.exitCode, null, 'the same daemon, not a restarted one');
    assert.equal(d.stderr.match(/NVML initialised/g)?.length, 1, 'one nvml plugin started');
  } finally {
    assert.equal(await d.stop(), 0, d.stderr);
  }
});

test('a driver not loaded: gpus, doctor and daemon --once say so first, with what to do, and exit 1; loaded, all is well', async () => {
  const fake = new FakeNvml({ init_error: DRIVER_NOT_LOADED, devices: [h100(0)] });
  const { path } = config();
  const env = fake.env();
  const installed = /no GPU found, though \S+\/libnvidia-ml\.so\.1 \(the NVIDIA driver's library\) is installed/;

  const gpus = await runCli(['gpus', '--config', path], env);
  assert.equal(gpus.status, 1, gpus.stderr);
  const err = lines(gpus.stderr);
  assert.match(err[0]!, new RegExp(`^l9gpu: ${installed.source}$`));
  assert.match(err[1]!, new RegExp(`^l9gpu: nvml: not enabled by auto: ${ADVICE.source}$`));
  assert.doesNotMatch(gpus.stderr, /tried again/, 'a one-shot promises no retry');

  const json = await runCli(['gpus', '--json', '--config', path], env);
  assert.equal(json.status, 1);
  const { gpus: none, errors } = JSON.parse(json.stdout) as { gpus: unknown[]; errors: { plugin: string | null; error: string }[] };
  assert.deepEqual(none, []);
  assert.equal(errors[0]!.plugin, null);
  assert.match(errors[0]!.error, installed);
  assert.equal(errors[1]!.plugin, 'nvml');
  assert.match(errors[1]!.error, ADVICE);

  const doc = await runCli(['doctor', '--config', path], env);
  assert.equal(doc.status, 1, doc.stdout);
  const out = lines(doc.stdout);
  assert.match(out[1]!, new RegExp(`^PROBLEM: ${installed.source}$`));
  assert.match(out[2]!, new RegExp(`^  nvml: not enabled by auto: ${ADVICE.source}$`));
  assert.match(doc.stdout, /^ {3}FAIL nvml {9}disabled {2}not enabled by auto: nvmlInit_v2: Driver Not Loaded/m);
  assert.match(doc.stdout, /^1 problem\(s\) found$/m);
  assert.doesNotMatch(doc.stdout, /tried again/);
  const docJson = JSON.parse((await runCli(['doctor', '--json', '--config', path], env)).stdout) as {
    gpus: { found: number; expected: number; problem: string };
  };
  assert.equal(docJson.gpus.found, 0);
  assert.equal(docJson.gpus.expected, 1);
  assert.match(docJson.gpus.problem, installed);

  const auto = await runCli(['daemon', '--once', '--config', path], env);
  assert.equal(auto.status, 1, auto.stderr);
  assert.match(lines(auto.stderr)[0]!, new RegExp(`warn \\[l9gpu\\] plugins = auto: not enabled plugin=nvml source="${ADVICE.source}"$`));
  assert.match(lines(auto.stderr).at(-1)!, new RegExp(`error \\[l9gpu\\] ${installed.source}$`));

  const named = await runCli(['daemon', '--once', '--plugin', 'nvml', '--config', path], env);
  assert.equal(named.status, 1, 'the one plugin asked for failed');
  assert.match(lines(named.stderr)[0]!, new RegExp(`error \\[l9gpu\\] collection failed plugin=nvml error="${ADVICE.source}"$`));
  assert.match(named.stderr, /error \[l9gpu\] plugins asked for failed \(their errors above\) plugins=nvml/);
  assert.doesNotMatch(auto.stderr + named.stderr, /tried again/, 'a one-shot promises no retry');

  // the driver loads: the same commands find the GPU and no problem
  fake.write({ devices: [h100(0)] });
  const ok = await runCli(['gpus', '--json', '--config', path], env);
  assert.equal(ok.status, 0, ok.stderr);
  assert.deepEqual(JSON.parse(ok.stdout).errors, []);
  const docOk = await runCli(['doctor', '--config', path], env);
  assert.equal(docOk.status, 0, docOk.stdout);
  assert.match(docOk.stdout, /^no problems found$/m);
  assert.equal((await runCli(['daemon', '--once', '--plugin', 'nvml', '--config', path], env)).status, 0);
});

test('[daemon] expect_gpus: fewer GPUs found is a problem; 0 says none belong here whatever is installed', async () => {
  const fake = new FakeNvml({ devices: [h100(0)] });
  const two = config('expect_gpus = 2\n');
  const shortfall = new RegExp(
    String.raw`1 GPU\(s\) found, 2 expected \(\[daemon\] expect_gpus = 2\): a GPU that fell off` +
      String.raw` the bus or failed to initialise is missing \(dmesg, lspci\)`,
  );
  const gpus = await runCli(['gpus', '--config', two.path], fake.env());
  assert.equal(gpus.status, 1);
  assert.match(lines(gpus.stderr)[0]!, new RegExp(`^l9gpu: ${shortfall.source}$`));
  assert.match(gpus.stdout, new RegExp(h100(0).uuid), 'the GPU found is listed');
  const doc = await runCli(['doctor', '--config', two.path], fake.env());
  assert.equal(doc.status, 1);
  assert.match(lines(doc.stdout)[1]!, new RegExp(`^PROBLEM: ${shortfall.source}$`));
  const once = await runCli(['daemon', '--once', '--config', two.path], fake.env());
  assert.equal(once.status, 1);
  assert.match(once.stderr, shortfall);

  // a login node with the driver's libraries and no driver: 0 expected, nothing wrong
  const down = new FakeNvml({ init_error: DRIVER_NOT_LOADED, devices: [] });
  const zero = config('expect_gpus = 0\n');
  const login = await runCli(['gpus', '--json', '--config', zero.path], down.env());
  assert.equal(login.status, 0, login.stdout);
  assert.deepEqual(JSON.parse(login.stdout).errors, []);
  assert.equal((await runCli(['doctor', '--config', zero.path], down.env())).status, 0);
  assert.equal((await runCli(['daemon', '--once', '--config', zero.path], down.env())).status, 0);
});

test("the store's inventory having seen GPUs: none found now is a problem, even with no driver library left", async () => {
  const c = config();
  const db = openStore(c.state);
  upsertInventory(db, [
    {
      uuid: h100(0).uuid,
      vendor: 'nvidia',
      vendorIndex: 0,
      minor: 0,
      pciBusId: '0000:18:00.0',
      model: 'NVIDIA H100 80GB HBM3',
      migParent: null,
      migGi: null,
      migCi: null,
    },
  ]);
  db.close();
  const env = { L9GPU_NVML_LIBRARY: '/nonexistent/libnvidia-ml.so.1' };
  const seen = new RegExp(`no GPU found, though the store's inventory has seen 1 nvidia GPU\\(s\\) \\(${c.state}/l9gpu.db\\)`);
  const gpus = await runCli(['gpus', '--config', c.path], env);
  assert.equal(gpus.status, 1);
  assert.match(lines(gpus.stderr)[0]!, seen);
  assert.match(lines(gpus.stderr)[1]!, /^l9gpu: nvml: not enabled by auto: \/nonexistent\/libnvidia-ml.so.1 not found$/);
  const doc = await runCli(['doctor', '--config', c.path], env);
  assert.equal(doc.status, 1);
  assert.match(lines(doc.stdout)[1]!, seen);
});
