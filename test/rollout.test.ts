/**
 * Rollout for real: the offline package built by `npm run package`'s code,
 * installed with dpkg into a clean Debian 12 root (mmdebstrap minbase, no npm,
 * no network: the install runs in an empty network namespace), and the Ansible
 * role run with ansible-core from Debian inside a bookworm root, twice. Both
 * roots are made once by test/setup/install-test-deps.sh; each test works on a
 * copy. Commands inside run under their own PID namespace, so the host's init
 * is not theirs (a node image being prepared: no service manager to ask).
 */
import assert from 'node:assert/strict';
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, cpSync, existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { after, before, test } from 'node:test';
import { loadAgentConfig } from '../daemon/schema.js';
import { debArch } from '../src/release/debian.js';
import { artifactBase, readBuildInfo } from '../src/release/release-tree.js';
import { ROOT, tempDir } from './helpers/paths.js';

const BASES = '/var/cache/l9gpu-test';
// this machine's build: the package's architecture and names follow process.arch, as the packager's do
const INFO = readBuildInfo(ROOT);
const VERSION = INFO.version;
const ARCH = `${process.platform}-${process.arch}`;
const work = tempDir('l9gpu-rollout-');
let deb = '';
let tarball = '';

function run(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; cwd?: string } = {}): SpawnSyncReturns<string> {
  return spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20, timeout: 300_000, ...opts });
}

function ok(r: SpawnSyncReturns<string>, what: string): string {
  assert.equal(r.status, 0, `${what}: exit ${r.status}\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/** A fresh copy of a cached root, with this machine's Node as the node's /usr/bin/node. */
function newRoot(base: string, name: string): string {
  const src = join(BASES, base);
  assert.ok(existsSync(join(src, 'usr/bin/apt-get')), `no ${src}: run test/setup/install-test-deps.sh`);
  const root = join(work, name);
  ok(run('cp', ['-a', src, root]), 'copy the root');
  copyFileSync(process.execPath, join(root, 'usr/bin/node'));
  return root;
}

/** A command inside the root: own PID namespace and /proc, and no network unless asked. */
function inRoot(root: string, argv: string[], env: Record<string, string> = {}, network = false): SpawnSyncReturns<string> {
  const e = Object.entries({ PATH: '/usr/sbin:/usr/bin:/sbin:/bin', HOME: '/root', LANG: 'C.UTF-8', ...env }).map(([k, v]) => `${k}=${v}`);
  return run('unshare', ['--pid', '--fork', `--mount-proc=${join(root, 'proc')}`, ...(network ? [] : ['--net']), 'chroot', root, '/usr/bin/env', '-i', ...e, ...argv]);
}

const sha = (f: string): string => createHash('sha256').update(readFileSync(f)).digest('hex');
const JOB_ENV = { SLURM_JOB_ID: '42', SLURM_JOB_USER: 'root', SLURM_JOB_UID: '0', SLURM_JOB_PARTITION: 'gpu', CUDA_VISIBLE_DEVICES: '0,1', SLURMD_NODENAME: 'gpunode1' };
const SLURM_CONF = 'ClusterName=alps\nSlurmctldHost=localhost\nPrologFlags=Contain\nGresTypes=gpu\nNodeName=gpunode1 Gres=gpu:2\n';

before(() => {
  // what `npm run package` runs once the checkout is built
  const out = ok(run(process.execPath, [join(ROOT, 'dist/src/release/package-main.js'), '--out', join(work, 'out')]), 'npm run package');
  deb = /^(\S+\.deb) /m.exec(out)?.[1] ?? '';
  tarball = /^(\S+\.tar\.gz) /m.exec(out)?.[1] ?? '';
  assert.ok(deb && tarball, out);
});

after(() => rmSync(work, { recursive: true, force: true }));

test('the package: the built code, production modules with native code for this platform, hooks, unit; nothing of the tests', () => {
  const control = ok(run('dpkg-deb', ['-f', deb]), 'dpkg-deb -f');
  assert.match(control, /^Package: l9gpu$/m);
  assert.match(control, new RegExp(`^Version: ${VERSION.replace(/\./g, '\\.')}$`, 'm'));
  assert.match(control, new RegExp(`^Architecture: ${debArch(INFO)}$`, 'm'));
  const files = ok(run('dpkg-deb', ['-c', deb]), 'dpkg-deb -c').split('\n');
  const entry = (path: string) => files.find((l) => l.endsWith(` ./${path}`) || l.includes(` ./${path} -> `));
  for (const p of ['opt/l9gpu/bin/run.js', 'opt/l9gpu/bin/check-node', 'opt/l9gpu/slurm/prolog', 'opt/l9gpu/slurm/epilog', 'opt/l9gpu/slurm/ctld-epilog']) {
    assert.match(entry(p) ?? `${p} missing`, /^-rwxr-xr-x root\/root/, p);
  }
  for (const p of ['opt/l9gpu/dist/hook/hook.cjs', 'opt/l9gpu/dist/src/cli/light.cjs', 'opt/l9gpu/dist/help.json', 'opt/l9gpu/node_modules/better-sqlite3/build/Release/better_sqlite3.node',
    `opt/l9gpu/node_modules/@koromix/koffi-${ARCH}/${process.platform}_${process.arch}/koffi.node`, 'opt/l9gpu/src/attribution/kubernetes/podresources/api.proto', 'lib/systemd/system/l9gpu.service', 'opt/l9gpu/BUILD-INFO.json']) {
    assert.ok(entry(p), `${p} is in the package`);
  }
  assert.match(entry('usr/bin/l9gpu') ?? '', / -> \/opt\/l9gpu\/bin\/run\.js$/);
  // every production dependency, and none of the development ones
  const prod = ok(run('npm', ['ls', '--omit=dev', '--all', '--parseable'], { cwd: ROOT }), 'npm ls').split('\n').filter((l) => l.includes('/node_modules/'));
  for (const m of prod) assert.ok(entry(`opt/l9gpu/${m.slice(m.indexOf('node_modules/'))}/`), `${m} is in the package`);
  for (const bad of ['node_modules/typescript/', 'node_modules/esbuild/', 'node_modules/fast-check/', 'dist/test/', 'dist/bench/', 'dist/src/release/', 'better-sqlite3/deps/', 'better-sqlite3/src/', '/var/lib/l9gpu']) {
    assert.equal(files.find((l) => l.includes(bad)), undefined, `${bad} is not in the package`);
  }
  // the tarball is the same tree under one folder, with install.sh
  const top = artifactBase(INFO);
  const inTar = new Set(ok(run('tar', ['-tzf', tarball]), 'tar -t').split('\n').filter(Boolean).map((l) => l.replace(/\/$/, '')));
  for (const l of files) {
    const m = / \.\/opt\/l9gpu\/(\S+)/.exec(l);
    if (m) assert.ok(inTar.has(`${top}/${m[1]!.replace(/\/$/, '')}`), `${m[1]} is in the tarball`);
  }
  assert.ok(inTar.has(`${top}/install.sh`));
});

test('the .deb installs on a clean Debian 12 root without network, runs doctor and a real prolog; removing it keeps the store', () => {
  const root = newRoot('bookworm-minbase', 'deb-root');
  assert.ok(!existsSync(join(root, 'usr/bin/npm')), 'no npm in the root');
  copyFileSync(deb, join(root, 'tmp/l9gpu.deb'));
  const install = ok(inRoot(root, ['dpkg', '-i', '/tmp/l9gpu.deb']), 'dpkg -i');
  assert.match(install, /nothing was started/);
  assert.equal(readlinkSync(join(root, 'usr/bin/l9gpu')), '/opt/l9gpu/bin/run.js');
  const state = statSync(join(root, 'var/lib/l9gpu'));
  assert.equal(state.mode & 0o777, 0o755);
  assert.equal(state.uid, 0);
  assert.equal(ok(inRoot(root, ['l9gpu', '--version']), 'l9gpu --version').trim().split(' ')[0], `l9gpu/${VERSION}`);
  assert.equal(ok(inRoot(root, ['/opt/l9gpu/bin/check-node']), 'check-node').trim(), `l9gpu: /usr/bin/node (Node.js ${process.versions.node}) is supported`);

  const doctor = ok(inRoot(root, ['l9gpu', 'doctor']), 'l9gpu doctor');
  assert.match(doctor, /^plugins \(auto: host\b/m);
  assert.match(doctor, /^ {3}ok {3}host /m);
  assert.match(doctor, /^store: \/var\/lib\/l9gpu\/l9gpu\.db - \/var\/lib\/l9gpu is writable$/m);
  assert.match(doctor, /^no problems found$/m);

  // the package's own prolog, as slurmd runs it (no PATH, no HOME), records the job
  mkdirSync(join(root, 'etc/slurm'), { recursive: true });
  writeFileSync(join(root, 'etc/slurm/slurm.conf'), SLURM_CONF);
  const prolog = run('unshare', ['--pid', '--fork', `--mount-proc=${join(root, 'proc')}`, '--net', 'chroot', root, '/usr/bin/env', '-i', ...Object.entries(JOB_ENV).map(([k, v]) => `${k}=${v}`), '/opt/l9gpu/slurm/prolog']);
  ok(prolog, 'the prolog');
  const store = join(root, 'var/lib/l9gpu/l9gpu.db');
  assert.equal(statSync(store).mode & 0o777, 0o600);
  const jobs = (): { id: string; state: string }[] => JSON.parse(ok(inRoot(root, ['l9gpu', 'jobs', '--json', '--state', 'all']), 'l9gpu jobs')) as { id: string; state: string }[];
  assert.deepEqual(jobs().map((j) => [j.id, j.state]), [['42', 'RUNNING']]);

  const kept = sha(store);
  assert.match(ok(inRoot(root, ['dpkg', '-r', 'l9gpu']), 'dpkg -r'), /kept: \/var\/lib\/l9gpu/);
  for (const gone of ['opt/l9gpu', 'usr/bin/l9gpu', 'lib/systemd/system/l9gpu.service']) assert.ok(!existsSync(join(root, gone)) && !isLink(join(root, gone)), `${gone} removed`);
  assert.equal(sha(store), kept, 'the store is untouched by the removal');
  ok(inRoot(root, ['dpkg', '--purge', 'l9gpu']), 'dpkg --purge');
  assert.equal(sha(store), kept, 'and by the purge');
  // installed again, the history is there
  ok(inRoot(root, ['dpkg', '-i', '/tmp/l9gpu.deb']), 'dpkg -i again');
  assert.deepEqual(jobs().map((j) => [j.id, j.state]), [['42', 'RUNNING']]);
  ok(inRoot(root, ['dpkg', '--purge', 'l9gpu']), 'dpkg --purge');

  // a Node whose ABI the native modules were not built for stops the install before anything is unpacked
  writeFileSync(join(root, 'usr/bin/node'), '#!/bin/sh\nprintf "108 18.19.0"\n');
  chmodSync(join(root, 'usr/bin/node'), 0o755);
  const refused = inRoot(root, ['dpkg', '-i', '/tmp/l9gpu.deb']);
  assert.notEqual(refused.status, 0);
  assert.match(refused.stderr, new RegExp(`/usr/bin/node is Node\\.js 18\\.19\\.0; this package's native modules \\(better-sqlite3\\) are built for Node\\.js ${process.versions.node.split('.')[0]}\\.x \\(ABI ${process.versions.modules}\\)`));
  assert.ok(!existsSync(join(root, 'opt/l9gpu')), 'nothing unpacked');
  const none = inRoot(root, ['dpkg', '-i', '/tmp/l9gpu.deb'], { L9GPU_NODE: '/opt/node/bin/node' });
  assert.notEqual(none.status, 0);
  assert.match(none.stderr, /is needed at \/opt\/node\/bin\/node and none is there/);
});

function isLink(p: string): boolean {
  try {
    return lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}

test('the tarball\'s install.sh lays out the same node as the .deb', () => {
  const unpack = join(work, 'tar');
  mkdirSync(unpack);
  ok(run('tar', ['-xzf', tarball, '-C', unpack]), 'tar -x');
  const dest = join(work, 'tar-root');
  const top = join(unpack, artifactBase(INFO));
  assert.match(ok(run('sh', [join(top, 'install.sh')], { env: { ...process.env, DESTDIR: dest, L9GPU_NODE: process.execPath } }), 'install.sh'), /nothing was started/);
  assert.equal(readlinkSync(join(dest, 'usr/local/bin/l9gpu')), '/opt/l9gpu/bin/run.js');
  assert.ok(existsSync(join(dest, 'etc/systemd/system/l9gpu.service')));
  assert.ok(!existsSync(join(dest, 'opt/l9gpu/install.sh')));
  assert.equal(statSync(join(dest, 'var/lib/l9gpu')).mode & 0o777, 0o755);
  assert.equal(ok(run(process.execPath, [join(dest, 'opt/l9gpu/bin/run.js'), '--version']), '--version').split(' ')[0], `l9gpu/${VERSION}`);
  // run again over itself: the tree is replaced whole
  ok(run('sh', [join(top, 'install.sh')], { env: { ...process.env, DESTDIR: dest, L9GPU_NODE: process.execPath } }), 'install.sh again');
  assert.deepEqual(readdirSync(join(dest, 'opt')), ['l9gpu']);
});

/**
 * A path under the folders a package installs into (the release tree, the bin and lib folders, the unit's), as the
 * docs, the help and the admin's files write it: what an admin copies into slurm.conf or a wrapper. /etc is left
 * out: what is there is the admin's (config, drop-ins), not the package's.
 */
const INSTALLED_PATH = /(?<![\w./-])\/(?:opt|usr\/(?:local\/)?(?:lib|libexec|share|bin|sbin))\/l9gpu(?![\w-])(?:\/[\w.+@-]+)*|(?<![\w./-])\/(?:usr\/)?lib\/systemd\/system\/l9gpu\.service/g;

/** Every file an admin reads or copies from: the docs and READMEs, the unit, the Ansible role, the manifests, the example config. */
function adminTexts(dir: string, out: [string, string][] = []): [string, string][] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name.startsWith('.') || e.name === 'node_modules' || e.name === 'dist') continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) adminTexts(p, out);
    else if (/\.(md|j2|ya?ml|service|ini)$/.test(e.name)) out.push([p.slice(ROOT.length), readFileSync(p, 'utf8')]);
  }
  return out;
}

test('every installed path the docs, the help and the admin\'s files name is in the package (the .deb, or the tarball\'s install)', () => {
  const inDeb = new Set(ok(run('dpkg-deb', ['-c', deb]), 'dpkg-deb -c').split('\n').map((l) => / \.(\/\S*?)\/?(?: -> \S+)?$/.exec(l)?.[1]).filter((p): p is string => !!p));
  const unpack = join(work, 'tar-paths');
  mkdirSync(unpack);
  ok(run('tar', ['-xzf', tarball, '-C', unpack]), 'tar -x');
  const dest = join(work, 'tar-paths-root');
  ok(run('sh', [join(unpack, artifactBase(INFO), 'install.sh')], { env: { ...process.env, DESTDIR: dest, L9GPU_NODE: process.execPath } }), 'install.sh');
  const installed = (p: string) => inDeb.has(p) || existsSync(join(dest, p)) || isLink(join(dest, p));
  // the help as bin/run.js prints it (written at build time), each command's under its name
  const help = Object.entries(JSON.parse(readFileSync(join(ROOT, 'dist/help.json'), 'utf8')) as Record<string, string>).map(([id, text]): [string, string] => [`l9gpu ${id} --help`, text]);
  const named = new Map<string, string>();
  for (const [where, text] of [...adminTexts(ROOT), ...help]) {
    for (const m of text.matchAll(INSTALLED_PATH)) {
      const p = m[0].replace(/\.+$/, '');
      if (!named.has(p)) named.set(p, where);
    }
  }
  assert.ok(named.has('/opt/l9gpu/slurm/ctld-epilog') && named.has('/usr/bin/l9gpu'), `the paths are found: ${[...named.keys()].join(' ')}`);
  const missing = [...named].filter(([p]) => !installed(p)).map(([p, where]) => `${p} (${where})`);
  assert.deepEqual(missing, [], 'named but not installed by the package');
});

test('the Ansible role passes ansible-lint', () => {
  ok(run('ansible-lint', ['--offline', '-q', '--nocolor', 'ansible/'], { cwd: ROOT }), 'ansible-lint');
});

const PLAYBOOK = `---
- name: A GPU node
  hosts: localhost
  connection: local
  roles:
    - role: l9gpu
      vars:
        l9gpu_daemon_cluster: alps
        l9gpu_daemon_sinks: [otlp, prometheus]
        l9gpu_daemon_interval: 5s
        l9gpu_otlp_endpoint: http://victoria.example:8428/opentelemetry/v1/metrics
        l9gpu_otlp_headers: {X-Scope-OrgID: hpc team}
        l9gpu_otlp_headers_secret: "{{ vault_l9gpu_otlp_headers }}"
        l9gpu_jobs_gpu_hour_prices: {H100: 3.2, A100: 1.8}
        l9gpu_jobs_admin_group: hpcadmin
        l9gpu_prometheus_port: 9465
        l9gpu_health_enabled: false
        l9gpu_slurm_conf_method: lineinfile
        l9gpu_slurm_ctld_epilog: true
`;

const EXPECTED_INI = `; Ansible managed
; l9gpu configuration; every key with its default: /opt/l9gpu/docs/l9gpu.example.ini

[daemon]
sinks = otlp, prometheus
interval = 5s
cluster = alps

[jobs]
admin_group = hpcadmin
gpu_hour_prices = H100=3.2,A100=1.8

[health]
enabled = false

[otlp]
endpoint = http://victoria.example:8428/opentelemetry/v1/metrics
headers = X-Scope-OrgID=hpc%20team

[prometheus]
port = 9465
`;

test('the Ansible role installs, configures and hooks a node, and a second run changes nothing', () => {
  const root = newRoot('bookworm-ansible', 'ansible-root');
  const site = join(root, 'srv/site');
  mkdirSync(join(site, 'files'), { recursive: true });
  cpSync(join(ROOT, 'ansible/roles'), join(site, 'roles'), { recursive: true });
  copyFileSync(deb, join(site, 'files', basename(deb)));
  writeFileSync(join(site, 'site.yml'), PLAYBOOK);
  // the vault's variable, as a vault file would give it
  writeFileSync(join(site, 'vault.yml'), 'vault_l9gpu_otlp_headers: authorization=Basic%20c2VjcmV0\n');
  mkdirSync(join(root, 'etc/slurm'), { recursive: true });
  writeFileSync(join(root, 'etc/slurm/slurm.conf'), SLURM_CONF);
  const play = (...extra: string[]) => inRoot(root, ['sh', '-c', `cd /srv/site && ansible-playbook -i localhost, -e @vault.yml site.yml ${extra.join(' ')}`], { ANSIBLE_NOCOLOR: '1', ANSIBLE_FORCE_COLOR: '0' });
  const recap = (out: string) => /localhost\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=0\s+failed=(\d+)/.exec(out);

  // with --diff, so that the secret's template would show in the output but for no_log
  const first = play('--diff');
  assert.equal(first.status, 0, first.stdout + first.stderr);
  assert.match(first.stdout, /^\+sinks = otlp, prometheus$/m, 'a template\'s diff shows its lines: the secret would show but for no_log');
  assert.ok(Number(recap(first.stdout)?.[2]) > 0, first.stdout);
  const second = play();
  assert.equal(second.status, 0, second.stdout + second.stderr);
  assert.equal(recap(second.stdout)?.[2], '0', `the second run changes nothing:\n${second.stdout}`);
  // the secret never shows in the output
  assert.ok(!first.stdout.includes('c2VjcmV0') && !second.stdout.includes('c2VjcmV0'));

  // the configuration: exactly what the variables say, and what the daemon's loader reads from it
  const iniPath = join(root, 'etc/l9gpu/l9gpu.ini');
  assert.equal(readFileSync(iniPath, 'utf8'), EXPECTED_INI);
  const cfg = loadAgentConfig({ configPath: iniPath, env: {} });
  assert.deepEqual(cfg.list('daemon', 'sinks'), ['otlp', 'prometheus']);
  assert.equal(cfg.get('daemon', 'interval'), 5);
  assert.deepEqual(cfg.map('jobs', 'gpu_hour_prices'), { H100: '3.2', A100: '1.8' });
  assert.deepEqual(cfg.map('otlp', 'headers'), { 'X-Scope-OrgID': 'hpc team' });
  assert.equal(statSync(iniPath).mode & 0o777, 0o644);

  // the secret header in the root-only drop-in, % escaped for systemd; the unit with it verifies
  const dropIn = join(root, 'etc/systemd/system/l9gpu.service.d/ansible.conf');
  assert.equal(statSync(dropIn).mode & 0o777, 0o600);
  assert.match(readFileSync(dropIn, 'utf8'), /^Environment="OTEL_EXPORTER_OTLP_METRICS_HEADERS=authorization=Basic%%20c2VjcmV0"$/m);
  const verify = run('systemd-analyze', ['verify', `--root=${root}`, 'l9gpu.service']);
  assert.equal(verify.status, 0, verify.stderr);
  assert.equal(verify.stderr.split('\n').filter((l) => l.includes('l9gpu')).join('\n'), '', 'no warnings about the unit or its drop-in');

  // slurm.conf: the hooks, the site's PrologFlags kept with Alloc added, the controller's epilog
  const conf = readFileSync(join(root, 'etc/slurm/slurm.conf'), 'utf8');
  for (const line of ['PrologFlags=Contain,Alloc', 'Prolog=/etc/slurm/l9gpu/prolog', 'Epilog=/etc/slurm/l9gpu/epilog', 'EpilogSlurmctld=/etc/slurm/l9gpu/ctld-epilog']) {
    assert.equal(conf.split('\n').filter((l) => l === line).length, 1, `${line} once in slurm.conf:\n${conf}`);
  }
  // the wrappers are executable and run the package's hook: the job is in the store
  for (const h of ['prolog', 'epilog', 'ctld-epilog']) assert.equal(statSync(join(root, 'etc/slurm/l9gpu', h)).mode & 0o777, 0o755, h);
  ok(inRoot(root, ['/etc/slurm/l9gpu/prolog'], JOB_ENV), 'the prolog wrapper');
  assert.match(ok(inRoot(root, ['l9gpu', 'jobs', '--json', '--state', 'all']), 'l9gpu jobs'), /"id": "42"/);

  // a bad value never reaches the node: the daemon's loader refuses the rendered file
  const bad = play('--tags', 'l9gpu_configure', '-e', 'l9gpu_daemon_log_level=loud');
  assert.notEqual(bad.status, 0);
  assert.match(bad.stdout, /failed to validate/);
  assert.equal(readFileSync(iniPath, 'utf8'), EXPECTED_INI, 'the old file stays');
  // another program's Prolog= is never replaced
  writeFileSync(join(root, 'etc/slurm/slurm.conf'), SLURM_CONF + 'Prolog=/usr/local/sbin/site-prolog\n');
  const refused = play('--tags', 'l9gpu_slurm');
  assert.notEqual(refused.status, 0);
  assert.match(refused.stdout, /already has Prolog= for another program: set l9gpu_slurm_conf_method/);
  assert.match(readFileSync(join(root, 'etc/slurm/slurm.conf'), 'utf8'), /^Prolog=\/usr\/local\/sbin\/site-prolog$/m);
  // nor by the Include, which comes last and would win
  const refusedInclude = play('--tags', 'l9gpu_slurm', '-e', 'l9gpu_slurm_conf_method=include');
  assert.notEqual(refusedInclude.status, 0);
  assert.match(refusedInclude.stdout, /already has Prolog= for another program/);
  assert.equal(readFileSync(join(root, 'etc/slurm/slurm.conf'), 'utf8'), SLURM_CONF + 'Prolog=/usr/local/sbin/site-prolog\n', 'no Include added');
  // nor the controller's EpilogSlurmctld
  writeFileSync(join(root, 'etc/slurm/slurm.conf'), SLURM_CONF + 'EpilogSlurmctld=/usr/local/sbin/site-ctld-epilog\n');
  const refusedCtld = play('--tags', 'l9gpu_slurm');
  assert.notEqual(refusedCtld.status, 0);
  assert.match(refusedCtld.stdout, /already has EpilogSlurmctld= for another program: .* call \/etc\/slurm\/l9gpu\/ctld-epilog from yours/s);

  // method include: the lines in their own file, included last (Slurm keeps a key's latest value: the merged PrologFlags)
  writeFileSync(join(root, 'etc/slurm/slurm.conf'), SLURM_CONF);
  ok(play('--tags', 'l9gpu_slurm', '-e', 'l9gpu_slurm_conf_method=include'), 'method include');
  assert.equal(readFileSync(join(root, 'etc/slurm/slurm.conf'), 'utf8'), `${SLURM_CONF}Include /etc/slurm/l9gpu.conf\n`);
  const included = readFileSync(join(root, 'etc/slurm/l9gpu.conf'), 'utf8').split('\n').filter((l) => l && !l.startsWith('#'));
  assert.deepEqual(included, ['Prolog=/etc/slurm/l9gpu/prolog', 'Epilog=/etc/slurm/l9gpu/epilog', 'PrologFlags=Contain,Alloc', 'EpilogSlurmctld=/etc/slurm/l9gpu/ctld-epilog']);
  // method prolog_dir: the site's folders get links, slurm.conf is not touched
  writeFileSync(join(root, 'etc/slurm/slurm.conf'), SLURM_CONF);
  for (const d of ['prolog.d', 'epilog.d']) mkdirSync(join(root, 'etc/slurm', d));
  ok(play('--tags', 'l9gpu_slurm', '-e', 'l9gpu_slurm_conf_method=prolog_dir'), 'method prolog_dir');
  assert.equal(readlinkSync(join(root, 'etc/slurm/prolog.d/50-l9gpu')), '/etc/slurm/l9gpu/prolog');
  assert.equal(readlinkSync(join(root, 'etc/slurm/epilog.d/50-l9gpu')), '/etc/slurm/l9gpu/epilog');
  assert.equal(readFileSync(join(root, 'etc/slurm/slurm.conf'), 'utf8'), SLURM_CONF);
});
