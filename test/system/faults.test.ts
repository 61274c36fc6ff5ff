/**
 * Faults on the real daemon process: an OTLP endpoint that is down and comes
 * back (a real VictoriaMetrics started late on the same port), a plugin that
 * throws, a plugin that hangs in a blocking read.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { makeDirs } from '../../src/core/make-dirs.js';
import { redactUrl, urlSecrets } from '../../src/core/redact.js';
import { createPoster, MAX_RESPONSE_BYTES } from '../../src/sinks/http-post.js';
import { createHttpClient } from '../../src/core/net/http-client.js';
import { DaemonProcess, parseLines, runCli, type JsonPoint, ownStateDir } from '../helpers/daemon.js';
import { freePort } from '../helpers/net.js';
import { tempDir } from '../helpers/paths.js';
import { VictoriaMetrics } from '../helpers/victoriametrics.js';
import { waitFor } from '../helpers/wait.js';

// beside the other files of the system lane: state in a folder of this file's own, not the node's /var/lib/l9gpu
ownStateDir();

const dir = tempDir();

function fileLines(path: string): JsonPoint[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return [];
  }
  return parseLines(text.slice(0, text.lastIndexOf('\n') + 1));
}

const selfValue = (pts: JsonPoint[], name: string, key: string, who: string): number[] =>
  pts.filter((p) => p.name === name && p.attributes[key] === who).map((p) => p.value);

test('OTLP endpoint down, then up: the daemon keeps running, the queue stays bounded, drops are counted, data resumes', async () => {
  const port = await freePort();
  const selfFile = join(dir, 'outage-self.jsonl');
  const maxQueue = 24 * 1024;
  const f = join(dir, 'outage.ini');
  writeFileSync(
    f,
    `[daemon]\nplugins = sim\nsinks = otlp, file\ninterval = 200ms\n[sim]\ngpus = ` +
      `8\n[otlp]\nendpoint = http://127.0.0.1:${port}/opentelemetry/v1/metrics\nexport_interval = ` +
      `200ms\nmax_queue_bytes = ${maxQueue}\ntimeout = 1s\n[file]\npath = ${selfFile}\n`,
  );
  const d = new DaemonProcess(['--config', f]);
  let vm: VictoriaMetrics | undefined;
  try {
    await d.waitStderr(/delivery failed: queueing and retrying with backoff reason="ECONNREFUSED/);
    // let the outage last until the bounded queue has had to drop data
    await waitFor(
      'otlp drops',
      () => selfValue(fileLines(selfFile), 'l9gpu.sink.dropped', 'l9gpu.sink', 'otlp').some((v) => v > 0),
      30_000,
    );
    await d.waitStderr(/retry queue full: dropping the oldest data/);
    const outageEnd = Date.now();
    vm = await new VictoriaMetrics().start({ port });
    const back = await d.waitStderr(/(\S+) info \[l9gpu\/otlp\] endpoint is back: delivering queued data/, 90_000);
    const backAt = Date.parse(back[1]!);

    // data resumes: points sampled after the endpoint came back arrive
    await waitFor(
      'fresh points in VictoriaMetrics',
      async () => {
        await vm!.flush();
        const raw = await vm!.exportRaw('{__name__="gpu.utilization"}');
        return raw.some((s) => s.timestamps.some((t) => t > outageEnd + 1000)) ? raw : undefined;
      },
      60_000,
    );
    // and points queued while it was down were delivered too, not only new ones
    // (the oldest were dropped: the queue holds about a second of data here)
    const raw = await vm.exportRaw('{__name__="gpu.utilization"}');
    assert.ok(
      raw.some((s) => s.timestamps.some((t) => t < backAt - 500)),
      'queued data from the outage was delivered',
    );

    const self = fileLines(selfFile);
    const queue = selfValue(self, 'l9gpu.sink.queue.size', 'l9gpu.sink', 'otlp');
    assert.ok(queue.length > 10);
    assert.ok(Math.max(...queue) <= maxQueue, `queue peaked at ${Math.max(...queue)} bytes, bound ${maxQueue}`);
    // the self-metrics report the delivery on their next tick
    await waitFor('exported points counted', () =>
      selfValue(fileLines(selfFile), 'l9gpu.sink.exported', 'l9gpu.sink', 'otlp').some((v) => v > 0),
    );
    const rss = self.filter((p) => p.name === 'l9gpu.process.memory.rss').map((p) => p.value);
    assert.ok(Math.max(...rss) < 200 * 1024 * 1024, `RSS peaked at ${Math.max(...rss)}`);
    assert.equal(d.child.exitCode, null, 'still running');
  } finally {
    assert.equal(await d.stop(), 0, d.stderr);
    await vm?.stop();
  }
});

test('a plugin that throws is counted and logged once; the other plugins go on', async () => {
  const badProc = join(dir, 'empty-proc');
  mkdirSync(badProc);
  const out = join(dir, 'throws.jsonl');
  const f = join(dir, 'throws.ini');
  writeFileSync(
    f,
    `[daemon]\nplugins = host, sim\nsinks = file\ninterval = 100ms\n[host]\nproc_path = ${badProc}\n[sim]\ngpus ` +
      `= 1\n[file]\npath = ${out}\n`,
  );
  const d = new DaemonProcess(['--config', f]);
  try {
    await waitFor('10 host errors while sim keeps publishing', () => {
      const pts = fileLines(out);
      const errs = selfValue(pts, 'l9gpu.collector.errors', 'l9gpu.plugin', 'host');
      return errs.some((v) => v >= 10) && pts.filter((p) => p.name === 'gpu.utilization').length >= 10;
    });
    const lines = d.stderr.split('\n').filter((l) => l.includes('collection failed plugin=host'));
    assert.equal(lines.length, 1, 'the same failure is logged once, not once per tick');
    assert.match(lines[0]!, /ENOENT/);
    assert.match(lines[0]!, new RegExp(`${badProc}/stat`));
  } finally {
    assert.equal(await d.stop(), 0);
  }
});

test('a plugin that hangs is timed out, its ticks skipped and counted; the others go on; SIGTERM still exits 0', async () => {
  const hungProc = join(dir, 'fifo-proc');
  mkdirSync(hungProc);
  // reading a FIFO with no writer blocks forever: a real hang in a real read
  execFileSync('mkfifo', [join(hungProc, 'stat')]);
  const out = join(dir, 'hang.jsonl');
  const f = join(dir, 'hang.ini');
  writeFileSync(
    f,
    `[daemon]\nplugins = host, sim\nsinks = file\ninterval = 100ms\nshutdown_timeout = ` +
      `2s\n[host]\nproc_path = ${hungProc}\ntimeout = 300ms\n[sim]\ngpus = 1\n[file]\npath = ${out}\n`,
  );
  const d = new DaemonProcess(['--config', f]);
  try {
    await waitFor('host skipped ticks while sim keeps publishing', () => {
      const pts = fileLines(out);
      return (
        selfValue(pts, 'l9gpu.collector.skipped', 'l9gpu.plugin', 'host').some((v) => v >= 5) &&
        selfValue(pts, 'l9gpu.collector.points', 'l9gpu.plugin', 'sim').some((v) => v > 200)
      );
    });
    const pts = fileLines(out);
    assert.equal(Math.max(...selfValue(pts, 'l9gpu.collector.errors', 'l9gpu.plugin', 'host')), 1, 'one timeout, counted once');
    assert.equal(pts.filter((p) => p.name === 'system.cpu.utilization').length, 0);
    assert.match(d.stderr, /collection timed out: its ticks are skipped until it returns plugin=host timeout_s=0.3/);
  } finally {
    const t0 = Date.now();
    assert.equal(await d.stop(), 0, d.stderr);
    assert.ok(Date.now() - t0 < 10_000, 'exits despite the hung read');
  }
  // --once does not wait forever for a hung plugin either; host was asked for and failed: exit 1
  const once = await runCli(['daemon', '--once', '--config', f, '--sink', 'stdout'], {}, 20_000);
  assert.equal(once.status, 1, once.stderr);
  assert.match(once.stderr, /plugins asked for failed \(their errors above\) plugins=host$/m);
  assert.ok(parseLines(once.stdout).some((p) => p.name === 'gpu.utilization'));
});

test(
  'an OTLP endpoint that says 200 and then streams its answer slowly (or forever, or 1 GB): ' +
    'the data is delivered once, not resent; a 503 whose body never ends is retried',
  async () => {
    let requests = 0;
    let status = 200;
    const server = createServer((req, res) => {
      requests++;
      req.resume();
      req.on('end', () => {
        res.writeHead(status, { 'content-type': 'application/x-protobuf' });
        // a byte now, then a byte every 300 ms for ever: the answer never ends inside the 1 s timeout
        res.write(Buffer.alloc(1));
        const t = setInterval(() => res.write(Buffer.alloc(1)), 300);
        res.on('close', () => clearInterval(t));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/metrics`;
    try {
      const f = join(dir, 'slow-body.ini');
      writeFileSync(
        f,
        `[daemon]\nplugins = sim\nsinks = otlp\nshutdown_timeout = 5s\n[sim]\ngpus = 1\n[otlp]\nendpoint = ${url}\ntimeout = 1s\n`,
      );
      const r = await runCli(['daemon', '--once', '--config', f]);
      assert.equal(r.status, 0, r.stderr);
      assert.equal(requests, 1, 'accepted once: not sent again (a duplicate at the backend)');
      assert.doesNotMatch(r.stderr, /delivery failed/);

      // a refusal whose body never ends is still a refusal, retried
      status = 503;
      requests = 0;
      const r2 = await runCli(['daemon', '--once', '--config', f]);
      assert.equal(r2.status, 1, r2.stderr);
      assert.ok(requests >= 2, `retried (${requests} requests)`);
      assert.match(r2.stderr, /delivery failed: queueing and retrying with backoff reason="HTTP 503 \(/);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  },
);

test(
  'a PromQL endpoint whose answer never ends: jobs show --source promql stops reading at its ' +
    'bound and says so (exit 1), memory bounded',
  async () => {
    const series = JSON.stringify({
      metric: { __name__: 'gpu_utilization_ratio', slurm_job_id: '42' },
      values: Array.from({ length: 1000 }, (_, i) => [1_795_000_000 + i, '0.5']),
    });
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"status":"success","data":{"resultType":"matrix","result":[' + series);
      // as fast as the client reads, for ever
      const more = (): void => {
        while (res.write(',' + series));
        res.once('drain', more);
      };
      more();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const r = await runCli(['jobs', 'show', '42', '--source', 'promql', '--url', url, '--window', '1h'], {}, 60_000);
      assert.equal(r.status, 1, r.stderr);
      assert.match(
        r.stderr,
        new RegExp(
          String.raw`^l9gpu: PromQL http:\/\/127\.0\.0\.1:\d+: the answer is larger than 64 MiB ` +
            String.raw`\(query: .*\): stopped reading it; a shorter --window asks for less\n$`,
        ),
        'one line, no stack',
      );
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  },
);

test(
  'a file sink path or a state dir under /proc (where mkdir -p never ends in node): an error ' +
    'naming the folder at once, not a spin at 100 % CPU',
  async () => {
    assert.throws(() => makeDirs('/proc/l9gpu-test/a/b'), { message: /^cannot create \/proc\/l9gpu-test: ENOENT/ });
    const made = join(dir, 'made', 'a', 'b');
    makeDirs(made);
    makeDirs(made);
    assert.ok(statSync(made).isDirectory());
    const f = join(dir, 'proc-paths.ini');
    writeFileSync(
      f,
      `[daemon]\nplugins = sim\nsinks = file, stdout\nattribution = slurm\nstate_dir = ` +
        `/proc/l9gpu-state\n[sim]\ngpus = 1\n[file]\npath = /proc/l9gpu-test/m.jsonl\n`,
    );
    const r = await runCli(['daemon', '--once', '--config', f], {}, 30_000);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, /sink could not start: retrying sink=file error="cannot create \/proc\/l9gpu-test: ENOENT/);
    assert.match(r.stderr, /job attribution off: cannot create \/proc\/l9gpu-state: ENOENT/);
    assert.ok(
      parseLines(r.stdout).some((p) => p.name === 'gpu.utilization'),
      'stdout still gets the data',
    );
  },
);

test(
  'SIGTERM while the OTLP endpoint accepts and never answers: the daemon gives up at ' +
    'shutdown_timeout, says what it could not deliver, exits 0',
  async () => {
    const sockets = new Set<import('node:net').Socket>();
    const server = createServer(() => {
      /* never answers */
    });
    server.on('connection', (s) => sockets.add(s));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/metrics`;
    try {
      const f = join(dir, 'hung-sink.ini');
      writeFileSync(
        f,
        `[daemon]\nplugins = sim\nsinks = otlp\ninterval = 200ms\nshutdown_timeout = ` +
          `2s\n[sim]\ngpus = 1\n[otlp]\nendpoint = ${url}\ntimeout = 30s\nexport_interval = 200ms\n`,
      );
      const d = new DaemonProcess(['--config', f], {});
      await waitFor('a request in flight', () => sockets.size > 0);
      const t = Date.now();
      const code = await d.stop('SIGTERM', 20_000);
      const took = Date.now() - t;
      assert.equal(code, 0, d.stderr);
      assert.ok(took < 5000, `exited ${took} ms after SIGTERM (shutdown_timeout 2 s)`);
      assert.match(d.stderr, /stopping: flushing sinks signal=SIGTERM/);
      assert.match(d.stderr, /exiting with undelivered data \(counted as dropped\) requests=\d+ points=\d+/);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    }
  },
);

test(
  'secrets (URL user information and query values, headers, a token file) never reach logs, ' +
    'doctor (text and --json) or exported data, even when the backend echoes them',
  async () => {
    const SECRETS = ['s3cret-pw', 's3cret-q', 's3cret-hdr', 's3cret-file'];
    // a backend that refuses and echoes what it got, as some do in their error bodies
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(401, { 'content-type': 'text/plain' });
        res.end(`unauthorized: ${req.headers.authorization ?? ''} ${req.url ?? ''}`);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      const tokenFile = join(dir, 'webhook.token');
      writeFileSync(tokenFile, 's3cret-file\n', { mode: 0o600 });
      const f = join(dir, 'secrets.ini');
      writeFileSync(
        f,
        `[daemon]\nplugins = sim\nsinks = otlp, webhook, stdout\nshutdown_timeout = 2s\n[sim]\ngpus ` +
          `= 1\n[otlp]\nendpoint = http://user:s3cret-pw@127.0.0.1:${port}/v1/metrics?token=s3cret-q\nheaders ` +
          `= authorization=Bearer%20s3cret-hdr\n[webhook]\nurl = http://127.0.0.1:${port}/hook?key=s3cret-q\ntoken_file ` +
          `= ${tokenFile}\n`,
      );
      const runs = [
        await runCli(['daemon', '--once', '--config', f]),
        await runCli(['doctor', '--config', f]),
        await runCli(['doctor', '--json', '--config', f]),
      ];
      assert.match(runs[0]!.stderr, /endpoint rejected data \(not retried\) reason="HTTP 401/, 'the backend was reached and refused');
      for (const r of runs)
        for (const s of SECRETS) assert.ok(!(r.stdout + r.stderr).includes(s), `${s} leaked:\n${r.stdout}\n${r.stderr}`);
    } finally {
      await new Promise((r) => server.close(r));
    }
  },
);

test(
  'an OTLP endpoint that answers 500 for ever: retried with backoff, the queue stays at its ' +
    'bound, drops counted, said once, memory bounded',
  async () => {
    let requests = 0;
    const server = createServer((req, res) => {
      requests++;
      req.resume();
      req.on('end', () => res.writeHead(500, { 'content-type': 'text/plain' }).end('internal error'));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const selfFile = join(dir, 'http500-self.jsonl');
    const maxQueue = 24 * 1024;
    const f = join(dir, 'http500.ini');
    writeFileSync(
      f,
      `[daemon]\nplugins = sim\nsinks = otlp, file\ninterval = 200ms\n[sim]\ngpus = ` +
        `8\n[otlp]\nendpoint = http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/metrics\nexport_interval ` +
        `= 200ms\nmax_queue_bytes = ${maxQueue}\ntimeout = 1s\n[file]\npath = ${selfFile}\n`,
    );
    const d = new DaemonProcess(['--config', f]);
    try {
      await d.waitStderr(/delivery failed: queueing and retrying with backoff reason="HTTP 500: internal error"/);
      await waitFor(
        'otlp drops',
        () => selfValue(fileLines(selfFile), 'l9gpu.sink.dropped', 'l9gpu.sink', 'otlp').some((v) => v > 0),
        30_000,
      );
      const queue = selfValue(fileLines(selfFile), 'l9gpu.sink.queue.size', 'l9gpu.sink', 'otlp');
      assert.ok(Math.max(...queue) <= maxQueue, `queue peaked at ${Math.max(...queue)} bytes, bound ${maxQueue}`);
      assert.equal(d.stderr.match(/delivery failed: queueing and retrying/g)?.length, 1, 'said once while it lasts');
      const seconds = (Date.now() - d.startedAt) / 1000;
      assert.ok(requests < seconds * 5, `backoff: ${requests} requests in ${seconds.toFixed(1)} s (not one per 200 ms export)`);
      assert.ok(d.peakRssMb() <= 96, `peak RSS ${d.peakRssMb().toFixed(1)} MB`);
    } finally {
      assert.equal(await d.stop(), 0, d.stderr);
      await new Promise((r) => server.close(r));
    }
  },
);

test('the secret parts of a URL, raw and decoded, a stray % kept as written (it made the sink fail to start)', () => {
  const url = 'http://us%zz:p%40ss@127.0.0.1:1/v1/metrics?token=a%2Bb&x=c+d&bad=%zz';
  // a short user name beside a password is a name, not a secret: masked everywhere it would blank the word
  assert.deepEqual(urlSecrets(new URL(url)).sort(), ['%zz', 'a%2Bb', 'a+b', 'c d', 'c+d', 'p%40ss', 'p@ss'].sort());
  assert.deepEqual(urlSecrets(new URL('https://user:s3cret-pw@backend/')), ['s3cret-pw']);
  // a user name alone, or a long one, is the credential itself (https://<token>@host)
  assert.deepEqual(urlSecrets(new URL('https://glpat-abcdef@backend/')), ['glpat-abcdef']);
  assert.deepEqual(urlSecrets(new URL('https://abcdefghijklmnop:xy@backend/')), ['abcdefghijklmnop', 'xy']);
  assert.equal(redactUrl(url), 'http://***:***@127.0.0.1:1/v1/metrics?token=***&x=***&bad=***');
  createPoster(createHttpClient({ url, timeoutMs: 1000, maxResponseBytes: MAX_RESPONSE_BYTES }), {
    ca: 'ca',
    cert: 'cert',
    endpoint: 'endpoint',
  }).close();
});
