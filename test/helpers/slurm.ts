/**
 * A real single-node Slurm 22.05 (munge, slurmctld, slurmd, and slurmdbd on
 * MariaDB for sacct) on loopback, with fake GPU character devices, shards,
 * and Prolog/Epilog set to the project's own hooks. Everything lives under
 * one folder; stop() cancels jobs first, then kills daemons by pid file.
 */
import { execFile, spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT, tempDir } from './paths.js';
import { waitFor } from './wait.js';

const exec = promisify(execFile);
export const NODE = hostname().split('.')[0]!;
export const TEST_USER = 'l9gputest';

function alive(pid: number): boolean {
  const r = spawnSync('ps', ['-o', 'stat=', '-p', String(pid)], { encoding: 'utf8' });
  return r.status === 0 && !!r.stdout.trim() && !r.stdout.trim().startsWith('Z');
}

export interface ClusterOptions {
  gpus: number;
  /** The l9gpu config file the hooks read (their L9GPU_CONFIG). */
  hookConfig: string;
  withDbd: boolean;
  prologFlags?: string;
}

export class SlurmCluster {
  readonly base = tempDir('l9gpu-slurm-');
  readonly conf = join(this.base, 'etc', 'slurm.conf');
  private readonly env: NodeJS.ProcessEnv;

  constructor(readonly o: ClusterOptions) {
    this.env = { ...process.env, SLURM_CONF: this.conf };
  }

  /** Runs a Slurm client command (as a user when given). */
  async cmd(args: string[], user?: string): Promise<string> {
    const [file, argv] = user ? ['runuser', ['-u', user, '--', ...args]] : [args[0]!, args.slice(1)];
    const { stdout } = await exec(file, argv, { env: this.env, timeout: 30_000 });
    return stdout;
  }

  async sbatch(args: string[], user?: string): Promise<string> {
    return (await this.cmd(['sbatch', '--parsable', '-o', '/dev/null', '-e', '/dev/null', ...args], user)).trim().split(';')[0]!;
  }

  /** srun in the background (it blocks for the job's life); resolves with its exit code. */
  srun(args: string[]): Promise<number | null> {
    const p = spawn('srun', args, { env: this.env, stdio: 'ignore' });
    return new Promise((r) => p.on('exit', r));
  }

  async state(jobId: string): Promise<string> {
    const out = await this.cmd(['scontrol', 'show', 'job', jobId]).catch(() => '');
    return /JobState=(\S+)/.exec(out)?.[1] ?? 'UNKNOWN';
  }

  waitState(jobId: string, states: string[], timeoutMs = 30_000): Promise<string> {
    return waitFor(`job ${jobId} in ${states.join('/')}`, async () => {
      const s = await this.state(jobId);
      return states.includes(s) ? s : undefined;
    }, timeoutMs, 200);
  }

  async start(): Promise<this> {
    const b = this.base;
    for (const d of ['etc', 'state/ctld', 'state/d', 'log', 'run', 'dev', 'hooks', 'munge']) mkdirSync(join(b, d), { recursive: true });
    chmodSync(b, 0o755);
    // munged insists on a socket folder owned by munge, mode 0755
    const munge = Number(spawnSync('id', ['-u', 'munge'], { encoding: 'utf8' }).stdout.trim());
    chownSync(join(b, 'munge'), munge, munge);
    chmodSync(join(b, 'munge'), 0o755);
    // gres.conf File= must name character devices: minor N for fake GPU N
    for (let i = 0; i < this.o.gpus; i++) if (!existsSync(join(b, 'dev', `fakegpu${i}`))) spawnSync('mknod', [join(b, 'dev', `fakegpu${i}`), 'c', '195', String(i)]);
    // slurmd gives hooks no PATH and no HOME: the wrappers name everything absolutely
    for (const h of ['prolog', 'epilog']) {
      writeFileSync(join(b, 'hooks', h), `#!/bin/sh\nL9GPU_CONFIG='${this.o.hookConfig}' L9GPU_NODE='${process.execPath}' exec '${join(ROOT, 'slurm', h)}'\n`, { mode: 0o755 });
    }
    const ms = join(b, 'munge', 'munge.socket.2');
    const acct = this.o.withDbd
      ? `AccountingStorageType=accounting_storage/slurmdbd\nAccountingStorageHost=127.0.0.1\nAccountingStoragePort=6819\nAccountingStoragePass=${ms}\nAccountingStorageTRES=gres/gpu\nJobAcctGatherType=jobacct_gather/linux`
      : 'AccountingStorageType=accounting_storage/none\nJobAcctGatherType=jobacct_gather/none';
    writeFileSync(this.conf, `ClusterName=ci
SlurmctldHost=${NODE}(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=${ms}
SlurmctldPort=6817
SlurmdPort=6818
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
NodeName=${NODE} NodeAddr=127.0.0.1 CPUs=16 RealMemory=1000 Gres=gpu:${this.o.gpus},shard:${this.o.gpus * 2} State=UNKNOWN
PartitionName=gpu Nodes=${NODE} Default=YES MaxTime=INFINITE State=UP
`);
    writeFileSync(join(b, 'etc', 'gres.conf'), `AutoDetect=off\nNodeName=${NODE} Name=gpu File=${b}/dev/fakegpu[0-${this.o.gpus - 1}]\nNodeName=${NODE} Name=shard Count=${this.o.gpus * 2} File=${b}/dev/fakegpu[0-${this.o.gpus - 1}]\n`);
    const run = (file: string, args: string[]) => {
      const r = spawnSync(file, args, { env: this.env, encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`${file} ${args.join(' ')}: ${r.stderr || r.error?.message}`);
    };
    run('runuser', ['-u', 'munge', '--', '/usr/sbin/munged', `--socket=${ms}`, `--pid-file=${b}/munge/munged.pid`, `--log-file=${b}/munge/munged.log`, `--seed-file=${b}/munge/munged.seed`]);
    if (this.o.withDbd) await this.startDbd(ms);
    run('slurmctld', ['-f', this.conf]);
    run('slurmd', ['-f', this.conf]);
    await waitFor('node idle', async () => (await this.cmd(['sinfo', '-h', '-o', '%T']).catch(() => '')).trim() === 'idle', 30_000, 200);
    return this;
  }

  private async startDbd(ms: string): Promise<void> {
    const b = this.base;
    const my = join(b, 'mysql');
    mkdirSync(my, { recursive: true });
    spawnSync('chown', ['mysql:mysql', my]);
    const r = spawnSync('mariadb-install-db', ['--user=mysql', `--datadir=${my}/data`, '--auth-root-authentication-method=normal', '--skip-test-db'], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`mariadb-install-db: ${r.stderr}`);
    spawn('mariadbd', ['--user=mysql', `--datadir=${my}/data`, `--socket=${my}/sock`, `--pid-file=${my}/pid`, '--bind-address=127.0.0.1', '--port=3306', `--log-error=${my}/err.log`], { stdio: 'ignore', detached: true }).unref();
    await waitFor('MariaDB', () => spawnSync('mariadb-admin', [`--socket=${my}/sock`, 'ping'], { encoding: 'utf8' }).status === 0, 30_000, 100);
    const sql = spawnSync('mariadb', [`--socket=${my}/sock`, '-uroot', '-e', "CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurm'; GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"], { encoding: 'utf8' });
    if (sql.status !== 0) throw new Error(`mariadb: ${sql.stderr}`);
    const dbdConf = join(b, 'etc', 'slurmdbd.conf');
    writeFileSync(dbdConf, `AuthType=auth/munge\nAuthInfo=socket=${ms}\nDbdHost=localhost\nDbdAddr=127.0.0.1\nDbdPort=6819\nSlurmUser=root\nLogFile=${b}/log/slurmdbd.log\nPidFile=${b}/run/slurmdbd.pid\nStorageType=accounting_storage/mysql\nStorageHost=127.0.0.1\nStoragePort=3306\nStorageUser=slurm\nStoragePass=slurm\nStorageLoc=slurm_acct_db\n`, { mode: 0o600 });
    // slurmdbd reads slurmdbd.conf next to slurm.conf
    const d = spawnSync('slurmdbd', [], { env: this.env, encoding: 'utf8' });
    if (d.status !== 0) throw new Error(`slurmdbd: ${d.stderr}`);
    await waitFor('slurmdbd', async () => (await this.cmd(['sacctmgr', '-n', 'list', 'cluster']).then(() => true).catch(() => false)) || undefined, 30_000, 200);
    await this.cmd(['sacctmgr', '-i', 'add', 'cluster', 'ci']).catch(() => '');
  }

  /** Kills slurmd hard, as a crash would (no epilog for its jobs). */
  killSlurmd(): void {
    const pid = Number(readFileSync(join(this.base, 'run', 'slurmd.pid'), 'utf8'));
    process.kill(pid, 'SIGKILL');
  }

  async restartSlurmd(): Promise<void> {
    spawnSync('slurmd', ['-f', this.conf], { env: this.env });
    await this.cmd(['scontrol', 'update', `nodename=${NODE}`, 'state=resume']).catch(() => '');
    await waitFor('node idle or mixed', async () => /^(idle|mixed|allocated)$/.test((await this.cmd(['sinfo', '-h', '-o', '%T']).catch(() => '')).trim()), 30_000, 200);
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
      await waitFor('no running jobs', async () => (await this.cmd(['squeue', '-h', '-t', 'R,CG,CF', '-o', '%A']).catch(() => '')).trim() === '', 20_000, 200).catch(() => undefined);
    }
    for (const f of ['run/slurmd.pid', 'run/slurmctld.pid', 'run/slurmdbd.pid', 'mysql/pid', 'munge/munged.pid']) {
      const p = pidOf(f);
      if (!p || !alive(p)) continue;
      process.kill(p, 'SIGTERM');
      await waitFor(`${f} gone`, () => !alive(p), 10_000, 50).catch(() => process.kill(p, 'SIGKILL'));
    }
  }
}
