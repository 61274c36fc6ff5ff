import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { DaemonProcess, ownStateDir } from '../helpers/daemon.js';
import { HttpCapture } from '../helpers/http-capture.js';
import { freePort } from '../helpers/net.js';
import { decodeOtlp } from '../helpers/otlp-decode.js';
import { tempDir } from '../helpers/paths.js';
import { waitFor } from '../helpers/wait.js';

// beside the other files of the system lane: state in a folder of this file's own, not the node's /var/lib/l9gpu
ownStateDir();

const dir = tempDir();

test('SIGTERM delivers what the OTLP sink still holds, then exits 0', async () => {
  const rx = await new HttpCapture().start();
  const f = join(dir, 'term.ini');
  // export_interval far beyond the test: only the shutdown flush can deliver
  writeFileSync(
    f,
    `[daemon]\nplugins = sim\nsinks = otlp, stdout\ninterval = 100ms\n[sim]\ngpus = ` +
      `2\n[otlp]\nendpoint = ${rx.url}/v1/metrics\nexport_interval = 1h\n`,
  );
  const d = new DaemonProcess(['--config', f]);
  try {
    await waitFor('a few collections', () => d.points().filter((p) => p.name === 'gpu.utilization').length >= 6);
    assert.equal(rx.requests.length, 0);
    assert.equal(await d.stop('SIGTERM'), 0);
    assert.equal(rx.requests.length, 1, 'the shutdown flush sent the buffered points');
    const sent = decodeOtlp(rx.requests[0]!.body).resourceMetrics[0]!.scopeMetrics[0]!.metrics.find((m) => m.name === 'gpu.utilization')!;
    assert.ok(sent.gauge!.dataPoints.length >= 6);
    assert.match(d.stderr, /stopping: flushing sinks signal=SIGTERM/);
  } finally {
    await rx.stop();
  }
});

test('SIGHUP reloads the configuration; a bad file is logged and the running one kept', async () => {
  const port = await freePort();
  const f = join(dir, 'hup.ini');
  const conf = (gpus: number | string, extra = '') =>
    `[daemon]\nplugins = sim\nsinks = stdout, prometheus\ninterval = 100ms\n[sim]\ngpus = ${gpus}\n[prometheus]\nhost ` +
    `= 127.0.0.1\nport = ${port}\n${extra}`;
  writeFileSync(f, conf(2));
  const d = new DaemonProcess(['--config', f]);
  try {
    await d.waitStderr(/prometheus endpoint listening/);
    await waitFor('2 GPUs', () => d.points().some((p) => p.name === 'gpu.utilization' && p.attributes['gpu.index'] === 1));

    writeFileSync(f, conf(3));
    d.child.kill('SIGHUP');
    await d.waitStderr(/configuration reloaded/);
    const mark = d.stdout.length;
    await waitFor('a third GPU after reload', () => d.stdout.slice(mark).includes('"gpu.index":2'));
    // the prometheus sink's section did not change: same listener, never restarted
    assert.equal(d.stderr.match(/prometheus endpoint listening/g)!.length, 1);
    const page = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    assert.match(page, /gpu_utilization_ratio\{[^}]*gpu_index="2"/);

    writeFileSync(f, conf('many'));
    d.child.kill('SIGHUP');
    await d.waitStderr(/reload failed: keeping the running configuration error=".*\[sim\] gpus: \\"many\\" is not an integer"/);
    const mark2 = d.stdout.length;
    await waitFor(
      'still collecting after a bad reload',
      () =>
        d.stdout
          .slice(mark2)
          .split('\n')
          .filter((l) => l.includes('"gpu.utilization"')).length >= 6,
    );
    assert.equal(d.child.exitCode, null);

    // dropping the plugin on reload stops its series; the endpoint ages them out
    writeFileSync(f, conf(3).replace('plugins = sim', 'plugins = host'));
    d.child.kill('SIGHUP');
    await waitFor(
      'sim series gone from /metrics',
      async () => !(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()).includes('gpu_utilization_ratio{'),
    );
  } finally {
    assert.equal(await d.stop('SIGINT'), 0);
  }
});
