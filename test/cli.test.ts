import assert from 'node:assert/strict';
import http from 'node:http';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { test } from 'node:test';
import { METRICS } from '../src/core/metrics/registry.js';
import { DaemonProcess, EMPTY_CONFIG, jsonKind, parseLines, runCli } from './helpers/daemon.js';
import { freePort } from './helpers/net.js';
import { ROOT, tempDir } from './helpers/paths.js';
import { MAN_COMMANDS } from '../src/cli/help.js';
import { recordStart } from '../src/store/jobs.js';
import { openStore } from '../src/store/open.js';

const dir = tempDir();

test('a bad config is one line on stderr and exit code 2', async () => {
  const f = join(dir, 'bad.ini');
  writeFileSync(f, '[daemon]\nsinks = stdout\n[stdout]\nresource = perhaps\n');
  for (const args of [['daemon', '--config', f], ['daemon', '--once', '--config', f], ['doctor', '--config', f]]) {
    const r = await runCli(args);
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stderr, `l9gpu: ${f}:4 [stdout] resource: "perhaps" is not a boolean (true/false)\n`);
    assert.equal(r.stdout, '');
  }
  const r = await runCli(['daemon', '--once', '--plugin', 'sim', '--interval', 'soon']);
  assert.equal(r.status, 2);
  assert.equal(r.stderr, 'l9gpu: --interval: "soon" is not a duration (examples: 10, 10s, 500ms, 2m)\n');
  const e = await runCli(['daemon', '--once', '--sink', 'otlp'], { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' });
  assert.equal(e.status, 2);
  assert.equal(e.stderr, 'l9gpu: environment OTEL_EXPORTER_OTLP_PROTOCOL (for [otlp] protocol): "grpc" is not one of http/protobuf, http/json\n');
  const w = await runCli(['daemon', '--once', '--sink', 'webhook']);
  assert.equal(w.status, 2);
  assert.equal(w.stderr, 'l9gpu: [webhook] url: required when the webhook sink is enabled\n');
});

test('help documents every command and every daemon flag', async () => {
  const top = await runCli(['--help']);
  assert.equal(top.status, 0);
  assert.match(top.stdout, /daemon\s+Run the telemetry agent/);
  assert.match(top.stdout, /doctor\s+Report the environment/);
  const d = await runCli(['daemon', '--help']);
  for (const flag of ['--config=FILE', '--once', '--interval=SECONDS', '--sink=NAME', '--plugin=NAME', '--attribution=<option>']) assert.ok(d.stdout.includes(flag), flag);
  assert.match(d.stdout, /SIGHUP reloads/);
  const doc = await runCli(['doctor', '--help']);
  for (const flag of ['--config=FILE', '--json', '--all']) assert.ok(doc.stdout.includes(flag), flag);
});

test('every command\'s --help reads like a man page: usage, description, an example, exit status, files, see also', async () => {
  const ids = readdirSync(join(ROOT, 'dist', 'src', 'commands'), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.js'))
    .map((f) => f.replace(/\.js$/, '').replace(/\/index$/, '').split('/').join(' '));
  assert.deepEqual([...ids].sort(), [...MAN_COMMANDS].sort(), 'a man table for every command (src/cli/help.ts)');
  for (const id of ids) {
    const r = await runCli([...id.split(' '), '--help']);
    assert.equal(r.status, 0, id);
    for (const h of ['USAGE', 'DESCRIPTION', 'EXAMPLES', 'EXIT STATUS', 'SEE ALSO']) assert.match(r.stdout, new RegExp(`^${h}$`, 'm'), `${id}: ${h}`);
    assert.match(r.stdout, /^EXAMPLES\n {2}\$ l9gpu /m, `${id}: an example`);
  }
});

test('help is printed from the texts written at build time, each the same as oclif renders it, for every command and topic', async () => {
  const texts = JSON.parse(readFileSync(join(ROOT, 'dist', 'help.json'), 'utf8')) as Record<string, string>;
  assert.deepEqual(Object.keys(texts).filter((k) => k && k !== 'slurm').sort(), [...MAN_COMMANDS].sort(), 'every command');
  const bin = pathToFileURL(join(ROOT, 'bin', 'run.js')).href;
  for (const id of Object.keys(texts)) {
    const words = id ? id.split(' ') : [];
    const oclif = spawnSync(process.execPath, ['--input-type=module', '-e', `const { execute } = await import('@oclif/core'); await execute({ dir: ${JSON.stringify(bin)}, args: ${JSON.stringify([...words, '--help'])} });`], {
      cwd: ROOT, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' },
    });
    assert.equal(oclif.status, 0, oclif.stderr);
    for (const args of [[...words, '--help'], [...words, '-h'], ...(id ? [] : [[]])]) {
      const ours = await runCli(args);
      assert.equal(ours.status, 0, ours.stderr);
      assert.equal(ours.stdout, oclif.stdout, `l9gpu ${args.join(' ')}`);
    }
  }
  // what the texts do not hold goes to oclif: a flag beside --help, an unknown command
  const other = await runCli(['jobs', '--json', '--help']);
  assert.match(other.stdout, /^USAGE\n {2}\$ l9gpu jobs/m);
  const unknown = await runCli(['jbos', '--help']);
  assert.notEqual(unknown.status, 0);
});

test('the light entry runs jobs as oclif would, and hands what it cannot parse to oclif', async () => {
  const cfg = join(dir, 'jobs.ini');
  writeFileSync(cfg, `[daemon]\nstate_dir = ${join(dir, 'no-store')}\n`);
  const version = await runCli(['--version']);
  assert.match(version.stdout, /^l9gpu\/\d+\.\d+\.\d+ linux-x64 node-v20\.\d+\.\d+\n$/);
  const missing = await runCli(['jobs', '--config', cfg]);
  assert.equal(missing.status, 1);
  assert.match(missing.stderr, /^l9gpu: .*no l9gpu store at .*no-store\/l9gpu.db/m);
  const typo = await runCli(['jobs', '--limt', '5', '--config', cfg]);
  assert.equal(typo.status, 2);
  assert.match(typo.stderr, /Nonexistent flag: --limt/, 'oclif\'s message');
  const bad = await runCli(['jobs', '--state', 'runnin', '--config', cfg]);
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /Expected --state=runnin to be one of: running, completed, all/);
  const both = await runCli(['jobs', '--json', '--csv', '--config', cfg]);
  assert.equal(both.status, 2);
  assert.match(both.stderr, /--csv=true cannot also be provided when using --json/);
  const id = await runCli(['jobs', 'show', 'x1', '--config', cfg]);
  assert.equal(id.status, 2);
  assert.equal(id.stderr, 'l9gpu: "x1" is not a job id (123 or 122_4) nor a pod (namespace/name)\n');
});

test('--once with --plugin/--sink runs each plugin once and exits 0', async () => {
  const r = await runCli(['daemon', '--once', '--plugin', 'host', '--plugin', 'sim', '--sink', 'stdout']);
  assert.equal(r.status, 0, r.stderr);
  const pts = parseLines(r.stdout);
  const names = new Set(pts.map((p) => p.name));
  for (const n of ['system.cpu.utilization', 'system.memory.usage', 'gpu.utilization', 'gpu.energy.consumption', 'l9gpu.collector.points', 'l9gpu.process.memory.rss']) assert.ok(names.has(n), n);
  // exactly one collection per plugin: 8 sim GPUs -> 8 utilization points
  assert.equal(pts.filter((p) => p.name === 'gpu.utilization').length, 8);
  const collected = pts.filter((p) => p.name === 'l9gpu.collector.points');
  assert.ok(collected.find((p) => p.attributes['l9gpu.plugin'] === 'sim')!.value > 0);
});

test('every sim point follows the stdout contract with the registry unit and kind', async () => {
  const r = await runCli(['daemon', '--once', '--plugin', 'sim', '--sink', 'stdout']);
  assert.equal(r.status, 0, r.stderr);
  const byName = new Map(METRICS.map((m) => [m.name, m]));
  const lines = r.stdout.trim().split('\n');
  assert.ok(lines.length > 100);
  for (const line of lines) {
    const p = JSON.parse(line);
    const def = byName.get(p.name)!;
    assert.ok(def, p.name);
    const histogram = def.kind === 'histogram' ? ['sum', 'bounds', 'counts'] : [];
    assert.deepEqual(Object.keys(p).filter((k) => k !== 'monotonic'), ['time', 'name', 'unit', 'kind', 'value', ...histogram, 'attributes', 'resource']);
    assert.ok(!Number.isNaN(Date.parse(p.time)) && p.time.endsWith('Z'), p.time);
    assert.equal(p.unit, def.unit);
    assert.equal(p.kind, jsonKind(def.kind));
    assert.equal(p.monotonic, def.kind === 'sum' || def.kind === 'updown' ? def.kind === 'sum' : undefined, `${p.name}: monotonic only on sums`);
    assert.equal(typeof p.value, 'number');
    assert.equal(p.resource['service.name'], 'l9gpu');
    if (def.scope === 'gpu') {
      assert.equal(p.attributes['gpu.vendor'], 'sim');
      assert.match(p.attributes['gpu.uuid'], /^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      for (const k of ['gpu.index', 'gpu.model', 'gpu.pci.bus_id']) assert.ok(k in p.attributes, k);
      for (const k of def.attributes) assert.ok(k in p.attributes, `${p.name} needs ${k}`);
      if (def.unit === '1' && def.kind !== 'histogram') assert.ok(p.value >= 0 && p.value <= 1, `${p.name}=${p.value} is a ratio`);
    }
  }
});

test('doctor reports the config file, provenance, plugins, sinks and store', async () => {
  const port = await freePort();
  const f = join(dir, 'doctor.ini');
  writeFileSync(f, `[daemon]\nplugins = host, sim\nsinks = prometheus, otlp\n[prometheus]\nhost = 127.0.0.1\nport = ${port}\n[otlp]\nendpoint = http://127.0.0.1:${await freePort()}/v1/metrics\nheaders = authorization=secret\n`);
  const r = await runCli(['doctor', '--config', f], { L9GPU_STATE_DIR: join(dir, 'state'), OTEL_EXPORTER_OTLP_TIMEOUT: '3000' });
  assert.equal(r.status, 1, 'the otlp endpoint is down: one problem');
  assert.match(r.stdout, new RegExp(`config file: ${f} \\(--config\\)`));
  assert.match(r.stdout, new RegExp(`plugins = host, sim\\s+\\(file: ${f}:2\\)`));
  assert.match(r.stdout, /interval = 10s\s+\(default\)/);
  assert.match(r.stdout, /timeout = 3s\s+\(env: OTEL_EXPORTER_OTLP_TIMEOUT\)/);
  assert.match(r.stdout, /headers = authorization=\*\*\*/);
  assert.ok(!r.stdout.includes('secret'), 'secrets are masked');
  assert.match(r.stdout, /ok\s+host\s+enabled\s+\S+\/stat readable/);
  assert.match(r.stdout, /ok\s+sim\s+enabled\s+8 simulated GPUs/);
  assert.match(r.stdout, new RegExp(`ok\\s+prometheus\\s+enabled\\s+listening on http://127.0.0.1:${port}/metrics - 127.0.0.1:${port} is free`));
  assert.match(r.stdout, /FAIL otlp\s+enabled .* ECONNREFUSED/);
  assert.match(r.stdout, /-\s+webhook\s+disabled/);
  assert.match(r.stdout, new RegExp(`store: ${join(dir, 'state', 'l9gpu.db')} - ${join(dir, 'state')} does not exist yet; ${dir} is writable`));
  assert.match(r.stdout, /attribution: none \(auto: no slurm.conf found; no kubelet pod-resources socket at \/var\/lib\/kubelet\/pod-resources\/kubelet.sock\)/);
  assert.match(r.stdout, /1 problem\(s\) found/);

  // defaults: plugins = auto finds no GPU source here (no NVML, no amd-smi, no hl-smi): host and nccl (always on: it reads
  // Inspector output when a job writes some), and that is no problem
  const j = await runCli(['doctor', '--json'], { L9GPU_STATE_DIR: join(dir, 'state'), L9GPU_NVML_LIBRARY: '/nonexistent/libnvidia-ml.so.1', PATH: '/usr/bin:/bin' });
  const rep = JSON.parse(j.stdout);
  assert.equal(j.status, 0, j.stdout);
  assert.equal(rep.config.file, EMPTY_CONFIG);
  assert.equal(rep.config.origin, 'env');
  assert.deepEqual(rep.plugins_enabled, ['host', 'nccl']);
  assert.deepEqual(rep.plugins.map((p: { name: string; enabled: boolean }) => [p.name, p.enabled]), [['host', true], ['nvml', false], ['amdsmi', false], ['hlsmi', false], ['sim', false], ['vllm', false], ['sglang', false], ['tgi', false], ['triton', false], ['nim', false], ['dcgm', false], ['nccl', true]]);
  assert.match(rep.plugins[1].detail, /^not enabled by auto: \/nonexistent\/libnvidia-ml.so.1 not found$/);
  assert.equal(rep.settings.find((s: { section: string; key: string }) => s.section === 'daemon' && s.key === 'state_dir').source, 'env');
});

test('doctor never prints credentials of an endpoint: user information and query values are ***, in text and --json', async () => {
  const cfg = join(dir, 'secret-urls.ini');
  writeFileSync(cfg, `[daemon]\nplugins = sim\nsinks = otlp, webhook\nstate_dir = ${join(dir, 'secret-state')}\n[otlp]\nendpoint = https://tenant:s3cr3t-pass@otlp.example:4318/v1/metrics?api_key=k3y-value\n[webhook]\nurl = https://hooks.example/l9gpu?token=t0k3n-value&team=gpu\ntoken = b3arer-value\n`);
  for (const args of [['doctor', '--config', cfg, '--all'], ['doctor', '--config', cfg, '--all', '--json']]) {
    const r = await runCli(args);
    for (const secret of ['s3cr3t-pass', 'tenant', 'k3y-value', 't0k3n-value', 'b3arer-value']) assert.ok(!r.stdout.includes(secret) && !r.stderr.includes(secret), `${args.join(' ')}: ${secret} printed`);
    assert.ok(r.stdout.includes('otlp.example') && r.stdout.includes('api_key=***') && r.stdout.includes('hooks.example/l9gpu?token=***&team=***'), r.stdout);
    // an unset plugin interval says what it inherits (the JSON keeps the empty value and says it in "means")
    if (args.includes('--json')) assert.ok((JSON.parse(r.stdout) as { settings: { section: string; key: string; value: string; means?: string }[] }).settings.some((x) => x.section === 'sim' && x.key === 'interval' && x.value === '' && x.means === '[daemon] interval'));
    else assert.match(r.stdout, /^ {4}interval = \(\[daemon\] interval\) +\(default\)$/m);
  }
});

test('names users chose reach the terminal without control sequences, and CSV without formulas', async () => {
  const state = join(dir, 'hostile-names');
  const db = openStore(state);
  // sbatch -J and -A take any bytes: a title-setting OSC, a colour, a screen clear, a spreadsheet formula
  const name = 'train\x1b]0;pwned\x07\x1b[31mred\x1b[2J';
  recordStart(db, { jobId: '77', runKey: 'r0', user: 'alice\x1b[8m', account: '=HYPERLINK("http://x")', partition: 'gpu\x9b1m', name }, [{ uuid: 'GPU-x', shared: false }], 'prolog', Date.now() - 60_000);
  db.close();
  const cfg = join(dir, 'hostile.ini');
  writeFileSync(cfg, `[daemon]\nstate_dir = ${state}\n`);
  for (const args of [['jobs', '--state', 'all'], ['jobs', 'show', '77']]) {
    const r = await runCli([...args, '--config', cfg]);
    assert.equal(r.status, 0, r.stderr);
    assert.doesNotMatch(r.stdout, /[\x00-\x09\x0b-\x1f\x7f-\x9f]/, `${args.join(' ')}: no control character but newlines`);
    assert.match(r.stdout, args[1] === 'show' ? /Job 77 \(train\?\]0;pwned\?\?\[31mred\?\[2J\)/ : /alice\?\[8m/);
  }
  const csv = await runCli(['jobs', '--state', 'all', '--csv', '--config', cfg]);
  const row = csv.stdout.split('\n')[1]!;
  assert.ok(row.startsWith('77,alice?[8m,"\'=HYPERLINK(""http://x"")",gpu?1m,'), row);
});

test('doctor on a healthy node: the Prometheus port held by the running l9gpu is ok; held by another program, a problem', async () => {
  const port = await freePort();
  const cfg = join(dir, 'prom-doctor.ini');
  writeFileSync(cfg, `[daemon]\nplugins = sim\nsinks = prometheus\ninterval = 1s\nstate_dir = ${join(dir, 'prom-doctor-state')}\n[prometheus]\nhost = 127.0.0.1\nport = ${port}\n`);
  const d = new DaemonProcess(['--config', cfg]);
  try {
    await d.waitStderr(/prometheus endpoint listening/);
    const r = await runCli(['doctor', '--config', cfg]);
    assert.match(r.stdout, new RegExp(`ok\\s+prometheus\\s+enabled\\s+.*127\\.0\\.0\\.1:${port} is served by a running l9gpu daemon \\(l9gpu/\\d+\\.\\d+\\.\\d+\\)`), r.stdout);
    assert.equal(r.status, 0, r.stdout);
  } finally {
    assert.equal(await d.stop(), 0, d.stderr);
  }
  const other = http.createServer((_q, s) => s.writeHead(200, { server: 'nginx' }).end()).listen(port, '127.0.0.1');
  await new Promise((r) => other.once('listening', r));
  try {
    const r = await runCli(['doctor', '--config', cfg]);
    assert.equal(r.status, 1);
    assert.match(r.stdout, new RegExp(`FAIL prometheus\\s+enabled\\s+.*127\\.0\\.0\\.1:${port} is in use by another program \\(nginx\\)`));
  } finally {
    other.close();
  }
});

test('l9gpu help <command> and l9gpu version work as a newcomer types them; the slurm topic says what the hooks are', async () => {
  for (const id of ['daemon', 'jobs show', 'slurm prolog']) {
    const a = await runCli(['help', ...id.split(' ')]);
    const b = await runCli([...id.split(' '), '--help']);
    assert.equal(a.status, 0, a.stderr);
    assert.equal(a.stdout, b.stdout, `help ${id}`);
  }
  const v = await runCli(['version']);
  assert.equal(v.status, 0);
  assert.equal(v.stdout, (await runCli(['--version'])).stdout);
  const slurm = await runCli(['slurm', '--help']);
  assert.match(slurm.stdout, /^Slurm prolog and epilog hooks: record each job's GPUs by UUID/);
  assert.match((await runCli(['help'])).stdout, /^ {2}slurm {2}Slurm prolog and epilog hooks/m);
});
