/**
 * Rollout for real: the offline packages built by `npm run package`'s code
 * (each with its own Node.js runtime), installed where no Node.js is: the .deb
 * with dpkg into a clean Debian 12 root (mmdebstrap minbase), the .rpm with
 * rpm --root into a clean Debian 11 root (glibc 2.31, older than the build
 * host's 2.36: the compat build of the native modules runs there for real), the
 * tarball by install.sh after another user unpacked it; each install and what
 * runs after it in an empty network namespace. Every ELF file in the packages is
 * held to RHEL 8's glibc and libstdc++. The Ansible role runs with ansible-core
 * from Debian inside a bookworm root, twice. The roots are made once by
 * test/setup/install-test-deps.sh; each test works on a copy. Commands inside
 * run under their own PID namespace, so the host's init is not theirs (a node
 * image being prepared: no service manager to ask).
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { basename, join } from 'node:path';
import { after, before, test } from 'node:test';
import { loadAgentConfig } from '../../daemon/schema.js';
import Database from 'better-sqlite3';
import { buildDeb, debArch } from '../../src/release/debian.js';
import { beyondOldest, readElfNeeds } from '../../src/release/elf.js';
import { artifactBase, elfFiles, readBuildInfo } from '../../src/release/release-tree.js';
import { buildRpm } from '../../src/release/rpm.js';
import { findRuntime } from '../../src/release/runtime.js';
import { IMAGE_ENTRYPOINT, IMAGE_NAME } from '../../src/release/image.js';
import { h100 } from '../helpers/fake-nvml.js';
import { buildEarlierDeb, prepareEarlier } from '../helpers/rollout-earlier.js';
import { ServiceManager, standInSystemd, systemctlCalls } from '../helpers/rollout-systemd.js';
import { waitFor } from '../helpers/wait.js';
import { ROOT, tempDir } from '../helpers/paths.js';
import { readSection } from '../../src/core/config/read.js';
import { DAEMON_SECTION } from '../../src/core/config/sections.js';
import { JOBS_SECTION } from '../../src/jobs/config.js';
import { OTLP_SECTION } from '../../src/sinks/sections.js';

const BASES = '/var/cache/l9gpu-test';
const RUNTIME = findRuntime(ROOT);
const INFO = readBuildInfo(ROOT, RUNTIME);
const VERSION = INFO.version;
const ARCH = `${process.platform}-${process.arch}`;
const work = tempDir('l9gpu-rollout-');
let deb = '';
let rpm = '';
let tarball = '';
let image = '';

function run(
  cmd: string,
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; cwd?: string; timeout?: number } = {},
): SpawnSyncReturns<string> {
  return spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20, timeout: 300_000, ...opts });
}

function ok(r: SpawnSyncReturns<string>, what: string): string {
  assert.equal(r.status, 0, `${what}: exit ${r.status}\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/** A fresh copy of a cached root: no Node.js in it, as on a bare node. */
function newRoot(base: string, name: string): string {
  const src = join(BASES, base);
  assert.ok(existsSync(join(src, 'usr/bin/apt-get')), `no ${src}: run test/setup/install-test-deps.sh`);
  const root = join(work, name);
  ok(run('cp', ['-a', src, root]), 'copy the root');
  for (const d of ['usr/bin', 'usr/local/bin']) assert.ok(!existsSync(join(root, d, 'node')), `no node in ${base}'s /${d}`);
  return root;
}

/** A command inside the root: own PID namespace and /proc, and no network unless asked. */
function inRoot(root: string, argv: string[], env: Record<string, string> = {}, network = false): SpawnSyncReturns<string> {
  const e = Object.entries({ PATH: '/usr/sbin:/usr/bin:/sbin:/bin', HOME: '/root', LANG: 'C.UTF-8', ...env }).map(([k, v]) => `${k}=${v}`);
  return run('unshare', [
    '--pid',
    '--fork',
    `--mount-proc=${join(root, 'proc')}`,
    ...(network ? [] : ['--net']),
    'chroot',
    root,
    '/usr/bin/env',
    '-i',
    ...e,
    ...argv,
  ]);
}

/** A hook as slurmd runs it: no PATH, no HOME, only the job's variables. */
function hook(root: string, kind: 'prolog' | 'epilog', env: Record<string, string>): void {
  ok(
    run('unshare', [
      '--pid',
      '--fork',
      `--mount-proc=${join(root, 'proc')}`,
      '--net',
      'chroot',
      root,
      '/usr/bin/env',
      '-i',
      ...Object.entries(env).map(([k, v]) => `${k}=${v}`),
      `/opt/l9gpu/slurm/${kind}`,
    ]),
    kind,
  );
}

const sha = (f: string): string => createHash('sha256').update(readFileSync(f)).digest('hex');
const JOB_ENV = {
  SLURM_JOB_ID: '42',
  SLURM_JOB_USER: 'root',
  SLURM_JOB_UID: '0',
  SLURM_JOB_PARTITION: 'gpu',
  CUDA_VISIBLE_DEVICES: '0,1',
  SLURMD_NODENAME: 'gpunode1',
};
const SLURM_CONF = 'ClusterName=alps\nSlurmctldHost=localhost\nPrologFlags=Contain\nGresTypes=gpu\nNodeName=gpunode1 Gres=gpu:2\n';

before(() => {
  // the earlier commit's build, in the background while this tree is packaged and the first tests run
  void prepareEarlier(work);
  // what `npm run package` runs once the checkout is built (--fast: the same formats at the lowest compression)
  const out = ok(
    // the packaging is CPU work beside every other lane of npm test: its own deadline, not the default 5 minutes
    run(process.execPath, [join(ROOT, 'dist/src/release/package-main.js'), '--out', join(work, 'out'), '--fast'], { timeout: 900_000 }),
    'npm run package',
  );
  deb = /^(\S+\.deb) /m.exec(out)?.[1] ?? '';
  rpm = /^(\S+\.rpm) /m.exec(out)?.[1] ?? '';
  tarball = /^(\S+\.tar\.gz) /m.exec(out)?.[1] ?? '';
  image = /^(\S+\.oci\.tar) /m.exec(out)?.[1] ?? '';
  assert.ok(deb && rpm && tarball && image, out);
});

/**
 * The tree of a package its preinst (%pre) is to refuse: the refusal comes before anything is unpacked, so the
 * unit alone (every package lays it out) stands for the payload, and the build skips compressing the whole
 * tree with its Node.js again. Were the refusal to fail, the package would install and the checks after it fail.
 */
function refusedTree(tree: string): string {
  const dir = mkdtempSync(join(work, 'refused-'));
  mkdirSync(join(dir, 'systemd'));
  copyFileSync(join(tree, 'systemd/l9gpu.service'), join(dir, 'systemd/l9gpu.service'));
  return dir;
}

const managers: ServiceManager[] = [];
after(async () => {
  for (const m of managers) await m.stop();
  rmSync(work, { recursive: true, force: true });
});

/** The files of a .deb, an .rpm or the tarball, unpacked (for reading, not installing). */
function unpacked(pkg: string): string {
  const dir = join(work, `unpacked-${basename(pkg)}`);
  if (existsSync(dir)) return dir;
  mkdirSync(dir);
  if (pkg.endsWith('.deb')) ok(run('dpkg-deb', ['-x', pkg, dir]), 'dpkg-deb -x');
  else if (pkg.endsWith('.rpm')) ok(run('sh', ['-c', 'rpm2archive - < "$1" | tar -xzf - -C "$2"', 'sh', pkg, dir]), 'rpm2archive');
  else ok(run('tar', ['-xzf', pkg, '-C', dir]), 'tar -x');
  return dir;
}

/** path -> "type mode" of every entry under dir, relative to it. */
function listing(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      const st = lstatSync(p);
      out.set(p.slice(dir.length + 1), `${st.isSymbolicLink() ? 'l' : st.isDirectory() ? 'd' : 'f'} ${(st.mode & 0o7777).toString(8)}`);
      if (e.isDirectory()) walk(p);
    }
  };
  walk(dir);
  return out;
}

test(
  'the package: the built code, the bundled Node.js, production modules with native code for ' + 'it, hooks, unit; nothing of the tests',
  () => {
    const control = ok(run('dpkg-deb', ['-f', deb]), 'dpkg-deb -f');
    assert.match(control, /^Package: l9gpu$/m);
    assert.match(control, new RegExp(`^Version: ${VERSION.replace(/\./g, '\\.')}$`, 'm'));
    assert.match(control, new RegExp(`^Architecture: ${debArch(INFO)}$`, 'm'));
    assert.match(control, /^Depends: libc6 \(>= 2\.28\), libstdc\+\+6 \(>= 8\)/m);
    assert.doesNotMatch(control, /nodejs/);
    assert.equal(ok(run('dpkg-deb', ['-I', deb, 'conffiles']), 'conffiles').trim(), '/etc/l9gpu/l9gpu.ini');
    const files = ok(run('dpkg-deb', ['-c', deb]), 'dpkg-deb -c').split('\n');
    const entry = (path: string) => files.find((l) => l.endsWith(` ./${path}`) || l.includes(` ./${path} -> `));
    for (const p of [
      'opt/l9gpu/bin/run.js',
      'opt/l9gpu/bin/check-node',
      'opt/l9gpu/node/bin/node',
      'opt/l9gpu/slurm/prolog',
      'opt/l9gpu/slurm/epilog',
      'opt/l9gpu/slurm/ctld-epilog',
    ]) {
      assert.match(entry(p) ?? `${p} missing`, /^-rwxr-xr-x root\/root/, p);
    }
    assert.match(entry('opt/l9gpu/cache/') ?? 'cache/ missing', /^drwxr-xr-x root\/root/);
    for (const p of [
      'opt/l9gpu/dist/hook/hook.cjs',
      'opt/l9gpu/dist/src/cli/light.cjs',
      'opt/l9gpu/dist/help.json',
      'opt/l9gpu/node_modules/better-sqlite3/build/Release/better_sqlite3.node',
      `opt/l9gpu/node_modules/@koromix/koffi-${ARCH}/${process.platform}_${process.arch}/koffi.node`,
      'opt/l9gpu/src/attribution/kubernetes/podresources/api.proto',
      'lib/systemd/system/l9gpu.service',
      'opt/l9gpu/BUILD-INFO.json',
      'opt/l9gpu/node/LICENSE',
      'etc/l9gpu/l9gpu.ini',
    ]) {
      assert.ok(entry(p), `${p} is in the package`);
    }
    assert.match(entry('usr/bin/l9gpu') ?? '', / -> \/opt\/l9gpu\/bin\/run\.js$/);
    const tree = join(unpacked(deb), 'opt/l9gpu');
    // `l9gpu` starts on the bundled runtime, and the unit runs it
    assert.equal(readFileSync(join(tree, 'bin/run.js'), 'utf8').split('\n')[0], '#!/opt/l9gpu/node/bin/node');
    // through the release folder `current` names (switched by one rename at an upgrade), as the hooks' entries go
    assert.match(
      readFileSync(join(tree, 'systemd/l9gpu.service'), 'utf8'),
      /^ExecStart=\/opt\/l9gpu\/current\/node\/bin\/node \/opt\/l9gpu\/current\/bin\/run\.js daemon$/m,
    );
    for (const h of ['prolog', 'epilog', 'ctld-epilog'])
      assert.match(
        readFileSync(join(tree, 'slurm', h), 'utf8'),
        /^#!\/bin\/sh\n# through \/opt\/l9gpu\/current[^]*exec "\$l9gpu_rel\/\$\{0##\*\/\}" "\$@"/,
        h,
      );
    assert.deepEqual(JSON.parse(readFileSync(join(tree, 'BUILD-INFO.json'), 'utf8')), INFO);
    // every production dependency, and none of the development ones
    const prod = ok(run('npm', ['ls', '--omit=dev', '--all', '--parseable'], { cwd: ROOT }), 'npm ls')
      .split('\n')
      .filter((l) => l.includes('/node_modules/'));
    for (const m of prod) assert.ok(entry(`opt/l9gpu/${m.slice(m.indexOf('node_modules/'))}/`), `${m} is in the package`);
    for (const bad of [
      'node_modules/typescript/',
      'node_modules/esbuild/',
      'node_modules/fast-check/',
      'node_modules/@opentelemetry/exporter-prometheus/',
      'node_modules/@opentelemetry/exporter-metrics-otlp',
      'node_modules/node-linux-',
      'node/include/',
      'dist/test/',
      'dist/bench/',
      'dist/src/release/',
      '/golden.js',
      'better-sqlite3/deps/',
      'better-sqlite3/src/',
      'musl_',
      '/var/lib/l9gpu',
    ]) {
      assert.equal(
        files.find((l) => l.includes(bad)),
        undefined,
        `${bad} is not in the package`,
      );
    }
    // the .rpm: the same files with the same modes, the unit in the EL path; the tarball: the same tree under one folder, with install.sh
    const debFiles = listing(unpacked(deb));
    const rpmFiles = listing(unpacked(rpm));
    const asRpm = new Map(
      [...debFiles].filter(([p]) => !p.startsWith('usr/share/doc')).map(([p, m]) => [p.replace(/^lib\/systemd/, 'usr/lib/systemd'), m]),
    );
    // rpm lays out only the folders it owns; the ones above them are the system's
    for (const p of [
      'lib',
      'usr/lib',
      'usr/lib/systemd',
      'usr/lib/systemd/system',
      'usr/share',
      'usr/share/doc',
      'usr/share/doc/l9gpu',
      'opt',
      'usr',
      'usr/bin',
      'etc',
    ]) {
      asRpm.delete(p);
      rpmFiles.delete(p);
    }
    assert.deepEqual([...rpmFiles].sort(), [...asRpm].sort());
    const top = join(unpacked(tarball), artifactBase(INFO));
    const tarFiles = listing(top);
    assert.equal(tarFiles.get('install.sh'), 'f 755');
    tarFiles.delete('install.sh');
    assert.deepEqual([...tarFiles].sort(), [...listing(tree)].sort());
  },
);

test("every ELF file in the packages needs no more than RHEL 8 has: glibc 2.28, gcc 8's libstdc++, the base libraries", () => {
  for (const pkg of [deb, rpm, tarball]) {
    const elves = elfFiles(unpacked(pkg));
    const names = elves.map((e) => basename(e.path)).sort();
    // the runtime and both native modules are there, each read
    assert.deepEqual(names, ['better_sqlite3.node', 'koffi.node', 'node'], `${basename(pkg)}: ${names.join(', ')}`);
    for (const e of elves) {
      assert.ok(
        e.needs.versions.some((v) => v.name.startsWith('GLIBC_')),
        `${e.path}: its version needs were read`,
      );
      assert.deepEqual(beyondOldest(e.needs), [], e.path);
    }
    // the newest glibc any of them needs is exactly 2.28: the runtime's own floor
    const glibc = elves
      .flatMap((e) => e.needs.versions.map((v) => v.name))
      .filter((n) => n.startsWith('GLIBC_2.'))
      .map((n) => n.slice(6).split('.').map(Number))
      .sort((a, b) => b[0]! - a[0]! || b[1]! - a[1]!)[0];
    assert.deepEqual(glibc, [2, 28], basename(pkg));
  }
  // the check is real: the better-sqlite3 npm built here for the development Node (this host's glibc 2.36, no compat) is refused
  const dev = readElfNeeds(join(ROOT, 'node_modules/better-sqlite3/build/Release/better_sqlite3.node'));
  assert.ok(dev);
  assert.ok(
    beyondOldest(dev).some((w) => /needs GLIBC_2\.(29|3\d) from libc\.so\.6|libm\.so\.6/.test(w)),
    beyondOldest(dev).join('\n'),
  );
});

test(
  'the .deb installs on a clean Debian 12 root with no Node.js and no network: doctor, the ' +
    'real prolog and epilog, jobs, the daemon; removing it keeps the store, purging removes it ' +
    '(saying so)',
  () => {
    const root = newRoot('bookworm-minbase', 'deb-root');
    assert.ok(!existsSync(join(root, 'usr/bin/npm')), 'no npm in the root');
    copyFileSync(deb, join(root, 'tmp/l9gpu.deb'));
    const install = ok(inRoot(root, ['dpkg', '-i', '/tmp/l9gpu.deb']), 'dpkg -i');
    assert.match(install, /nothing was started/);
    assert.equal(readlinkSync(join(root, 'usr/bin/l9gpu')), '/opt/l9gpu/bin/run.js');
    const state = statSync(join(root, 'var/lib/l9gpu'));
    assert.equal(state.mode & 0o777, 0o755);
    assert.equal(state.uid, 0);
    smoke(root, 'the .deb');

    const store = join(root, 'var/lib/l9gpu/l9gpu.db');
    const kept = sha(store);
    // an upgrade (the same package again) keeps the store, and a mode the admin gave the state folder
    chmodSync(join(root, 'var/lib/l9gpu'), 0o711);
    ok(inRoot(root, ['dpkg', '-i', '/tmp/l9gpu.deb']), 'dpkg -i over itself');
    assert.equal(statSync(join(root, 'var/lib/l9gpu')).mode & 0o777, 0o711, "postinst leaves the state folder's mode alone");
    assert.equal(sha(store), kept, 'the store is untouched by the upgrade');
    assert.match(ok(inRoot(root, ['dpkg', '-r', 'l9gpu']), 'dpkg -r'), /kept: \/var\/lib\/l9gpu/);
    for (const gone of ['opt/l9gpu', 'usr/bin/l9gpu', 'lib/systemd/system/l9gpu.service'])
      assert.ok(!existsSync(join(root, gone)) && !isLink(join(root, gone)), `${gone} removed`);
    assert.equal(sha(store), kept, 'the store is untouched by the removal');
    // installed again, the history is there
    ok(inRoot(root, ['dpkg', '-i', '/tmp/l9gpu.deb']), 'dpkg -i again');
    assert.deepEqual(
      jobs(root).map((j) => [j.id, j.state === 'RUNNING']),
      [['42', false]],
    );
    // a purge removes it, saying so first
    assert.match(
      ok(inRoot(root, ['dpkg', '--purge', 'l9gpu']), 'dpkg --purge'),
      /^l9gpu purge: removing the job store \/var\/lib\/l9gpu\/l9gpu\.db with its -wal and -shm/m,
    );
    for (const gone of ['var/lib/l9gpu', 'opt/l9gpu', 'etc/l9gpu']) assert.ok(!existsSync(join(root, gone)), `${gone} purged`);
  },
);

/** The store's schema (PRAGMA user_version), read as SQLite reads it (the WAL too), without writing. */
function storeSchema(root: string): number {
  const db = new Database(join(root, 'var/lib/l9gpu/l9gpu.db'), { readonly: true, fileMustExist: true });
  try {
    return db.pragma('user_version', { simple: true }) as number;
  } finally {
    db.close();
  }
}

/** What the daemon process runs from: its executable and every file it maps (node, the native modules), and its release folder. */
function daemonFiles(root: string, pid: number): { exe: string; mapped: string[] } {
  const inside = (p: string) => (p.startsWith(root) ? p.slice(root.length) : p);
  const mapped = [
    ...new Set(
      readFileSync(`/proc/${pid}/maps`, 'utf8')
        .split('\n')
        .map((l) => /\s(\/\S.*)$/.exec(l)?.[1])
        .filter((p): p is string => !!p)
        .map(inside),
    ),
  ];
  return { exe: inside(readlinkSync(`/proc/${pid}/exe`)), mapped: mapped.filter((p) => p.includes('/opt/l9gpu/')) };
}

const DAEMON_INI = '[daemon]\nplugins = sim\nsinks = stdout\ninterval = 5s\nattribution = slurm\n';
const HOOKED_SLURM_CONF = `${SLURM_CONF}Prolog=/opt/l9gpu/slurm/prolog\nEpilog=/opt/l9gpu/slurm/epilog\n`;

test(
  "upgrades as a Slurm admin expects: from an earlier commit's .deb over a running daemon " +
    "onto one version, a job bound across it; a downgrade below the store's schema refused; " +
    'remove leaves shims while slurm.conf names the hooks; purge',
  async (t) => {
    const root = newRoot('bookworm-minbase', 'upgrade-root');
    standInSystemd(root);
    const t0 = performance.now();
    const earlier = await buildEarlierDeb(work, join(work, 'out-earlier'), VERSION, (version) =>
      buildDeb(join(unpacked(deb), 'opt/l9gpu'), join(work, 'deb-earlier'), join(work, 'out-earlier'), { ...INFO, version }, true),
    );
    t.diagnostic(`the earlier package: ${earlier.why}, in ${Math.round(performance.now() - t0)} ms`);
    const earlierSchema = earlier.commit ? earlier.schema : INFO.schema;
    copyFileSync(earlier.deb, join(root, 'tmp/earlier.deb'));
    copyFileSync(deb, join(root, 'tmp/l9gpu.deb'));
    const dpkg = (...args: string[]) => inRoot(root, ['dpkg', '--force-confold', ...args]);
    const version = () => ok(inRoot(root, ['dpkg-query', '-W', '-f=${Version}', 'l9gpu']), 'dpkg-query');

    // the earlier version, configured and started as an admin does; a job starts under it
    ok(dpkg('-i', '/tmp/earlier.deb'), 'dpkg -i the earlier package');
    assert.equal(version(), earlier.version);
    writeFileSync(join(root, 'etc/l9gpu/l9gpu.ini'), DAEMON_INI);
    mkdirSync(join(root, 'etc/slurm'), { recursive: true });
    writeFileSync(join(root, 'etc/slurm/slurm.conf'), HOOKED_SLURM_CONF);
    const manager = ServiceManager.start(root);
    managers.push(manager);
    ok(inRoot(root, ['systemctl', 'start', 'l9gpu']), 'systemctl start l9gpu');
    const oldPid = manager.daemonPid();
    assert.ok(oldPid, 'the earlier daemon runs');
    hook(root, 'prolog', JOB_ENV);
    assert.equal(storeSchema(root), earlierSchema, 'the earlier version made its store');
    assert.deepEqual(
      jobs(root).map((j) => [j.id, j.state]),
      [['42', 'RUNNING']],
    );

    // the new files unpacked (preinst: the store's schema is older: no refusal), the daemon not yet restarted:
    // a job starting in this window is bound, by the files now in place
    const unpack = dpkg('--unpack', '/tmp/l9gpu.deb');
    ok(unpack, 'dpkg --unpack the new package');
    assert.equal(manager.daemonPid(), oldPid, 'nothing restarted before the files are all in place');
    hook(root, 'prolog', { ...JOB_ENV, SLURM_JOB_ID: '43', SLURM_JOB_USER: 'nobody', SLURM_JOB_UID: '65534' });
    const configure = ok(dpkg('--configure', 'l9gpu'), 'dpkg --configure');
    assert.match(configure, new RegExp(`^l9gpu: the running daemon was restarted onto ${VERSION.replace(/\./g, '\\.')}$`, 'm'));
    assert.equal(version(), VERSION);

    // one version runs: a new process, from the release `current` names, every file it maps there, none replaced under it
    const pid = manager.daemonPid();
    assert.ok(pid && pid !== oldPid, `a new daemon: ${oldPid} -> ${pid}`);
    const rel = readlinkSync(join(root, 'opt/l9gpu/current'));
    assert.match(rel, new RegExp(`^releases/${VERSION.replace(/\./g, '\\.')}-\\d+$`));
    assert.deepEqual(readdirSync(join(root, 'opt/l9gpu/releases')), [rel.slice('releases/'.length)], 'no other release left to load from');
    // the runtime, and the store's native module once the daemon has opened its store (it attributes)
    const logLines = () =>
      readFileSync(join(root, 'var/log/l9gpu-test-daemon.log'), 'utf8')
        .split('\n')
        .filter((l) => l && !l.startsWith('{"name"'))
        .slice(-8)
        .join('\n');
    const files = await waitFor(
      "the new daemon's store open",
      () => {
        const f = daemonFiles(root, pid);
        return f.mapped.some((p) => p.endsWith('/better_sqlite3.node')) && f;
      },
      60_000,
    ).catch((e: Error) => assert.fail(`${e.message}; the daemon's log:\n${logLines()}`));
    assert.equal(files.exe, `/opt/l9gpu/${rel}/node/bin/node`);
    for (const m of ['/node/bin/node', '/better_sqlite3.node'])
      assert.ok(
        files.mapped.some((p) => p.endsWith(m)),
        `${m} mapped: ${files.mapped.join('\n')}`,
      );
    for (const p of files.mapped)
      assert.ok(p.startsWith(`/opt/l9gpu/${rel}/`) && !p.endsWith('(deleted)'), `mapped from the new release: ${p}`);
    t.diagnostic(`the new daemon maps ${files.mapped.map((p) => p.slice(`/opt/l9gpu/${rel}/`.length)).join(', ')}`);
    assert.equal(
      ok(inRoot(root, [`/opt/l9gpu/${rel}/bin/run.js`, '--version']), "the daemon's --version").split(' ')[0],
      `l9gpu/${VERSION}`,
    );
    // the store migrated; both jobs bound: 42 across the upgrade (its prolog the old version's, its epilog the new one's), 43 started
    // within
    // it
    hook(root, 'epilog', { ...JOB_ENV, SLURM_JOB_EXIT_CODE: '0' });
    // that epilog ran from the release `current` names (slurm.conf's path goes on there): its code cache is that release's
    assert.ok(
      readdirSync(join(root, 'opt/l9gpu', rel, 'cache')).some((n) => /^hook\.cjs\..*\.epilog\.v8$/.test(n)),
      'the hook ran from the release',
    );
    assert.ok(
      !readdirSync(join(root, 'opt/l9gpu/cache')).some((n) => /^hook\.cjs\..*\.epilog\.v8$/.test(n)),
      'not from the files dpkg replaces',
    );
    assert.equal(storeSchema(root), INFO.schema, `the store migrated from schema ${earlierSchema}`);
    assert.deepEqual(
      jobs(root)
        .map((j) => [j.id, j.state === 'RUNNING'])
        .sort(),
      [
        ['42', false],
        ['43', true],
      ],
    );
    // a user's l9gpu jobs on the packaged node, nothing set: the node's config and state folder, answered by the daemon
    // over jobs.sock (the store is root's alone), their own job only
    const asNobody = await waitFor(
      "nobody's l9gpu jobs answered by the new daemon",
      () => {
        const r = inRoot(
          root,
          ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', '--', 'l9gpu', 'jobs', '--json', '--state', 'all'],
          { HOME: '/nonexistent' },
        );
        return r.status === 0 && r;
      },
      30_000,
    ).catch((e: Error) =>
      assert.fail(
        `${e.message}: ${inRoot(root, ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', '--', 'l9gpu', 'jobs']).stderr}`,
      ),
    );
    assert.deepEqual(
      (JSON.parse(asNobody.stdout) as { id: string }[]).map((j) => j.id),
      ['43'],
    );
    // the scriptlets' calls: daemon-reload and try-restart of the unit the package ships, only once the files were in place
    // (from the admin's start on: an earlier package of this tree's scriptlets try-restarted at its own install too)
    const calls = systemctlCalls(root).slice(systemctlCalls(root).indexOf('start l9gpu'));
    assert.deepEqual(
      calls.filter((c) => /start|stop/.test(c)),
      ['start l9gpu', 'try-restart l9gpu.service'],
      calls.join('\n'),
    );
    assert.ok(
      calls.lastIndexOf('daemon-reload') > calls.indexOf('start l9gpu') &&
        calls.lastIndexOf('daemon-reload') < calls.indexOf('try-restart l9gpu.service'),
      calls.join('\n'),
    );

    // a downgrade to a version whose schema is older than the store's: refused by its preinst, with the reason; nothing changed
    const older = buildDeb(
      refusedTree(join(unpacked(deb), 'opt/l9gpu')),
      join(work, 'deb-older'),
      join(work, 'out-older'),
      { ...INFO, version: `${VERSION}~older`, schema: INFO.schema - 1 },
      true,
    );
    copyFileSync(older, join(root, 'tmp/older.deb'));
    const refused = dpkg('-i', '/tmp/older.deb');
    assert.notEqual(refused.status, 0);
    assert.match(
      refused.stderr,
      new RegExp(
        `refusing to install: the job store /var/lib/l9gpu/l9gpu\\.db has schema ${INFO.schema} ` +
          `\\(read by the installed l9gpu\\), newer than this version's ${INFO.schema - 1}`,
      ),
    );
    assert.equal(version(), VERSION);
    assert.equal(manager.daemonPid(), pid, 'the daemon runs on');
    assert.equal(readlinkSync(join(root, 'opt/l9gpu/current')), rel);

    // removed while slurm.conf names the hooks: the daemon stopped, a warning, stand-ins at the hooks' paths that exit 0
    const removed = dpkg('-r', 'l9gpu');
    ok(removed, 'dpkg -r');
    assert.equal(manager.daemonPid(), undefined, 'prerm stopped the daemon');
    assert.match(
      removed.stderr,
      new RegExp(
        String.raw`WARNING: slurm\.conf still names l9gpu's hooks:\n {2}\/etc\/slurm\/slurm\.conf: ` +
          String.raw`Prolog=\/opt\/l9gpu\/slurm\/prolog\n {2}\/etc\/slurm\/slurm\.conf: ` +
          String.raw`Epilog=\/opt\/l9gpu\/slurm\/epilog\n`,
      ),
    );
    assert.deepEqual(readdirSync(join(root, 'opt/l9gpu')), ['slurm']);
    assert.deepEqual(readdirSync(join(root, 'opt/l9gpu/slurm')).sort(), ['ctld-epilog', 'epilog', 'prolog']);
    hook(root, 'prolog', { ...JOB_ENV, SLURM_JOB_ID: '44' });
    assert.ok(existsSync(join(root, 'var/lib/l9gpu/l9gpu.db')), 'the store is kept on removal');
    // slurm.conf changed, then purge: what the package made goes, said first
    writeFileSync(join(root, 'etc/slurm/slurm.conf'), SLURM_CONF);
    mkdirSync(join(root, 'var/log/l9gpu'), { recursive: true });
    writeFileSync(join(root, 'var/log/l9gpu/ctld-epilog.log'), 'a line\n');
    const purged = ok(dpkg('--purge', 'l9gpu'), 'dpkg --purge');
    assert.match(
      purged,
      new RegExp(
        String.raw`^l9gpu purge: removing the job store \/var\/lib\/l9gpu\/l9gpu\.db with its -wal ` +
          String.raw`and -shm, the rest of \/var\/lib\/l9gpu \(hooks\.log, the jobs socket, the ` +
          String.raw`lock\) and the logs in \/var\/log\/l9gpu$`,
        'm',
      ),
    );
    for (const gone of ['var/lib/l9gpu', 'var/log/l9gpu', 'opt/l9gpu', 'etc/l9gpu'])
      assert.ok(!existsSync(join(root, gone)), `${gone} purged`);
    assert.deepEqual(
      systemctlCalls(root)
        .slice(systemctlCalls(root).indexOf('start l9gpu'))
        .filter((c) => /start|stop/.test(c)),
      ['start l9gpu', 'try-restart l9gpu.service', 'stop l9gpu.service'],
    );
    await manager.stop();
  },
);

test(
  'the .rpm installs with rpm --root into a Debian 11 root (glibc 2.31) with no Node.js and ' +
    'no network; erase and upgrade keep the store',
  () => {
    const root = newRoot('bullseye-minbase', 'rpm-root');
    assert.match(readFileSync(join(root, 'etc/debian_version'), 'utf8'), /^11\./);
    // the root's own packages are dpkg's, so rpm's database there is empty: --nodeps (dnf on an EL node resolves the
    // generated Requires, checked below); the scriptlets run chrooted into the root, in an empty network namespace
    const rpmIn = (...args: string[]) => run('unshare', ['--net', 'rpm', '--root', root, '--nodeps', ...args]);
    const requires = ok(run('rpm', ['-qp', '--requires', rpm]), 'rpm -qp --requires');
    assert.match(requires, /^libc\.so\.6\(GLIBC_2\.28\)\(64bit\)$/m);
    assert.doesNotMatch(requires, /GLIBC_2\.(29|[3-9]\d)|GLIBCXX_3\.4\.(2[6-9]|3\d)|nodejs|^\/usr\/bin\/node$/m);
    assert.match(ok(run('rpm', ['-qp', '--configfiles', rpm]), 'configfiles'), /^\/etc\/l9gpu\/l9gpu\.ini$/m);
    assert.match(
      ok(run('rpm', ['-qp', '--dump', rpm]), 'rpm --dump'),
      /^\/etc\/l9gpu\/l9gpu\.ini \d+ \d+ [0-9a-f]+ 0100644 root root 1 0 /m,
      "%config(noreplace), root's",
    );

    // systemd as the scriptlets see it (no daemon runs: systemctl says inactive), every call recorded
    standInSystemd(root);
    const install = ok(rpmIn('-i', rpm), 'rpm -i');
    assert.match(install, /nothing was started/);
    assert.ok(existsSync(join(root, 'usr/lib/systemd/system/l9gpu.service')), 'the unit in the EL path');
    assert.ok(!existsSync(join(root, 'lib/systemd/system/l9gpu.service')) || lstatSync(join(root, 'lib')).isSymbolicLink());
    assert.equal(statSync(join(root, 'var/lib/l9gpu')).mode & 0o777, 0o755);
    smoke(root, 'the .rpm');

    const store = join(root, 'var/lib/l9gpu/l9gpu.db');
    const kept = sha(store);
    writeFileSync(join(root, 'etc/l9gpu/l9gpu.ini'), '[daemon]\ncluster = alps\n');
    chmodSync(join(root, 'var/lib/l9gpu'), 0o711);
    // an upgrade: the same files as a newer version
    const tree = join(unpacked(tarball), artifactBase(INFO));
    const newer = buildRpm(tree, join(work, 'rpm-upgrade'), join(work, 'out-upgrade'), { ...INFO, version: `${VERSION}.1` }, true);
    const upgrade = ok(rpmIn('-U', newer), 'rpm -U');
    assert.doesNotMatch(upgrade, /nothing was started/, 'the upgrade says nothing of a first install');
    assert.equal(
      ok(run('rpm', ['--root', root, '-q', 'l9gpu']), 'rpm -q').trim(),
      `l9gpu-${VERSION}.1-1.${process.arch === 'x64' ? 'x86_64' : 'aarch64'}`,
    );
    assert.equal(sha(store), kept, 'the store is untouched by the upgrade');
    assert.equal(statSync(join(root, 'var/lib/l9gpu')).mode & 0o777, 0o711, "the state folder's mode is kept");
    assert.equal(
      readFileSync(join(root, 'etc/l9gpu/l9gpu.ini'), 'utf8'),
      '[daemon]\ncluster = alps\n',
      "the admin's configuration is kept",
    );
    assert.equal(ok(inRoot(root, ['l9gpu', '--version']), 'l9gpu --version after the upgrade').split(' ')[0], `l9gpu/${VERSION}`);
    // %posttrans, once the old version's files are gone too: the release switched, the unit re-read and try-restarted
    assert.match(readlinkSync(join(root, 'opt/l9gpu/current')), new RegExp(`^releases/${VERSION.replace(/\./g, '\\.')}\\.1-\\d+$`));
    assert.equal(readdirSync(join(root, 'opt/l9gpu/releases')).length, 1);
    assert.deepEqual(systemctlCalls(root).slice(-3), ['daemon-reload', 'is-active --quiet l9gpu.service', 'try-restart l9gpu.service']);
    // an upgrade to a package whose schema is older than the store's: %pre refuses it with the reason, nothing installed
    const lower = buildRpm(
      refusedTree(tree),
      join(work, 'rpm-lower'),
      join(work, 'out-lower'),
      { ...INFO, version: `${VERSION}.2`, schema: INFO.schema - 1 },
      true,
    );
    const refused = rpmIn('-U', lower);
    assert.notEqual(refused.status, 0);
    assert.match(
      refused.stderr,
      new RegExp(
        `refusing to install: the job store /var/lib/l9gpu/l9gpu\\.db has schema ${INFO.schema} ` +
          `\\(read by the installed l9gpu\\), newer than this version's ${INFO.schema - 1}`,
      ),
    );
    assert.match(ok(run('rpm', ['--root', root, '-q', 'l9gpu']), 'rpm -q'), new RegExp(`^l9gpu-${VERSION.replace(/\./g, '\\.')}\\.1-1\\.`));

    // erased while slurm.conf names the hooks: the daemon stopped, a warning, stand-ins that exit 0 at the hooks' paths
    writeFileSync(join(root, 'etc/slurm/slurm.conf'), HOOKED_SLURM_CONF);
    const erased = rpmIn('-e', 'l9gpu');
    assert.match(ok(erased, 'rpm -e'), /kept: \/var\/lib\/l9gpu/);
    assert.match(
      erased.stderr,
      /WARNING: slurm\.conf still names l9gpu's hooks:\n {2}\/etc\/slurm\/slurm\.conf: Prolog=\/opt\/l9gpu\/slurm\/prolog\n/,
    );
    assert.equal(
      systemctlCalls(root).find((c) => c.startsWith('stop')),
      'stop l9gpu.service',
    );
    assert.deepEqual(readdirSync(join(root, 'opt/l9gpu')), ['slurm']);
    hook(root, 'prolog', { ...JOB_ENV, SLURM_JOB_ID: '44' });
    writeFileSync(join(root, 'etc/slurm/slurm.conf'), SLURM_CONF);
    for (const gone of [
      'opt/l9gpu/bin',
      'opt/l9gpu/current',
      'opt/l9gpu/releases',
      'usr/bin/l9gpu',
      'usr/lib/systemd/system/l9gpu.service',
    ])
      assert.ok(!existsSync(join(root, gone)) && !isLink(join(root, gone)), `${gone} removed`);
    assert.equal(sha(store), kept, 'the store is untouched by the erase');
    assert.equal(
      readFileSync(join(root, 'etc/l9gpu/l9gpu.ini.rpmsave'), 'utf8'),
      '[daemon]\ncluster = alps\n',
      'the changed configuration saved aside',
    );
    ok(rpmIn('-i', rpm), 'rpm -i again');
    assert.deepEqual(
      jobs(root).map((j) => [j.id, j.state === 'RUNNING']),
      [['42', false]],
      'the history is there',
    );
  },
);

function jobs(root: string): { id: string; state: string }[] {
  return JSON.parse(ok(inRoot(root, ['l9gpu', 'jobs', '--json', '--state', 'all']), 'l9gpu jobs')) as { id: string; state: string }[];
}

/**
 * What a new node's admin does after installing, in a root with no Node.js and no network:
 * check-node, doctor with a (fake) NVIDIA driver, a job's prolog and epilog as slurmd runs them,
 * users' `l9gpu jobs` on the bundled runtime, one collection of the daemon.
 */
function smoke(root: string, what: string): void {
  for (const d of ['usr/bin', 'usr/local/bin']) assert.ok(!existsSync(join(root, d, 'node')), `${what}: no node in /${d}`);
  assert.equal(ok(inRoot(root, ['l9gpu', '--version']), 'l9gpu --version').trim(), `l9gpu/${VERSION} ${ARCH} node-v${RUNTIME.version}`);
  assert.match(
    ok(inRoot(root, ['/opt/l9gpu/bin/check-node']), 'check-node'),
    new RegExp(
      `^l9gpu: the bundled Node\\.js ${RUNTIME.version.replace(/\./g, '\\.')} runs here, with ` +
        `better-sqlite3 \\(SQLite 3\\.\\d+\\.\\d+\\) and koffi$`,
      'm',
    ),
  );
  // better-sqlite3's statements left to the GC at exit: built with Node 24.19+'s own ObjectWrap header, most
  // such runs abort (nodejs/node#65446); the package builds it with 24.18.1's (src/release/native/)
  const garbage =
    "const D = require('/opt/l9gpu/node_modules/better-sqlite3'); const d = new D(':memory:'); " +
    "for (let i = 0; i < 20000; i++) d.prepare('select ' + i).get();";
  for (let i = 0; i < 5; i++)
    ok(inRoot(root, ['/opt/l9gpu/node/bin/node', '-e', garbage]), `${what}: statements collected at exit, run ${i + 1}`);
  // the compile cache, filled by the install as root: Node's for bin/run.js, the light commands' code cache (bin/code-cache.cjs)
  const cached = readdirSync(join(root, 'opt/l9gpu/cache'));
  assert.ok(
    cached.some((n) => /^v\d/.test(n)) && cached.some((n) => /^light\.cjs\..*\.jobs\.v8$/.test(n)),
    `${what}: the compile cache was filled: ${cached.join(' ')}`,
  );

  // a (fake) NVIDIA driver: libnvidia-ml.so.1 built from the fixture with the package's glibc compat, so it loads on the older root too
  mkdirSync(join(root, 'opt/fake-nvml'), { recursive: true });
  const compat = join(ROOT, 'src/release/native');
  execFileSync('gcc', [
    '-shared',
    '-fPIC',
    '-O2',
    '-include',
    join(compat, 'glibc-compat.h'),
    '-o',
    join(root, 'opt/fake-nvml/libnvidia-ml.so.1'),
    join(ROOT, 'test/fixtures/fake-nvml/fake_nvml.c'),
    join(compat, 'glibc-compat.c'),
    '-lpthread',
  ]);
  writeFileSync(join(root, 'opt/fake-nvml/nvml.json'), JSON.stringify({ driver_version: '550.54.15', devices: [h100(0), h100(1)] }));
  const nvml = { L9GPU_NVML_LIBRARY: '/opt/fake-nvml/libnvidia-ml.so.1', FAKE_NVML_CONFIG: '/opt/fake-nvml/nvml.json' };
  const doctor = ok(inRoot(root, ['l9gpu', 'doctor'], nvml), 'l9gpu doctor');
  assert.match(doctor, /^plugins \(auto: host, nvml\b/m);
  assert.match(doctor, /^ {3}ok {3}nvml +enabled +driver 550\.54\.15, 2 GPU\(s\)/m);
  assert.match(doctor, /^store: \/var\/lib\/l9gpu\/l9gpu\.db - \/var\/lib\/l9gpu is writable$/m);
  assert.match(doctor, /^no problems found$/m);

  // the package's own prolog and epilog, as slurmd runs them, record and close the job
  mkdirSync(join(root, 'etc/slurm'), { recursive: true });
  writeFileSync(join(root, 'etc/slurm/slurm.conf'), SLURM_CONF);
  hook(root, 'prolog', JOB_ENV);
  assert.equal(statSync(join(root, 'var/lib/l9gpu/l9gpu.db')).mode & 0o777, 0o600);
  assert.deepEqual(
    jobs(root).map((j) => [j.id, j.state]),
    [['42', 'RUNNING']],
  );
  hook(root, 'epilog', { ...JOB_ENV, SLURM_JOB_EXIT_CODE: '0' });
  assert.deepEqual(
    jobs(root).map((j) => [j.id, j.state === 'RUNNING']),
    [['42', false]],
    `${what}: the epilog closed the job`,
  );
  assert.ok(!readFileSync(join(root, 'var/lib/l9gpu/hooks.log'), { flag: 'a+' }).toString().includes('Error'), 'the hooks logged no error');

  // one collection of the daemon on the bundled runtime
  const once = ok(inRoot(root, ['l9gpu', 'daemon', '--once', '--plugin', 'sim', '--sink', 'stdout']), 'l9gpu daemon --once');
  const points = once
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { name: string; attributes: Record<string, unknown> });
  assert.ok(
    points.some((p) => p.name === 'gpu.utilization'),
    once.slice(0, 400),
  );
}

function isLink(p: string): boolean {
  try {
    return lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}

test("the tarball, unpacked by another user, installs root's files only as root; install.sh checks the system first", () => {
  // nobody unpacks it (in a folder of nobody's): every unpacked file is nobody's
  const unpack = join(work, 'tar-nobody');
  mkdirSync(unpack);
  execFileSync('chown', ['nobody', unpack]);
  chmodSync(work, 0o755);
  const asNobody = (cmd: string) =>
    run('setpriv', ['--reuid=nobody', '--regid=nogroup', '--clear-groups', '--', 'sh', '-c', cmd], { cwd: unpack });
  ok(asNobody(`umask 077 && tar -xzf '${tarball}'`), 'tar -x as nobody');
  const top = join(unpack, artifactBase(INFO));
  assert.equal(statSync(join(top, 'bin/run.js')).uid, statSync(unpack).uid);
  // not root: refused, nothing installed
  const dest = join(work, 'tar-root');
  const refused = asNobody(`DESTDIR='${dest}' sh '${top}/install.sh'`);
  assert.equal(refused.status, 1);
  assert.match(refused.stderr, /run it as root/);
  assert.ok(!existsSync(dest));

  assert.match(ok(run('sh', [join(top, 'install.sh')], { env: { ...process.env, DESTDIR: dest } }), 'install.sh'), /nothing was started/);
  assert.equal(readlinkSync(join(dest, 'usr/local/bin/l9gpu')), '/opt/l9gpu/bin/run.js');
  assert.ok(existsSync(join(dest, 'etc/systemd/system/l9gpu.service')));
  assert.ok(!existsSync(join(dest, 'opt/l9gpu/install.sh')));
  assert.equal(statSync(join(dest, 'var/lib/l9gpu')).mode & 0o777, 0o755);
  assert.equal(
    readFileSync(join(dest, 'etc/l9gpu/l9gpu.ini'), 'utf8').split('\n')[0],
    '; l9gpu configuration. Nothing set here: the daemon runs on its embedded defaults (plugins auto,',
  );
  // every installed file root's, none writable but by root, the executables 0755, whatever nobody's umask made of them
  const installed = listing(join(dest, 'opt/l9gpu'));
  for (const [p, m] of installed) {
    const st = lstatSync(join(dest, 'opt/l9gpu', p));
    assert.equal(st.uid, 0, `${p} is root's`);
    assert.equal(st.gid, 0, `${p}'s group is root`);
    if (!m.startsWith('l')) assert.ok(['d 755', 'f 755', 'f 644'].includes(m), `${p}: ${m}`);
  }
  for (const x of ['bin/run.js', 'bin/check-node', 'node/bin/node', 'slurm/prolog', 'slurm/epilog'])
    assert.equal(installed.get(x), 'f 755', x);
  assert.equal(
    ok(run(join(dest, 'opt/l9gpu/node/bin/node'), [join(dest, 'opt/l9gpu/bin/run.js'), '--version']), '--version').split(' ')[0],
    `l9gpu/${VERSION}`,
  );
  // run again over itself: the tree is replaced whole; the admin's configuration stays
  writeFileSync(join(dest, 'etc/l9gpu/l9gpu.ini'), '[daemon]\ncluster = alps\n');
  ok(run('sh', [join(top, 'install.sh')], { env: { ...process.env, DESTDIR: dest } }), 'install.sh again');
  assert.deepEqual(readdirSync(join(dest, 'opt')), ['l9gpu']);
  assert.equal(readFileSync(join(dest, 'etc/l9gpu/l9gpu.ini'), 'utf8'), '[daemon]\ncluster = alps\n');

  // the system check: a glibc too old, and what does not parse as one, stop it before anything is copied
  const fake = join(work, 'fake-getconf');
  mkdirSync(fake);
  for (const [says, why] of [
    ['glibc 2.17', /needs glibc 2\.28 or newer; this system has 2\.17/],
    ['glibc 2.x', /is not one \(getconf GNU_LIBC_VERSION says "glibc 2\.x"\)/],
    ['', /is not one \(getconf GNU_LIBC_VERSION says "nothing"\)/],
    ['musl 1.2.4', /is not one/],
    ['glibc 2.2a', /is not one/],
  ] as const) {
    writeFileSync(join(fake, 'getconf'), `#!/bin/sh\n[ -n '${says}' ] && echo '${says}'\n`, { mode: 0o755 });
    const other = join(work, 'tar-refused');
    const r = run('sh', [join(top, 'install.sh')], { env: { ...process.env, DESTDIR: other, PATH: `${fake}:${process.env.PATH}` } });
    assert.equal(r.status, 1, `${says}: ${r.stdout}${r.stderr}`);
    assert.match(r.stderr, why);
    assert.ok(!existsSync(other), `${says}: nothing copied`);
  }
});

/**
 * A path under the folders a package installs into (the release tree, the bin and lib folders, the unit's), as the
 * docs, the help and the admin's files write it: what an admin copies into slurm.conf or a wrapper. /etc is left
 * out: what is there is the admin's (config, drop-ins), not the package's.
 */
const INSTALLED_PATH = new RegExp(
  String.raw`(?<![\w./-])\/(?:opt|usr\/(?:local\/)?(?:lib|libexec|share|bin|sbin))\/l9gp` +
    String.raw`u(?![\w-])(?:\/[\w.+@-]+)*|(?<![\w./-])\/(?:usr\/)?lib\/systemd\/system\/l9gp` +
    String.raw`u\.service`,
  'g',
);

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

test(
  'the container image (an oci-archive umoci made, no daemon): the release tree on a base of ' +
    'only what it loads; --version and daemon --once in its root, no network; the DaemonSet ' +
    'names it',
  () => {
    const dir = join(work, 'image');
    mkdirSync(join(dir, 'layout'), { recursive: true });
    ok(run('tar', ['-xf', image, '-C', join(dir, 'layout')]), 'tar -x the oci-archive');
    const info = readBuildInfo(ROOT, findRuntime(ROOT));
    ok(run('umoci', ['unpack', '--image', `${join(dir, 'layout')}:${info.version}`, join(dir, 'bundle')]), 'umoci unpack');
    const rootfs = join(dir, 'bundle', 'rootfs');
    // what the container runs, as the runtime spec umoci wrote from the image's config says
    const spec = JSON.parse(readFileSync(join(dir, 'bundle', 'config.json'), 'utf8')) as {
      process: { args: string[]; env: string[]; user: { uid: number } };
    };
    assert.deepEqual(spec.process.args, [IMAGE_ENTRYPOINT, 'daemon']);
    assert.equal(spec.process.user.uid, 0);
    // the DaemonSet runs that entry point and names this version's image
    const ds = readFileSync(join(ROOT, 'src/attribution/kubernetes/deploy/30-daemonset.yaml'), 'utf8');
    assert.match(ds, new RegExp(`image: ${IMAGE_NAME}:${info.version.replaceAll('.', '\\.')}\\n`));
    assert.match(ds, new RegExp(`command: \\["${IMAGE_ENTRYPOINT}"\\]`));
    // a minimal base: no shell, no package manager; the tree and the libraries its ELF files load
    for (const absent of ['usr/bin/sh', 'bin/sh', 'usr/bin/apt', 'usr/bin/dpkg'])
      assert.equal(existsSync(join(rootfs, absent)), false, `${absent} is not in the image`);
    assert.ok(statSync(join(rootfs, 'tmp')).mode & 0o1000, '/tmp is sticky');
    const inImage = (args: string[], env: string[] = []): SpawnSyncReturns<string> => {
      mkdirSync(join(rootfs, 'proc'), { recursive: true });
      return run(
        'unshare',
        ['--pid', '--fork', `--mount-proc=${join(rootfs, 'proc')}`, '--net', 'chroot', rootfs, IMAGE_ENTRYPOINT, ...args],
        { env: Object.fromEntries([...spec.process.env, ...env].map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)])) },
      );
    };
    assert.match(ok(inImage(['--version']), 'l9gpu --version in the image'), new RegExp(`\\b${info.version.replaceAll('.', '\\.')}\\b`));
    const once = ok(inImage(['daemon', '--once', '--plugin', 'sim', '--sink', 'stdout']), 'daemon --once in the image');
    const points = once
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { name: string });
    assert.ok(
      points.some((p) => p.name === 'gpu.utilization'),
      `the sim GPUs' points: ${once.slice(0, 400)}`,
    );
    // everything the image's ELF files need is in it: the loader finds each library in the image's own root
    const cache = run('chroot', [rootfs, '/usr/sbin/ldconfig', '-p']);
    assert.equal(cache.status, 0, cache.stderr);
    for (const f of elfFiles(join(rootfs, 'opt/l9gpu'))) {
      // the dynamic loader is no library the cache lists: the kernel loads it by its path (the runs above used it)
      for (const lib of f.needs.needed.filter((l) => !/^ld-linux/.test(l)))
        assert.match(
          cache.stdout,
          new RegExp(`^\\s+${lib.replaceAll('.', '\\.').replaceAll('+', '\\+')} `, 'm'),
          `${f.path} needs ${lib}, which the image's loader cache has`,
        );
    }
    rmSync(dir, { recursive: true, force: true });
  },
);

test("every installed path the docs, the help and the admin's files name is in the package (the .deb, or the tarball's install)", () => {
  const inDeb = new Set(
    ok(run('dpkg-deb', ['-c', deb]), 'dpkg-deb -c')
      .split('\n')
      .map((l) => / \.(\/\S*?)\/?(?: -> \S+)?$/.exec(l)?.[1])
      .filter((p): p is string => !!p),
  );
  const unpack = join(work, 'tar-paths');
  mkdirSync(unpack);
  ok(run('tar', ['-xzf', tarball, '-C', unpack]), 'tar -x');
  const dest = join(work, 'tar-paths-root');
  ok(
    run('sh', [join(unpack, artifactBase(INFO), 'install.sh')], { env: { ...process.env, DESTDIR: dest, L9GPU_NODE: process.execPath } }),
    'install.sh',
  );
  // the release folders and `current` are made by the scriptlets (install.sh's too), from the package's files
  const installed = (p: string) =>
    inDeb.has(p) || existsSync(join(dest, p)) || isLink(join(dest, p)) || /^\/opt\/l9gpu\/(current|releases)(\/|$)/.test(p);
  // the help as bin/run.js prints it (written at build time), each command's under its name
  const help = Object.entries(JSON.parse(readFileSync(join(ROOT, 'dist/help.json'), 'utf8')) as Record<string, string>).map(
    ([id, text]): [string, string] => [`l9gpu ${id} --help`, text],
  );
  const named = new Map<string, string>();
  for (const [where, text] of [...adminTexts(ROOT), ...help]) {
    for (const m of text.matchAll(INSTALLED_PATH)) {
      const p = m[0].replace(/\.+$/, '');
      if (!named.has(p)) named.set(p, where);
    }
  }
  assert.ok(
    named.has('/opt/l9gpu/slurm/ctld-epilog') && named.has('/usr/bin/l9gpu'),
    `the paths are found: ${[...named.keys()].join(' ')}`,
  );
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
  copyFileSync(rpm, join(site, 'files', basename(rpm)));
  writeFileSync(join(site, 'site.yml'), PLAYBOOK);
  // the vault's variable, as a vault file would give it
  writeFileSync(join(site, 'vault.yml'), 'vault_l9gpu_otlp_headers: authorization=Basic%20c2VjcmV0\n');
  mkdirSync(join(root, 'etc/slurm'), { recursive: true });
  writeFileSync(join(root, 'etc/slurm/slurm.conf'), SLURM_CONF);
  const play = (...extra: string[]) =>
    inRoot(root, ['sh', '-c', `cd /srv/site && ansible-playbook -i localhost, -e @vault.yml site.yml ${extra.join(' ')}`], {
      ANSIBLE_NOCOLOR: '1',
      ANSIBLE_FORCE_COLOR: '0',
    });
  const recap = (out: string) => /localhost\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=0\s+failed=(\d+)/.exec(out);

  // with --diff, so that the secret's template would show in the output but for no_log
  const first = play('--diff');
  assert.equal(first.status, 0, first.stdout + first.stderr);
  assert.match(first.stdout, /^\+sinks = otlp, prometheus$/m, "a template's diff shows its lines: the secret would show but for no_log");
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
  assert.deepEqual(readSection(cfg, DAEMON_SECTION).sinks, ['otlp', 'prometheus']);
  assert.equal(cfg.get('daemon', 'interval'), 5);
  assert.deepEqual(readSection(cfg, JOBS_SECTION).gpu_hour_prices, { H100: '3.2', A100: '1.8' });
  assert.deepEqual(readSection(cfg, OTLP_SECTION).headers, { 'X-Scope-OrgID': 'hpc team' });
  assert.equal(statSync(iniPath).mode & 0o777, 0o644);

  // the secret header in the root-only drop-in, % escaped for systemd; the unit with it verifies
  const dropIn = join(root, 'etc/systemd/system/l9gpu.service.d/ansible.conf');
  assert.equal(statSync(dropIn).mode & 0o777, 0o600);
  assert.match(readFileSync(dropIn, 'utf8'), /^Environment="OTEL_EXPORTER_OTLP_METRICS_HEADERS=authorization=Basic%%20c2VjcmV0"$/m);
  const verify = run('systemd-analyze', ['verify', `--root=${root}`, 'l9gpu.service']);
  assert.equal(verify.status, 0, verify.stderr);
  assert.equal(
    verify.stderr
      .split('\n')
      .filter((l) => l.includes('l9gpu'))
      .join('\n'),
    '',
    'no warnings about the unit or its drop-in',
  );

  // slurm.conf: the hooks, the site's PrologFlags kept with Alloc added, the controller's epilog
  const conf = readFileSync(join(root, 'etc/slurm/slurm.conf'), 'utf8');
  for (const line of [
    'PrologFlags=Contain,Alloc',
    'Prolog=/etc/slurm/l9gpu/prolog',
    'Epilog=/etc/slurm/l9gpu/epilog',
    'EpilogSlurmctld=/etc/slurm/l9gpu/ctld-epilog',
  ]) {
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
  assert.equal(
    readFileSync(join(root, 'etc/slurm/slurm.conf'), 'utf8'),
    SLURM_CONF + 'Prolog=/usr/local/sbin/site-prolog\n',
    'no Include added',
  );
  // nor the controller's EpilogSlurmctld
  writeFileSync(join(root, 'etc/slurm/slurm.conf'), SLURM_CONF + 'EpilogSlurmctld=/usr/local/sbin/site-ctld-epilog\n');
  const refusedCtld = play('--tags', 'l9gpu_slurm');
  assert.notEqual(refusedCtld.status, 0);
  assert.match(
    refusedCtld.stdout,
    /already has EpilogSlurmctld= for another program: .* call \/etc\/slurm\/l9gpu\/ctld-epilog from yours/s,
  );

  // method include: the lines in their own file, included last (Slurm keeps a key's latest value: the merged PrologFlags)
  writeFileSync(join(root, 'etc/slurm/slurm.conf'), SLURM_CONF);
  ok(play('--tags', 'l9gpu_slurm', '-e', 'l9gpu_slurm_conf_method=include'), 'method include');
  assert.equal(readFileSync(join(root, 'etc/slurm/slurm.conf'), 'utf8'), `${SLURM_CONF}Include /etc/slurm/l9gpu.conf\n`);
  const included = readFileSync(join(root, 'etc/slurm/l9gpu.conf'), 'utf8')
    .split('\n')
    .filter((l) => l && !l.startsWith('#'));
  assert.deepEqual(included, [
    'Prolog=/etc/slurm/l9gpu/prolog',
    'Epilog=/etc/slurm/l9gpu/epilog',
    'PrologFlags=Contain,Alloc',
    'EpilogSlurmctld=/etc/slurm/l9gpu/ctld-epilog',
  ]);
  // method prolog_dir: the site's folders get links, slurm.conf is not touched
  writeFileSync(join(root, 'etc/slurm/slurm.conf'), SLURM_CONF);
  for (const d of ['prolog.d', 'epilog.d']) mkdirSync(join(root, 'etc/slurm', d));
  ok(play('--tags', 'l9gpu_slurm', '-e', 'l9gpu_slurm_conf_method=prolog_dir'), 'method prolog_dir');
  assert.equal(readlinkSync(join(root, 'etc/slurm/prolog.d/50-l9gpu')), '/etc/slurm/l9gpu/prolog');
  assert.equal(readlinkSync(join(root, 'etc/slurm/epilog.d/50-l9gpu')), '/etc/slurm/l9gpu/epilog');
  assert.equal(readFileSync(join(root, 'etc/slurm/slurm.conf'), 'utf8'), SLURM_CONF);

  // a RedHat-family node gets the .rpm through dnf: as far as this Debian root allows, in check mode (dnf's
  // Python module is not here, so the dnf task itself fails; the .rpm installing is the test above)
  const redhat = play('--check', '--tags', 'l9gpu_install', '-e', 'ansible_os_family=RedHat');
  assert.match(redhat.stdout, /TASK \[l9gpu : Install the \.deb\][^\n]*\n(skipping|\s)*skipping: \[localhost\]/);
  assert.match(redhat.stdout, /TASK \[l9gpu : Install the \.rpm\]/);
  assert.ok(
    redhat.stdout.includes(`TASK [l9gpu : Copy the package to the node, ${basename(rpm)}]`),
    `the .rpm is the package copied and installed:\n${redhat.stdout}`,
  );
  const other = play('--check', '--tags', 'l9gpu_install', '-e', 'ansible_os_family=Suse');
  assert.notEqual(other.status, 0);
  assert.match(other.stdout, /Suse has neither: use the tarball's install\.sh/);
});
