/**
 * A real single-node Slurm (munge, slurmctld, slurmd, and slurmdbd on
 * MariaDB for sacct) on loopback, with fake GPU character devices, shards,
 * and Prolog/Epilog set to the project's own hooks. Everything lives under
 * one folder; stop() cancels jobs first, then kills daemons by pid file.
 *
 * Three releases: Debian 12's Slurm 22.05 on this machine, and Debian 13's
 * 24.11 and Debian unstable's 26.05 in chroots (made once by
 * test/setup/install-test-deps.sh under /var/cache/l9gpu-test). A chroot's
 * daemons and clients run inside it; /proc, /dev, /sys, /tmp and the project
 * are bind-mounted at the same paths, so slurmd runs the project's hooks by
 * their host paths and they write the same state dir the daemon reads.
 *
 * Clusters run side by side (the three releases' suites at once, and the
 * dashboards' cluster next to them): each takes its own block of ports
 * (slurmctld, slurmd, slurmdbd, MariaDB) and has its munge socket in its
 * folder. What stays shared is serialised by machine-wide locks: configless
 * mode's links at compiled-in paths (/run/slurm/conf, /run/munge), and each
 * chroot (one cluster of a release at a time, should two runs share a machine).
 */
import { execFile, spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmdirSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createServer } from 'node:net';
import { ROOT, tempDir } from './paths.js';
import { lock, tryLock, unlock } from './host-lock.js';
import { waitFor } from './wait.js';

const exec = promisify(execFile);
export const NODE = hostname().split('.')[0]!;
/** The node's name in Slurm: not the host name (NodeHostname=, slurmd -N), as on many real clusters. */
export const SLURM_NODE = 'gpunode1';
export const TEST_USER = 'l9gputest';

export type SlurmRelease = 'bookworm' | 'trixie' | 'sid';
/** The Slurm each Debian release ships (what the tests are named after). */
export const SLURM_VERSION: Record<SlurmRelease, string> = { bookworm: '22.05', trixie: '24.11', sid: '26.05' };
export const CHROOT_CACHE = '/var/cache/l9gpu-test';

export function chrootOf(release: SlurmRelease): string | undefined {
  return release === 'bookworm' ? undefined : join(CHROOT_CACHE, `slurm-${release}`);
}

/** A link (or the empty folder made for it), never what it points at or anything inside. */
function removeLinkOrEmptyDir(p: string): void {
  try {
    if (lstatSync(p).isDirectory()) rmdirSync(p);
    else unlinkSync(p);
  } catch {
    /* gone, or no longer empty: not ours to remove */
  }
}

function alive(pid: number): boolean {
  const r = spawnSync('ps', ['-o', 'stat=', '-p', String(pid)], { encoding: 'utf8' });
  return r.status === 0 && !!r.stdout.trim() && !r.stdout.trim().startsWith('Z');
}

/** A cluster's ports. */
export interface SlurmPorts {
  ctld: number;
  slurmd: number;
  dbd: number;
  mariadb: number;
}

/**
 * Port blocks start here: below the kernel's ephemeral range (32768+), so no
 * outgoing connection takes one, and clear of Slurm's and MariaDB's defaults
 * (6817-6819, 3306), which a Slurm or MariaDB installed on the machine may hold.
 */
const PORT_BASE = 16800;
const SLOTS = 32;
export const CONFIGLESS_LOCK = 'slurm-configless';

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/**
 * Reserves a block of 4 ports for one cluster: slot s (a machine-wide lock
 * held until stop()) owns PORT_BASE + 10·s .. +3. A slot whose ports some
 * other program holds is passed over.
 */
async function reservePorts(): Promise<{ slot: string; ports: SlurmPorts }> {
  for (let s = 0; s < SLOTS; s++) {
    const slot = `slurm-ports-${s}`;
    if (!tryLock(slot)) continue;
    const b = PORT_BASE + 10 * s;
    const ports = { ctld: b, slurmd: b + 1, dbd: b + 2, mariadb: b + 3 };
    const free = await Promise.all(Object.values(ports).map(canListen));
    if (free.every(Boolean)) return { slot, ports };
    unlock(slot);
  }
  throw new Error(
    `no free block of Slurm test ports in ${PORT_BASE}-${PORT_BASE + 10 * SLOTS}: ${SLOTS} clusters running, or other programs hold them`,
  );
}

/** Processes whose root is this folder (running inside the chroot). */
function processesInside(root: string): number[] {
  const pids: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (readlinkSync(`/proc/${d}/root`) === root) pids.push(Number(d));
    } catch {
      /* exited, or a kernel thread */
    }
  }
  return pids;
}

export interface ClusterOptions {
  gpus: number;
  /** The l9gpu config file the hooks read (their L9GPU_CONFIG). */
  hookConfig: string;
  withDbd: boolean;
  prologFlags?: string;
  /** Which Slurm (default: this machine's 22.05). */
  release?: SlurmRelease;
  /** Extra slurm.conf lines ($BASE stands for the cluster's folder). */
  extraConf?: string;
}

export class SlurmCluster {
  readonly base = tempDir('l9gpu-slurm-');
  readonly conf = join(this.base, 'etc', 'slurm.conf');
  private readonly env: NodeJS.ProcessEnv;
  readonly release: SlurmRelease;
  /** The chroot the daemons and clients run in; undefined for this machine's own Slurm. */
  readonly root: string | undefined;
  private reserved: { slot: string; ports: SlurmPorts } | undefined;

  constructor(readonly o: ClusterOptions) {
    this.env = { ...process.env, SLURM_CONF: this.conf };
    this.release = o.release ?? 'bookworm';
    this.root = chrootOf(this.release);
  }

  /** This cluster's ports (reserved by start()). */
  get ports(): SlurmPorts {
    if (!this.reserved) throw new Error('the Slurm cluster has no ports before start()');
    return this.reserved.ports;
  }

  /** A command line as it runs for this cluster: inside its chroot, if it has one. */
  private inside(file: string, args: string[]): [string, string[]] {
    return this.root ? ['chroot', [this.root, file, ...args]] : [file, args];
  }

  /** Runs a Slurm client command (as a user when given). */
  async cmd(args: string[], user?: string): Promise<string> {
    const [file, argv] = this.inside(
      ...((user ? ['runuser', ['-u', user, '--', ...args]] : [args[0]!, args.slice(1)]) as [string, string[]]),
    );
    const { stdout } = await exec(file, argv, { env: this.env, timeout: 30_000 });
    return stdout;
  }

  /** slurmctld's and slurmd's log lines that name this job: what a failed test shows of Slurm's side. */
  logLines(jobId: string): string {
    const pick = (f: string) => {
      try {
        return readFileSync(join(this.base, 'log', f), 'utf8')
          .split('\n')
          .filter((l) => new RegExp(`\\b${jobId}\\b`).test(l))
          .slice(-40);
      } catch (e) {
        return [`(${f}: ${(e as Error).message})`];
      }
    };
    return `slurmctld.log: ${pick('slurmctld.log').join(' | ')}; slurmd.log: ${pick('slurmd.log').join(' | ')}`;
  }

  /** Environment for the l9gpu daemon and CLI: this cluster's slurm.conf and its clients first on PATH. */
  clientEnv(): Record<string, string> {
    return { SLURM_CONF: this.conf, PATH: `${join(this.base, 'bin')}:${process.env.PATH ?? '/usr/bin:/bin'}` };
  }

  /** Mounts what the chroot shares with this machine (at the same paths), once per start. */
  private mountChroot(): void {
    const root = this.root!;
    if (!existsSync(join(root, 'usr', 'sbin', 'slurmctld')))
      throw new Error(`no Slurm chroot at ${root}: run test/setup/install-test-deps.sh`);
    this.unmountChroot();
    const sh = (c: string, a: string[]) => {
      const r = spawnSync(c, a, { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`${c} ${a.join(' ')}: ${r.stderr}`);
    };
    sh('mount', ['--bind', '/proc', join(root, 'proc')]);
    sh('mount', ['--bind', '/dev', join(root, 'dev')]);
    sh('mount', ['--rbind', '/sys', join(root, 'sys')]);
    const shared = ['/tmp', ROOT.replace(/\/$/, '')];
    for (const d of shared) {
      if (shared.some((o) => o !== d && d.startsWith(o + '/'))) continue; // seen through its parent
      mkdirSync(join(root, d), { recursive: true });
      sh('mount', ['--bind', d, join(root, d)]);
    }
    // slurmd runs the hooks with the node binary they name (process.execPath): the same path inside
    mkdirSync(join(root, process.execPath, '..'), { recursive: true });
    // copied aside, then renamed over: a node of the chroot still running (a slurmctld epilog's worker of an
    // earlier run, draining) keeps its old file, where a copy onto it fails with ETXTBSY
    const node = join(root, process.execPath);
    copyFileSync(process.execPath, `${node}.${process.pid}`);
    renameSync(`${node}.${process.pid}`, node);
    copyFileSync('/etc/hosts', join(root, 'etc', 'hosts'));
    const uid = spawnSync('id', ['-u', TEST_USER], { encoding: 'utf8' }).stdout.trim();
    if (spawnSync('chroot', [root, 'id', TEST_USER]).status !== 0)
      sh('chroot', [root, 'useradd', '-u', uid, '-M', '-s', '/bin/sh', TEST_USER]);
    if (!existsSync(join(root, 'etc', 'munge', 'munge.key'))) {
      sh('chroot', [root, 'dd', 'if=/dev/urandom', 'of=/etc/munge/munge.key', 'bs=128', 'count=1']);
      sh('chroot', [root, 'chown', 'munge:munge', '/etc/munge/munge.key']);
      sh('chroot', [root, 'chmod', '400', '/etc/munge/munge.key']);
    }
    // the daemon under test runs on this machine and reaches this Slurm through these wrappers
    mkdirSync(join(this.base, 'bin'), { recursive: true });
    for (const c of ['sbatch', 'srun', 'squeue', 'scontrol', 'sacct', 'scancel', 'sinfo', 'sacctmgr']) {
      writeFileSync(join(this.base, 'bin', c), `#!/bin/sh\nexec chroot ${root} /usr/bin/${c} "$@"\n`, { mode: 0o755 });
    }
  }

  /** Every mount under the chroot, deepest first (the /sys rbind brings submounts; repeat until none is left). */
  private unmountChroot(): void {
    const root = this.root!;
    for (let pass = 0; pass < 5; pass++) {
      const mounts = readFileSync('/proc/mounts', 'utf8')
        .split('\n')
        .map((l) => l.split(' ')[1] ?? '')
        .filter((m) => m.startsWith(root + '/'))
        .sort()
        .reverse();
      if (mounts.length === 0) return;
      for (const m of mounts) spawnSync('umount', ['-l', m]);
    }
  }

  async sbatch(args: string[], user?: string): Promise<string> {
    return (await this.cmd(['sbatch', '--parsable', '-o', '/dev/null', '-e', '/dev/null', ...args], user)).trim().split(';')[0]!;
  }

  /**
   * Submits n held (pending) jobs in one shell inside the cluster (8 at a
   * time): a queue as long as a busy cluster's, without running anything.
   */
  async submitHeld(n: number): Promise<void> {
    const script =
      `seq ${n} | xargs -P 8 -n 50 sh -c 'for i; do sbatch -H -o /dev/null -e /dev/null --wrap ` + `true >/dev/null || exit 1; done' sh`;
    const [file, argv] = this.inside('sh', ['-c', script]);
    await exec(file, argv, { env: this.env, timeout: 600_000 });
  }

  /**
   * slurmctld's own count of the RPCs it served, by message type (sdiag's
   * "Remote Procedure Call statistics by message type"), never reset: callers
   * take differences, and each call itself adds one REQUEST_STATS_INFO.
   */
  async rpcCounts(): Promise<Map<string, { count: number; totalUs: number }>> {
    const out = await this.cmd(['sdiag']);
    const m = new Map<string, { count: number; totalUs: number }>();
    const section = out.slice(out.indexOf('by message type'), out.indexOf('by user') > 0 ? out.indexOf('by user') : undefined);
    for (const r of section.matchAll(/^\s*(\w+)\s+\(\s*\d+\)\s+count:(\d+)\s+ave_time:\d+\s+total_time:(\d+)/gm))
      m.set(r[1]!, { count: Number(r[2]), totalUs: Number(r[3]) });
    return m;
  }

  /** srun in the background (it blocks for the job's life); resolves with its exit code. */
  srun(args: string[]): Promise<number | null> {
    const p = spawn(...this.inside('srun', args), { env: this.env, stdio: 'ignore' });
    return new Promise((r) => p.on('exit', r));
  }

  async state(jobId: string): Promise<string> {
    const out = await this.cmd(['scontrol', 'show', 'job', jobId]).catch(() => '');
    return /JobState=(\S+)/.exec(out)?.[1] ?? 'UNKNOWN';
  }

  /** The run key the hooks give a job's current run: its SLUID where Slurm has them (25.11+), else r<restart count>. */
  async runKey(jobId: string): Promise<string> {
    const out = await this.cmd(['scontrol', 'show', 'job', '-d', jobId]);
    const sluid = /\bSLUID=(\S+)/.exec(out)?.[1];
    if (sluid && sluid !== '(null)') return `sluid:${sluid}`;
    return `r${/\bRestarts=(\d+)/.exec(out)?.[1] ?? 0}`;
  }

  waitState(jobId: string, states: string[], timeoutMs = 30_000): Promise<string> {
    return waitFor(
      `job ${jobId} in ${states.join('/')}`,
      async () => {
        const s = await this.state(jobId);
        return states.includes(s) ? s : undefined;
      },
      timeoutMs,
      200,
    );
  }

  async start(): Promise<this> {
    const b = this.base;
    this.reserved ??= await reservePorts();
    const ports = this.ports;
    // a chroot holds one cluster at a time (its mounts, its copy of node, its munge key): another test run on this
    // machine that brings up the same release waits for this one
    if (this.root) {
      await lock(`slurm-chroot-${this.release}`, 900_000);
      // a run of an older checkout takes no lock: give its processes inside a while to end (mounting unmounts its binds);
      // daemons a killed run left behind never end, so after that the cluster starts anyway, as it always did
      const root = this.root;
      await waitFor(`no other test run's process inside ${root}`, () => processesInside(root).length === 0, 180_000, 1000).catch(
        () => undefined,
      );
    }
    for (const d of ['etc', 'state/ctld', 'state/d', 'log', 'run', 'dev', 'hooks', 'munge', 'bin'])
      mkdirSync(join(b, d), { recursive: true });
    if (this.root) this.mountChroot();
    chmodSync(b, 0o755);
    // munged insists on a socket folder owned by munge, mode 0755
    const munge = Number(spawnSync(...this.inside('id', ['-u', 'munge']), { encoding: 'utf8' }).stdout.trim());
    chownSync(join(b, 'munge'), munge, munge);
    chmodSync(join(b, 'munge'), 0o755);
    // gres.conf File= must name character devices: minor N for fake GPU N
    for (let i = 0; i < this.o.gpus; i++)
      if (!existsSync(join(b, 'dev', `fakegpu${i}`))) spawnSync('mknod', [join(b, 'dev', `fakegpu${i}`), 'c', '195', String(i)]);
    // slurmd gives hooks no PATH and no HOME: the wrappers name everything absolutely
    for (const h of ['prolog', 'epilog']) {
      // hooks/slow-<hook> holding N makes the hook take N seconds first (a job stays COMPLETING while its epilog runs)
      writeFileSync(
        join(b, 'hooks', h),
        `#!/bin/sh\n[ -f '${b}/hooks/slow-${h}' ] && /bin/sleep "$(/bin/cat ` +
          `'${b}/hooks/slow-${h}')"\nL9GPU_CONFIG='${this.o.hookConfig}' ` +
          `L9GPU_NODE='${process.execPath}' exec '${join(ROOT, 'slurm', h)}'\n`,
        { mode: 0o755 },
      );
    }
    const ms = join(b, 'munge', 'munge.socket.2');
    const acct = this.o.withDbd
      ? [
          'AccountingStorageType=accounting_storage/slurmdbd',
          'AccountingStorageHost=127.0.0.1',
          `AccountingStoragePort=${ports.dbd}`,
          `AccountingStoragePass=${ms}`,
          'AccountingStorageTRES=gres/gpu',
          'JobAcctGatherType=jobacct_gather/linux',
        ].join('\n')
      : 'AccountingStorageType=accounting_storage/none\nJobAcctGatherType=jobacct_gather/none';
    // job ids of their own per port slot (1, 100001, 200001 ...): clusters side by side on one machine must not share
    // ids, since the daemon's NCCL discovery reads every process's environment on the machine, as on a real node,
    // and another cluster's job 23 would be credited to this cluster's job 23
    const firstJobId = 1 + 100_000 * ((ports.ctld - PORT_BASE) / 10);
    writeFileSync(
      this.conf,
      `ClusterName=ci
FirstJobId=${firstJobId}
SlurmctldHost=${NODE}(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=${ms}
SlurmctldPort=${ports.ctld}
SlurmdPort=${ports.slurmd}
StateSaveLocation=${b}/state/ctld
SlurmdSpoolDir=${b}/state/d
SlurmctldPidFile=${b}/run/slurmctld.pid
SlurmdPidFile=${b}/run/slurmd.pid
SlurmctldLogFile=${b}/log/slurmctld.log
SlurmdLogFile=${b}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
SlurmctldParameters=enable_configless
MpiDefault=none
ReturnToService=2
${acct}
JobCompType=jobcomp/none
GresTypes=gpu,shard
${this.o.prologFlags === undefined ? 'PrologFlags=Alloc' : this.o.prologFlags}
Prolog=${b}/hooks/prolog
Epilog=${b}/hooks/epilog
KillWait=2
MinJobAge=300
SlurmdTimeout=10
NodeName=${SLURM_NODE} NodeHostname=${NODE} NodeAddr=127.0.0.1 CPUs=16 RealMemory=1000 ` +
        `Gres=gpu:${this.o.gpus},shard:${this.o.gpus * 2} State=UNKNOWN
PartitionName=gpu Nodes=${SLURM_NODE} Default=YES MaxTime=INFINITE State=UP
${(this.o.extraConf ?? '').replaceAll('$BASE', b)}
`,
    );
    writeFileSync(
      join(b, 'etc', 'gres.conf'),
      `AutoDetect=off\nNodeName=${SLURM_NODE} Name=gpu File=${b}/dev/fakegpu[0-${this.o.gpus - 1}]\nNodeName=${SLURM_NODE} ` +
        `Name=shard Count=${this.o.gpus * 2} File=${b}/dev/fakegpu[0-${this.o.gpus - 1}]\n`,
    );
    // 24.05+ wants a cgroup plugin; a container has no writable cgroup tree
    if (this.root) writeFileSync(join(b, 'etc', 'cgroup.conf'), 'CgroupPlugin=disabled\n');
    const run = (file: string, args: string[]) => {
      const r = spawnSync(...this.inside(file, args), { env: this.env, encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`${file} ${args.join(' ')}: ${r.stderr || r.error?.message}`);
    };
    run('runuser', [
      '-u',
      'munge',
      '--',
      '/usr/sbin/munged',
      `--socket=${ms}`,
      `--pid-file=${b}/munge/munged.pid`,
      `--log-file=${b}/munge/munged.log`,
      `--seed-file=${b}/munge/munged.seed`,
    ]);
    if (this.o.withDbd) await this.startDbd(ms);
    run('slurmctld', ['-f', this.conf]);
    run('slurmd', ['-f', this.conf, '-N', SLURM_NODE]);
    await waitFor('node idle', async () => (await this.cmd(['sinfo', '-h', '-o', '%T']).catch(() => '')).trim() === 'idle', 30_000, 200);
    return this;
  }

  private async startDbd(ms: string): Promise<void> {
    const b = this.base;
    const my = join(b, 'mysql');
    // a temporary folder of its own: clusters started side by side bootstrapped in the one /tmp and one removed the
    // other's temporary table ("Could not remove temporary table: '/tmp/#sql-temptable-1ab6-1-3'", Aborting)
    mkdirSync(join(my, 'tmp'), { recursive: true });
    spawnSync('chown', ['-R', 'mysql:mysql', my]);
    const r = spawnSync(
      'mariadb-install-db',
      ['--user=mysql', `--datadir=${my}/data`, `--tmpdir=${my}/tmp`, '--auth-root-authentication-method=normal', '--skip-test-db'],
      { encoding: 'utf8' },
    );
    if (r.status !== 0) throw new Error(`mariadb-install-db: ${r.stderr}`);
    spawn(
      'mariadbd',
      [
        '--user=mysql',
        `--datadir=${my}/data`,
        `--tmpdir=${my}/tmp`,
        `--socket=${my}/sock`,
        `--pid-file=${my}/pid`,
        '--bind-address=127.0.0.1',
        `--port=${this.ports.mariadb}`,
        `--log-error=${my}/err.log`,
      ],
      { stdio: 'ignore', detached: true },
    ).unref();
    await waitFor(
      'MariaDB',
      () => spawnSync('mariadb-admin', [`--socket=${my}/sock`, 'ping'], { encoding: 'utf8' }).status === 0,
      30_000,
      100,
    );
    const sql = spawnSync(
      'mariadb',
      [
        `--socket=${my}/sock`,
        '-uroot',
        '-e',
        "CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurm'; GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';",
      ],
      { encoding: 'utf8' },
    );
    if (sql.status !== 0) throw new Error(`mariadb: ${sql.stderr}`);
    const dbdConf = join(b, 'etc', 'slurmdbd.conf');
    writeFileSync(
      dbdConf,
      [
        'AuthType=auth/munge',
        `AuthInfo=socket=${ms}`,
        'DbdHost=localhost',
        'DbdAddr=127.0.0.1',
        `DbdPort=${this.ports.dbd}`,
        'SlurmUser=root',
        `LogFile=${b}/log/slurmdbd.log`,
        `PidFile=${b}/run/slurmdbd.pid`,
        'StorageType=accounting_storage/mysql',
        'StorageHost=127.0.0.1',
        `StoragePort=${this.ports.mariadb}`,
        'StorageUser=slurm',
        'StoragePass=slurm',
        'StorageLoc=slurm_acct_db',
        '',
      ].join('\n'),
      { mode: 0o600 },
    );
    // slurmdbd reads slurmdbd.conf next to slurm.conf
    const d = spawnSync(...this.inside('slurmdbd', []), { env: this.env, encoding: 'utf8' });
    if (d.status !== 0) throw new Error(`slurmdbd: ${d.stderr}`);
    await waitFor(
      'slurmdbd',
      async () =>
        (await this.cmd(['sacctmgr', '-n', 'list', 'cluster'])
          .then(() => true)
          .catch(() => false)) || undefined,
      30_000,
      200,
    );
    await this.cmd(['sacctmgr', '-i', 'add', 'cluster', 'ci']).catch(() => '');
  }

  /** Makes every later run of a hook take this long first (0: back to normal). */
  slowHook(hook: 'prolog' | 'epilog', seconds: number): void {
    const f = join(this.base, 'hooks', `slow-${hook}`);
    if (seconds > 0) writeFileSync(f, String(seconds));
    else rmSync(f, { force: true });
  }

  /** Kills slurmd hard, as a crash would (no epilog for its jobs). */
  killSlurmd(): void {
    const pid = Number(readFileSync(join(this.base, 'run', 'slurmd.pid'), 'utf8'));
    process.kill(pid, 'SIGKILL');
  }

  /** Kills slurmd and waits until it is gone (its step daemons stay, as after a crash). */
  private async stopSlurmd(): Promise<void> {
    this.killSlurmd();
    await waitFor('slurmd gone', () => !alive(Number(readFileSync(join(this.base, 'run', 'slurmd.pid'), 'utf8'))), 10_000, 100);
  }

  async restartSlurmd(): Promise<void> {
    spawnSync(...this.inside('slurmd', ['-f', this.conf, '-N', SLURM_NODE]), { env: this.env });
    await this.resumed();
  }

  /**
   * Waits until the node takes jobs again. slurmctld may mark it down after a
   * resume was sent (the killed slurmd stopped answering before the new one
   * registered): resumed again whenever it shows down, drained or failing.
   */
  private async resumed(): Promise<void> {
    await waitFor(
      'node idle or mixed',
      async () => {
        const st = (await this.cmd(['sinfo', '-h', '-o', '%T']).catch(() => '')).trim();
        if (!/^(idle|mixed|allocated)$/.test(st))
          await this.cmd(['scontrol', 'update', `nodename=${SLURM_NODE}`, 'state=resume']).catch(() => '');
        return /^(idle|mixed|allocated)$/.test(st);
      },
      60_000,
      500,
    );
  }

  /** What configless mode added to this machine (and the chroot), removed again by leaveConfigless. */
  private configless: string[] = [];

  /**
   * Restarts slurmd the configless way (`slurmd --conf-server`, no slurm.conf
   * on the node, no SLURM_CONF): it fetches slurm.conf and gres.conf from
   * slurmctld into its spool and links /run/slurm/conf to them, which is
   * where the hooks it runs (in its root) must find them. Before it has a
   * config, slurmd reaches munge at the compiled-in socket, so that is
   * linked to this cluster's munged. A daemon running outside the chroot
   * sees this machine's /run: the link slurmd made there is mirrored here.
   * Those paths are the same for every cluster: one cluster at a time is
   * configless (a machine-wide lock, held until leaveConfigless or stop).
   * Returns the config cache folder.
   */
  async enterConfigless(): Promise<string> {
    const root = this.root ?? '/';
    await lock(CONFIGLESS_LOCK, 300_000);
    await this.stopSlurmd();
    const socket = join(root, 'run', 'munge', 'munge.socket.2');
    if (!existsSync(socket)) {
      mkdirSync(join(root, 'run', 'munge'), { recursive: true });
      symlinkSync(join(this.base, 'munge', 'munge.socket.2'), socket);
      this.configless.push(socket);
    }
    const env = { ...this.env };
    delete env.SLURM_CONF;
    const r = spawnSync(...this.inside('slurmd', ['--conf-server', `127.0.0.1:${this.ports.ctld}`, '-N', SLURM_NODE]), {
      env,
      encoding: 'utf8',
    });
    if (r.status !== 0) throw new Error(`slurmd --conf-server: ${r.stderr}`);
    const link = join(root, 'run', 'slurm', 'conf');
    // slurmd writes the files it fetched one by one: wait for the last one the tests read too
    const cache = await waitFor(
      'slurmd linked /run/slurm/conf with slurm.conf and gres.conf',
      () => (['slurm.conf', 'gres.conf'].every((f) => existsSync(join(link, f))) ? readlinkSync(link) : undefined),
      30_000,
      100,
    );
    this.configless.push(link);
    if (this.root && !existsSync('/run/slurm/conf')) {
      if (!existsSync('/run/slurm')) {
        mkdirSync('/run/slurm');
        this.configless.push('/run/slurm');
      }
      symlinkSync(cache, '/run/slurm/conf');
      this.configless.push('/run/slurm/conf');
    }
    await this.resumed();
    return cache;
  }

  /** Back to slurmd with its slurm.conf; nothing configless mode added stays. */
  async leaveConfigless(): Promise<void> {
    await this.stopSlurmd();
    for (const p of this.configless.splice(0).reverse()) removeLinkOrEmptyDir(p);
    unlock(CONFIGLESS_LOCK);
    await this.restartSlurmd();
  }

  log(name: 'slurmctld' | 'slurmd'): string {
    try {
      return readFileSync(join(this.base, 'log', `${name}.log`), 'utf8');
    } catch {
      return '';
    }
  }

  async stop(): Promise<void> {
    const b = this.base;
    const pidOf = (f: string) => {
      try {
        return Number(readFileSync(join(b, f), 'utf8').trim());
      } catch {
        return 0;
      }
    };
    if (alive(pidOf('run/slurmctld.pid'))) {
      const ids = (await this.cmd(['squeue', '-h', '-o', '%A']).catch(() => '')).split('\n').filter(Boolean);
      if (ids.length) await this.cmd(['scancel', ...ids]).catch(() => '');
      await waitFor(
        'no running jobs',
        async () => (await this.cmd(['squeue', '-h', '-t', 'R,CG,CF', '-o', '%A']).catch(() => '')).trim() === '',
        20_000,
        200,
      ).catch(() => undefined);
    }
    for (const f of ['run/slurmd.pid', 'run/slurmctld.pid', 'run/slurmdbd.pid', 'mysql/pid', 'munge/munged.pid']) {
      const p = pidOf(f);
      if (!p || !alive(p)) continue;
      process.kill(p, 'SIGTERM');
      await waitFor(`${f} gone`, () => !alive(p), 10_000, 50).catch(() => process.kill(p, 'SIGKILL'));
    }
    for (const p of this.configless.splice(0).reverse()) removeLinkOrEmptyDir(p);
    unlock(CONFIGLESS_LOCK);
    if (this.root) {
      this.unmountChroot();
      unlock(`slurm-chroot-${this.release}`);
    }
    if (this.reserved) unlock(this.reserved.slot);
    this.reserved = undefined;
  }
}
