import assert from 'node:assert/strict';
import http from 'node:http';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { test } from 'node:test';
import { METRICS } from '../../src/core/metrics/registry.js';
import { DaemonProcess, EMPTY_CONFIG, jsonKind, parseLines, runCli } from '../helpers/daemon.js';
import { lock, unlock } from '../helpers/host-lock.js';
import { CONFIGLESS_LOCK } from '../helpers/slurm.js';
import { freePort } from '../helpers/net.js';
import { ROOT, tempDir } from '../helpers/paths.js';
import { MAN_COMMANDS } from '../../src/cli/help.js';
import { COMMANDS, VERSION_ARGS } from '../../src/cli/command-table.js';
import { recordStart } from '../../src/store/jobs.js';
import { openStore } from '../../src/store/open.js';

const dir = tempDir();

test('a bad config is one line on stderr and exit code 2', async () => {
  const f = join(dir, 'bad.ini');
  writeFileSync(f, '[daemon]\nsinks = stdout\n[stdout]\nresource = perhaps\n');
  for (const args of [
    ['daemon', '--config', f],
    ['daemon', '--once', '--config', f],
    ['doctor', '--config', f],
  ]) {
    const r = await runCli(args);
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stderr, `l9gpu: ${f}:4 [stdout] resource: "perhaps" is not a boolean (true/false)\n`);
    assert.equal(r.stdout, '');
  }
  const r = await runCli(['daemon', '--once', '--plugin', 'sim', '--interval', 'soon']);
  assert.equal(r.status, 2);
  assert.equal(r.stderr, 'l9gpu: --interval: "soon" is not a duration (examples: 10, 10s, 500ms, 2m)\n');
  const e = await runCli(['daemon', '--once', '--sink', 'otlp'], { OTEL_EXPORTER_OTLP_PROTOCOL: 'thrift' });
  assert.equal(e.status, 2);
  assert.equal(
    e.stderr,
    'l9gpu: environment OTEL_EXPORTER_OTLP_PROTOCOL (for [otlp] protocol): "thrift" is not one of http/protobuf, http/json, grpc\n',
  );
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
  for (const flag of ['--config=FILE', '--once', '--interval=SECONDS', '--sink=NAME', '--plugin=NAME', '--attribution=<option>'])
    assert.ok(d.stdout.includes(flag), flag);
  assert.match(d.stdout, /SIGHUP reloads/);
  const doc = await runCli(['doctor', '--help']);
  for (const flag of ['--config=FILE', '--json', '--all']) assert.ok(doc.stdout.includes(flag), flag);
});

test("every command's --help reads like a man page: usage, description, an example, exit status, files, see also", async () => {
  const ids = readdirSync(join(ROOT, 'dist', 'src', 'commands'), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.js'))
    .map((f) =>
      f
        .replace(/\.js$/, '')
        .replace(/\/index$/, '')
        .split('/')
        .join(' '),
    );
  assert.deepEqual([...ids].sort(), [...MAN_COMMANDS].sort(), 'a man table for every command (src/cli/help.ts)');
  for (const id of ids) {
    const r = await runCli([...id.split(' '), '--help']);
    assert.equal(r.status, 0, id);
    for (const h of ['USAGE', 'DESCRIPTION', 'EXAMPLES', 'EXIT STATUS', 'SEE ALSO'])
      assert.match(r.stdout, new RegExp(`^${h}$`, 'm'), `${id}: ${h}`);
    assert.match(r.stdout, /^EXAMPLES\n {2}\$ l9gpu /m, `${id}: an example`);
  }
});

test(
  'bin/run.js starts each command as the command table says: dist/commands.json is the ' +
    "table's routes, and the oclif command files are its rows",
  () => {
    const routes = JSON.parse(readFileSync(join(ROOT, 'dist', 'commands.json'), 'utf8')) as Record<string, string>;
    const want = Object.fromEntries([...COMMANDS.map((c) => [c.id, c.entry]), ...VERSION_ARGS.map((a) => [a, 'version'])]);
    assert.deepEqual(routes, want, 'dist/commands.json, written at build (src/cli/write-help.ts), against src/cli/command-table.ts');
    const files = readdirSync(join(ROOT, 'dist', 'src', 'commands'), { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.js'))
      .map((f) =>
        f
          .replace(/\.js$/, '')
          .replace(/\/index$/, '')
          .split('/')
          .join(' '),
      );
    assert.deepEqual(files.sort(), COMMANDS.map((c) => c.id).sort(), 'one oclif command file per row of the table, none more');
    for (const c of COMMANDS)
      assert.equal(c.run !== undefined, c.entry === 'light', `${c.id}: a light command has a body, and only a light one`);
  },
);

test('help is printed from the texts written at build time, each the same as oclif renders it, for every command and topic', async () => {
  const texts = JSON.parse(readFileSync(join(ROOT, 'dist', 'help.json'), 'utf8')) as Record<string, string>;
  assert.deepEqual(
    Object.keys(texts)
      .filter((k) => k && k !== 'slurm')
      .sort(),
    [...MAN_COMMANDS].sort(),
    'every command',
  );
  const bin = pathToFileURL(join(ROOT, 'bin', 'run.js')).href;
  for (const id of Object.keys(texts)) {
    const words = id ? id.split(' ') : [];
    const oclif = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const { execute } = await import('@oclif/core'); await execute({ dir: ${JSON.stringify(bin)}, ` +
          `args: ${JSON.stringify([...words, '--help'])} });`,
      ],
      {
        cwd: ROOT,
        encoding: 'utf8',
        env: { ...process.env, NO_COLOR: '1' },
      },
    );
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
  assert.match(typo.stderr, /Nonexistent flag: --limt/, "oclif's message");
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
  for (const n of [
    'system.cpu.utilization',
    'system.memory.usage',
    'gpu.utilization',
    'gpu.energy.consumption',
    'l9gpu.collector.points',
    'l9gpu.process.memory.rss',
  ])
    assert.ok(names.has(n), n);
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
    assert.deepEqual(
      Object.keys(p).filter((k) => k !== 'monotonic'),
      ['time', 'name', 'unit', 'kind', 'value', ...histogram, 'attributes', 'resource'],
    );
    assert.ok(!Number.isNaN(Date.parse(p.time)) && p.time.endsWith('Z'), p.time);
    assert.equal(p.unit, def.unit);
    assert.equal(p.kind, jsonKind(def.kind));
    assert.equal(
      p.monotonic,
      def.kind === 'sum' || def.kind === 'updown' ? def.kind === 'sum' : undefined,
      `${p.name}: monotonic only on sums`,
    );
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
  // its attribution = auto finds no slurm.conf: a Slurm suite beside it in configless mode links one under /run/slurm
  await lock(CONFIGLESS_LOCK, 600_000);
  try {
    const port = await freePort();
    const f = join(dir, 'doctor.ini');
    writeFileSync(
      f,
      `[daemon]\nplugins = host, sim\nsinks = prometheus, otlp\n[prometheus]\nhost = ` +
        `127.0.0.1\nport = ${port}\n[otlp]\nendpoint = http://127.0.0.1:${await freePort()}/v1/metrics\nheaders ` +
        `= authorization=secret\n`,
    );
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
    assert.match(
      r.stdout,
      new RegExp(`ok\\s+prometheus\\s+enabled\\s+listening on http://127.0.0.1:${port}/metrics - 127.0.0.1:${port} is free`),
    );
    assert.match(r.stdout, /FAIL otlp\s+enabled .* ECONNREFUSED/);
    assert.match(r.stdout, /-\s+webhook\s+disabled/);
    assert.match(
      r.stdout,
      new RegExp(`store: ${join(dir, 'state', 'l9gpu.db')} - ${join(dir, 'state')} does not exist yet; ${dir} is writable`),
    );
    assert.match(
      r.stdout,
      new RegExp(
        String.raw`attribution: none \(auto: no slurm.conf found; no kubelet pod-resources socket at ` +
          String.raw`\/var\/lib\/kubelet\/pod-resources\/kubelet.sock\)`,
      ),
    );
    assert.match(r.stdout, /1 problem\(s\) found/);

    // defaults: plugins = auto finds no GPU source here (no NVML, no amd-smi, no hl-smi): host and nccl (always on: it reads
    // Inspector output when a job writes some), and that is no problem
    const j = await runCli(['doctor', '--json'], {
      L9GPU_STATE_DIR: join(dir, 'state'),
      L9GPU_NVML_LIBRARY: '/nonexistent/libnvidia-ml.so.1',
      PATH: '/usr/bin:/bin',
    });
    const rep = JSON.parse(j.stdout);
    assert.equal(j.status, 0, j.stdout);
    assert.equal(rep.config.file, EMPTY_CONFIG);
    assert.equal(rep.config.origin, 'env');
    assert.deepEqual(rep.plugins_enabled, ['host', 'nccl']);
    assert.deepEqual(
      rep.plugins.map((p: { name: string; enabled: boolean }) => [p.name, p.enabled]),
      [
        ['host', true],
        ['nvml', false],
        ['amdsmi', false],
        ['hlsmi', false],
        ['sim', false],
        ['vllm', false],
        ['sglang', false],
        ['tgi', false],
        ['triton', false],
        ['nim', false],
        ['dcgm', false],
        ['nccl', true],
      ],
    );
    assert.match(rep.plugins[1].detail, /^not enabled by auto: \/nonexistent\/libnvidia-ml.so.1 not found$/);
    assert.equal(rep.settings.find((s: { section: string; key: string }) => s.section === 'daemon' && s.key === 'state_dir').source, 'env');
  } finally {
    unlock(CONFIGLESS_LOCK);
  }
});

test('doctor never prints credentials of an endpoint: user information and query values are ***, in text and --json', async () => {
  const cfg = join(dir, 'secret-urls.ini');
  writeFileSync(
    cfg,
    `[daemon]\nplugins = sim\nsinks = otlp, webhook\nstate_dir = ${join(dir, 'secret-state')}\n[otlp]\nendpoint ` +
      `= ` +
      `https://tenant:s3cr3t-pass@otlp.example:4318/v1/metrics?api_key=k3y-value\n[webhook]\nurl ` +
      `= https://hooks.example/l9gpu?token=t0k3n-value&team=gpu\ntoken = b3arer-value\n`,
  );
  for (const args of [
    ['doctor', '--config', cfg, '--all'],
    ['doctor', '--config', cfg, '--all', '--json'],
  ]) {
    const r = await runCli(args);
    for (const secret of ['s3cr3t-pass', 'tenant', 'k3y-value', 't0k3n-value', 'b3arer-value'])
      assert.ok(!r.stdout.includes(secret) && !r.stderr.includes(secret), `${args.join(' ')}: ${secret} printed`);
    assert.ok(
      r.stdout.includes('otlp.example') && r.stdout.includes('api_key=***') && r.stdout.includes('hooks.example/l9gpu?token=***&team=***'),
      r.stdout,
    );
    // an unset plugin interval says what it inherits (the JSON keeps the empty value and says it in "means")
    if (args.includes('--json'))
      assert.ok(
        (JSON.parse(r.stdout) as { settings: { section: string; key: string; value: string; means?: string }[] }).settings.some(
          (x) => x.section === 'sim' && x.key === 'interval' && x.value === '' && x.means === '[daemon] interval',
        ),
      );
    else assert.match(r.stdout, /^ {4}interval = \(\[daemon\] interval\) +\(default\)$/m);
  }
});

test('names users chose reach the terminal without control sequences, and CSV without formulas', async () => {
  const state = join(dir, 'hostile-names');
  const db = openStore(state);
  // sbatch -J and -A take any bytes: a title-setting OSC, a colour, a screen clear, a spreadsheet formula
  const name = 'train\x1b]0;pwned\x07\x1b[31mred\x1b[2J';
  recordStart(
    db,
    { jobId: '77', runKey: 'r0', user: 'alice\x1b[8m', account: '=HYPERLINK("http://x")', partition: 'gpu\x9b1m', name },
    [{ uuid: 'GPU-x', shared: false }],
    'prolog',
    Date.now() - 60_000,
  );
  db.close();
  const cfg = join(dir, 'hostile.ini');
  writeFileSync(cfg, `[daemon]\nstate_dir = ${state}\n`);
  for (const args of [
    ['jobs', '--state', 'all'],
    ['jobs', 'show', '77'],
  ]) {
    const r = await runCli([...args, '--config', cfg]);
    assert.equal(r.status, 0, r.stderr);
    assert.doesNotMatch(r.stdout, /[\x00-\x09\x0b-\x1f\x7f-\x9f]/, `${args.join(' ')}: no control character but newlines`);
    assert.match(r.stdout, args[1] === 'show' ? /Job 77 \(train\?\]0;pwned\?\?\[31mred\?\[2J\)/ : /alice\?\[8m/);
  }
  const csv = await runCli(['jobs', '--state', 'all', '--csv', '--config', cfg]);
  const row = csv.stdout.split('\n')[1]!;
  assert.ok(row.startsWith('77,alice?[8m,"\'=HYPERLINK(""http://x"")",gpu?1m,'), row);
});

test('bidirectional and zero-width characters in names users chose are neutralised in the text and CSV, kept exact in JSON', async () => {
  const state = join(dir, 'bidi-names');
  const db = openStore(state);
  // an override that shows "train-gpj.exe" as "train-exe.jpg", an isolate that reorders a row, a zero-width space and joiner that make two
  // names look alike
  const name = 'train-\u202egpj.exe';
  recordStart(
    db,
    { jobId: '78', runKey: 'r0', user: 'al\u200bice', account: 'phys\u2066ics\u2069', partition: 'gpu\u200d\ufeff', name },
    [{ uuid: 'GPU-x', shared: false }],
    'prolog',
    Date.now() - 60_000,
  );
  db.close();
  const cfg = join(dir, 'bidi.ini');
  writeFileSync(cfg, `[daemon]\nstate_dir = ${state}\n`);
  const invisible = /[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/;
  for (const args of [
    ['jobs', '--state', 'all'],
    ['jobs', '--state', 'all', '--csv'],
    ['jobs', 'show', '78'],
  ]) {
    const r = await runCli([...args, '--config', cfg]);
    assert.equal(r.status, 0, r.stderr);
    assert.doesNotMatch(r.stdout, invisible, args.join(' '));
  }
  const csv = await runCli(['jobs', '--state', 'all', '--csv', '--config', cfg]);
  assert.ok(csv.stdout.split('\n')[1]!.startsWith('78,al?ice,phys?ics?,gpu??,'), csv.stdout);
  const show = await runCli(['jobs', 'show', '78', '--config', cfg]);
  assert.match(show.stdout, /^Job 78 \(train-\?gpj\.exe\)/m);
  const json = await runCli(['jobs', 'show', '78', '--json', '--config', cfg]);
  const j = (JSON.parse(json.stdout) as { job: { name: string; user: string; account: string } }).job;
  assert.deepEqual([j.name, j.user, j.account], [name, 'al\u200bice', 'phys\u2066ics\u2069'], 'JSON is for programs: exact');
});

test(
  'an empty state_dir, in the file or as L9GPU_STATE_DIR=, is exit code 2 and one line naming ' + 'where, for every command that reads it',
  async () => {
    const f = join(dir, 'empty-state.ini');
    writeFileSync(f, '[daemon]\nstate_dir =\n');
    for (const args of [
      ['jobs'],
      ['jobs', 'show', '5'],
      ['doctor'],
      ['health'],
      ['daemon', '--once', '--plugin', 'sim', '--sink', 'stdout'],
    ]) {
      const r = await runCli([...args, '--config', f]);
      assert.equal(
        r.stderr,
        `l9gpu: ${f}:2 [daemon] state_dir: empty: it needs a value (an absolute path); leave the key out for the default\n`,
        args.join(' '),
      );
      assert.equal(r.status, 2, args.join(' '));
    }
    const e = await runCli(['jobs'], { L9GPU_STATE_DIR: '' });
    assert.equal(e.status, 2);
    assert.equal(
      e.stderr,
      'l9gpu: environment L9GPU_STATE_DIR (for [daemon] state_dir): empty: it needs a value (an ' +
        'absolute path); leave the key out for the default\n',
    );
  },
);

test(
  "a job id longer than Slurm's (uint32: 10 digits) is refused where it enters, shown cut; " +
    'the ctld epilog says an invalid SLURM_JOB_ID is invalid, not unset',
  async () => {
    const long = '9'.repeat(10_000);
    const show = await runCli(['jobs', 'show', long]);
    assert.equal(show.status, 2);
    assert.equal(
      show.stderr,
      `l9gpu: "${'9'.repeat(40)}... (10000 characters)" is not a job id (123 or 122_4) nor a pod (namespace/name)\n`,
    );
    assert.equal((await runCli(['jobs', 'show', '12345678901'])).status, 2, '11 digits');
    assert.equal((await runCli(['jobs', 'show', `default/${'a'.repeat(254)}`])).status, 2, 'a pod name past 253 characters');
    const job = await runCli(['slurm', 'ctld-epilog', '--job', `1_${long}`]);
    assert.equal(job.status, 2);
    assert.equal(job.stderr, `l9gpu: --job: "1_${'9'.repeat(38)}... (10002 characters)" is not a job id (123 or 122_4)\n`);
    // as EpilogSlurmctld: exit 0 whatever the environment, and the reason on stderr for slurmctld's log
    for (const [value, said] of [
      [long, `"${'9'.repeat(40)}... (10000 characters)", not a job id`],
      ['42\x1b[2J', '"42?[2J", not a job id'],
      ['', 'not set'],
    ] as const) {
      const r = await runCli(['slurm', 'ctld-epilog'], { SLURM_JOB_ID: value, SLURM_JOB_NODELIST: 'gpu01' });
      assert.equal(r.status, 0);
      assert.equal(
        r.stderr,
        `l9gpu ctld-epilog: SLURM_JOB_ID is ${said}: slurmctld sets it for EpilogSlurmctld (for a finished job by hand: --job ID)\n`,
      );
    }
  },
);

test(
  'an error nobody foresaw in a light command is one line naming it and where it was thrown, ' + "exit 1: not the minified bundle's source",
  async () => {
    const state = join(dir, 'odd-store');
    const db = openStore(state);
    recordStart(
      db,
      { jobId: '79', runKey: 'r0', user: 'root', uid: 0, scheduler: 'kubernetes', attrs: { 'k8s.pod.uid': 'u' } },
      [{ uuid: 'GPU-x', shared: false }],
      'prolog',
      Date.now() - 60_000,
    );
    // a store edited by hand: a run's attributes that are not JSON, which no l9gpu writes
    db.prepare(`UPDATE jobs SET attrs = '{' WHERE job_id = '79'`).run();
    db.close();
    const cfg = join(dir, 'odd.ini');
    writeFileSync(cfg, `[daemon]\nstate_dir = ${state}\n`);
    const r = await runCli(['jobs', 'show', '79', '--config', cfg]);
    assert.equal(r.status, 1);
    assert.equal(r.stderr.split('\n').length, 2, `one line: ${r.stderr.length} bytes`);
    assert.match(
      r.stderr,
      /^l9gpu: internal error \(a bug: please report this line\): SyntaxError: .*JSON.* \(at .*light\.cjs:\d+:\d+\)?\)\n$/,
    );
    assert.ok(r.stderr.length < 700, `${r.stderr.length} bytes`);
  },
);

test(
  'jobs show from a damaged AdminComment summary: one line naming the job and what is wrong, ' +
    'exit 1; auto goes on to say what else it tried',
  async () => {
    // sacct as l9gpu runs it, printing the record of slurm/testdata/sacct/admin-comment-separators.usv (built from SchedMD's
    // sources, see its README) with an l9gpu summary in the comment: gzip and hex as the ctld epilog writes them, the content spoilt
    const record = readFileSync(join(ROOT, 'slurm/testdata/sacct/admin-comment-separators.usv'), 'utf8');
    const summary = (o: object) => `L9G1:${gzipSync(JSON.stringify(o)).toString('hex')}`;
    const d = join(dir, 'sacct-damaged');
    mkdirSync(join(d, 'bin'), { recursive: true });
    writeFileSync(join(d, 'bin', 'sacct'), `#!/bin/sh\ncat '${join(d, 'record.usv')}'\n`, { mode: 0o755 });
    const cfg = join(d, 'l9gpu.ini');
    writeFileSync(cfg, `[daemon]\nstate_dir = ${join(d, 'state')}\n[slurm]\nbin_dir = ${join(d, 'bin')}\n`);
    const gpu = { node: 'gpu08', uuid: 'GPU-1', model: null, index: 0, shared: false };
    const cases: [string, string][] = [
      [summary({ v: 1, made: '2026-11-21T00:00:00Z', gpus: [gpu], series: [], communication: null }), 'gpus[0].figures is not an object'],
      [
        summary({ v: 1, made: '2026-11-21T00:00:00Z', gpus: [{ ...gpu, figures: { samples: 1 } }], series: [], communication: null }),
        'gpus[0].figures.seconds is not a number',
      ],
      [
        summary({ v: 1, made: '2026-11-21T00:00:00Z', gpus: [], series: [[1, 'x']], communication: null }),
        'series[0] is not a [time, utilization] pair',
      ],
      ['L9G1:1f8b0800', 'unexpected end of file'],
    ];
    for (const [comment, why] of cases) {
      writeFileSync(join(d, 'record.usv'), record.replace(/[^\x1f]*\n$/, `${comment}\n`));
      const r = await runCli(['jobs', 'show', '4106', '--source', 'sacct', '--config', cfg]);
      assert.equal(r.stderr, `l9gpu: job 4106: the l9gpu summary in AdminComment is damaged (${why})\n`);
      assert.equal(r.status, 1);
    }
    const auto = await runCli(['jobs', 'show', '4106', '--config', cfg]);
    assert.equal(auto.status, 1);
    assert.equal(auto.stderr.split('\n').length, 2, auto.stderr);
    assert.match(
      auto.stderr,
      new RegExp(
        String.raw`; job 4106: the l9gpu summary in AdminComment is damaged \(unexpected end of ` +
          String.raw`file\)\. From the metrics backend: l9gpu jobs show 4106 --source promql`,
      ),
    );
  },
);

test('doctor on a healthy node: the Prometheus port held by the running l9gpu is ok; held by another program, a problem', async () => {
  const port = await freePort();
  const cfg = join(dir, 'prom-doctor.ini');
  writeFileSync(
    cfg,
    `[daemon]\nplugins = sim\nsinks = prometheus\ninterval = 1s\nstate_dir = ${join(dir, 'prom-doctor-state')}\n[prometheus]\nhost ` +
      `= 127.0.0.1\nport = ${port}\n`,
  );
  const d = new DaemonProcess(['--config', cfg]);
  try {
    await d.waitStderr(/prometheus endpoint listening/);
    const r = await runCli(['doctor', '--config', cfg]);
    assert.match(
      r.stdout,
      new RegExp(
        `ok\\s+prometheus\\s+enabled\\s+.*127\\.0\\.0\\.1:${port} is served by a running l9gpu daemon \\(l9gpu/\\d+\\.\\d+\\.\\d+\\)`,
      ),
      r.stdout,
    );
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

test(
  '--version and gpus load none of tls, http(s), child_process, zlib, the fs streams, ' +
    'fs/promises, crypto (gpus not even the stream of its stdout: stream, net, tty) on the way ' +
    "to their output, though gpus loads every plugin's module (start-up, docs/performance.md)",
  () => {
    // Node's own record of the built-in modules a process loaded, written as it exits
    const preload = join(dir, 'loaded.cjs');
    writeFileSync(
      preload,
      "process.on('exit', () => require('node:fs').writeFileSync(process.env.LOADED_OUT, process.moduleLoadList.join('\\n')));\n",
    );
    const cfg = join(dir, 'loaded.ini');
    writeFileSync(cfg, `[daemon]\nstate_dir = ${join(dir, 'loaded-state')}\nplugins = sim\n`);
    for (const cmd of ['--version', 'gpus']) {
      const out = join(dir, `loaded-${cmd}.txt`);
      const r = spawnSync(process.execPath, ['-r', preload, join(ROOT, 'bin/run.js'), cmd], {
        env: { ...process.env, L9GPU_CONFIG: cfg, LOADED_OUT: out },
        encoding: 'utf8',
      });
      assert.equal(r.status, 0, r.stderr);
      // gpus writes its table with write(2) (src/cli/out.ts): not even its piped stdout's stream; --version's line goes through
      // process.stdout
      const unused =
        cmd === 'gpus'
          ? /^NativeModule (tls|https?|child_process|zlib|internal\/fs\/streams|fs\/promises|crypto|stream|net|tty)$/
          : /^NativeModule (tls|https?|child_process|zlib|internal\/fs\/streams|fs\/promises|crypto)$/;
      const loaded = readFileSync(out, 'utf8')
        .split('\n')
        .filter((m) => unused.test(m));
      assert.deepEqual(loaded, [], `l9gpu ${cmd}`);
    }
  },
);
