/**
 * Slurm attribution end to end, the same cases on every Slurm release the
 * tests run (test/slurm-<version>.test.ts): a real slurmctld + slurmd (+
 * slurmdbd on MariaDB) runs the project's prolog/epilog; the daemon samples
 * the fake NVML (whose NVML index order differs from the GRES/minor order, so
 * only UUID keying gets it right), reconciles with squeue/sacct, and exports
 * points to a file. Each case asserts the store and the exported slurm.*.
 */
import { isDeepStrictEqual } from 'node:util';
import type { EfficiencySection } from '../../src/jobs/report-model.js';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import Database from 'better-sqlite3';
import { DaemonProcess, PointsFile, runCli, type JsonPoint } from './daemon.js';
import { FakeNvml, h100, type FakeGpu } from './fake-nvml.js';
import { NODE, SLURM_NODE, SLURM_VERSION, SlurmCluster, TEST_USER, type SlurmRelease } from './slurm.js';
import { CLI, ROOT, tempDir } from './paths.js';
import { VictoriaMetrics } from './victoriametrics.js';
import { waitFor } from './wait.js';
import { freePort } from './net.js';
import { createLogger } from '../../src/core/log.js';
import { openStore } from '../../src/store/open.js';
import { Reconciler, type ReconcileSource } from '../../slurm/reconciler.js';
import type { JobReport } from '../../src/jobs/report-model.js';
import { isNoSteps, parseListPids } from '../../slurm/local-jobs.js';
import { isDrained, parseNodeState } from '../../slurm/node-drain.js';

const CONFIGLESS_AT: Record<SlurmRelease, 'early' | 'middle' | 'late'> = { bookworm: 'early', trixie: 'middle', sid: 'late' };

/** The end of a log file for a failure's message, or (none). */
function tail(file: string, chars: number): string {
  return existsSync(file) ? readFileSync(file, 'utf8').slice(-chars) : '(none)';
}

export function slurmSuite(release: SlurmRelease): void {
  const L = `[Slurm ${SLURM_VERSION[release]}] `;
  const dir = tempDir('l9gpu-slurmtest-');
  const stateDir = join(dir, 'state');
  const pointsFile = join(dir, 'points.jsonl');
  const configFile = join(dir, 'l9gpu.ini');
  const healthCheck = join(dir, 'healthcheck');
  const ctldEpilog = join(dir, 'ctld-epilog');
  // NVML index i has device minor MINORS[i]: GRES index g (fakegpu g, minor g) is NVML GPU MINORS.indexOf(g)
  const MINORS = [2, 0, 3, 1];
  // known values per device minor (= GRES index): utilization %, memory used, power W (and the energy counter's rate)
  const UTIL = [60, 0, 90, 30];
  const MEM = [20, 1, 60, 40].map((g) => g * 2 ** 30);
  const WATTS = [300, 70, 600, 200];
  const gpus: FakeGpu[] = MINORS.map((minor, i) =>
    h100(i, {
      minor,
      processes: [],
      util_gpu: UTIL[minor],
      mem_used: MEM[minor],
      power_mw: WATTS[minor]! * 1000,
      energy_mj: 10_000_000,
      energy_mj_per_s: WATTS[minor]! * 1000,
    }),
  );
  const fake = new FakeNvml({ driver_version: '550.54.15', energy_t0_s: Math.floor(Date.now() / 1000), devices: gpus });
  const uuidOfGres = (g: number): string => gpus[MINORS.indexOf(g)]!.uuid;

  let cluster: SlurmCluster;
  let daemon: DaemonProcess;
  const vm = new VictoriaMetrics();

  interface JobRow {
    job_id: string;
    run_key: string;
    user: string | null;
    uid: number | null;
    account: string | null;
    partition: string | null;
    name: string | null;
    array_job_id: string | null;
    array_task_id: string | null;
    state: string | null;
    exit_code: number | null;
    end_time: number | null;
    cluster: string | null;
  }
  interface BindingRow {
    job_id: string;
    run_key: string;
    gpu_uuid: string;
    end_time: number | null;
    source: string;
    closed_by: string | null;
    shared: number;
  }

  function q<T>(sql: string, ...args: unknown[]): T[] {
    const db = new Database(join(stateDir, 'l9gpu.db'), { readonly: true });
    try {
      return db.prepare(sql).all(...args) as T[];
    } finally {
      db.close();
    }
  }
  /** A job's run (its first, without run). */
  const job = (id: string, run?: string) =>
    (run === undefined
      ? q<JobRow>('SELECT * FROM jobs WHERE job_id = ? ORDER BY rowid LIMIT 1', id)
      : q<JobRow>('SELECT * FROM jobs WHERE job_id = ? AND run_key = ?', id, run))[0];
  const bindings = (id: string) => q<BindingRow>('SELECT * FROM bindings WHERE job_id = ? ORDER BY run_key, gpu_uuid', id);

  const pointsRead = new PointsFile(pointsFile);
  const points = (): JsonPoint[] => pointsRead.points();
  const jobPoints = (jobId: string, name = 'gpu.utilization') =>
    points().filter((p) => p.name === name && p.attributes['slurm.job.id'] === jobId);

  /**
   * A job script that runs until the test releases it (a flag file in the
   * test's folder, which the chroots see under the same /tmp), for a case that
   * waits for a job to end: not a fixed `sleep N` the test then waits out.
   */
  let gates = 0;
  function gate(): { script: string; release: () => void } {
    const flag = join(dir, `release-${++gates}`);
    return { script: `while [ ! -e '${flag}' ]; do sleep 0.1; done`, release: () => writeFileSync(flag, '') };
  }

  /** GRES indices of a running job on this node, as Slurm itself reports them. */
  async function gresIdx(jobId: string): Promise<number[]> {
    const out = await cluster.cmd(['scontrol', 'show', 'job', '-d', jobId]);
    // per GPU shard counts (24.11+: "shard:1(1/2,0/2,0/2,0/2)", the position is the GPU's index)
    const perGpu = /GRES=shard[^(]*\(((?:[\d-]+\/\d+,?)+)\)/.exec(out);
    if (perGpu) return perGpu[1]!.split(',').flatMap((c, i) => (c.split('/')[0] !== '-' && Number(c.split('/')[0]) > 0 ? [i] : []));
    const m = /GRES=(?:gpu|shard)[^(]*\(IDX:([\d,-]+)\)/.exec(out);
    assert.ok(m, out);
    return m[1]!.split(',').flatMap((r) => {
      const [a, b] = r.split('-').map(Number);
      return Array.from({ length: (b ?? a!) - a! + 1 }, (_, k) => a! + k);
    });
  }

  /** Waits until no job runs: cases that count the jobs on a GPU start from an idle node. */
  async function idle(): Promise<void> {
    await waitFor(
      'an idle cluster',
      async () => (await cluster.cmd(['squeue', '-h', '-t', 'R,CG,CF', '-o', '%A'])).trim() === '',
      60_000,
      200,
    );
  }

  /** Jobs with a step daemon on the node, as the reconciler's local source sees them. */
  async function stepsHere(): Promise<Set<string>> {
    const out = await cluster.cmd(['scontrol', 'listpids']).catch((e: Error & { stdout?: string; stderr?: string }) => {
      if (isNoSteps(`${e.message} ${e.stderr ?? ''}`)) return '';
      // the socket of a step daemon that died with an earlier case's slurmd is left until slurmd cleans it up:
      // scontrol says so and exits 1 after listing the live steps, which are what is asked here
      if (/Unable to connect to slurmstepd/.test(`${e.message} ${e.stderr ?? ''}`)) return e.stdout ?? '';
      throw e;
    });
    return parseListPids(out);
  }

  /**
   * The job's own processes as `scontrol listpids` names them, kept only when
   * the process's environment says it is the job's: proctrack/linuxproc
   * answers from a walk of /proc, and a pid it named was once, by the time
   * the case used it, another cluster's slurmscriptd (a pid taken again).
   */
  async function pidsOf(jobId: string): Promise<number[]> {
    const mine = (pid: number): boolean => {
      try {
        return readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(`SLURM_JOB_ID=${jobId}`);
      } catch {
        return false;
      }
    };
    return waitFor(`pids of ${jobId}`, async () => {
      const o = await cluster.cmd(['scontrol', 'listpids', jobId]).catch(() => '');
      const pids = o
        .split('\n')
        .slice(1)
        .map((l) => Number(l.trim().split(/\s+/)[0]))
        .filter((n) => n > 0 && mine(n));
      return pids.length ? pids : undefined;
    });
  }

  before(async () => {
    chmodSync(dir, 0o755); // users' l9gpu jobs read the store
    await vm.start();
    writeFileSync(
      configFile,
      `[daemon]
plugins = nvml
sinks = file, otlp
interval = 300ms
attribution = slurm
state_dir = ${stateDir}
[slurm]
reconcile_interval = 1s
reconcile_source = local
job_recheck = 5s
[nvml]
events = false
[file]
path = ${pointsFile}
resource = false
[otlp]
endpoint = ${vm.otlpEndpoint}
export_interval = 300ms
[jobs]
promql_url = ${vm.url}
summary_wait = 60s
`,
    );
    // slurmd's HealthCheckProgram: `l9gpu health --nhc --drain` while the health case switches it on (health-on)
    writeFileSync(
      healthCheck,
      `#!/bin/sh\n/usr/bin/env > '${dir}/healthcheck.env'\n[ -f '${dir}/health-on' ] || exit 0\n'${process.execPath}' ` +
        `'${CLI}' health --nhc --drain --config '${configFile}' >> '${dir}/healthcheck.log' 2>&1\n`,
      { mode: 0o755 },
    );
    // slurmctld's EpilogSlurmctld: the project's script, which starts the worker that stores the job's summary
    writeFileSync(
      ctldEpilog,
      `#!/bin/sh\nL9GPU_CONFIG='${configFile}' L9GPU_NODE='${process.execPath}' exec '${join(ROOT, 'slurm', 'ctld-epilog')}'\n`,
      { mode: 0o755 },
    );
    cluster = new SlurmCluster({
      gpus: 4,
      hookConfig: configFile,
      withDbd: true,
      release,
      extraConf: `HealthCheckProgram=${healthCheck}\nHealthCheckInterval=2\nEpilogSlurmctld=${ctldEpilog}`,
    });
    writeFileSync(configFile, readFileSync(configFile, 'utf8').replace('[slurm]\n', `[slurm]\nslurm_conf = ${cluster.conf}\n`));
    await cluster.start();
    daemon = new DaemonProcess(['--config', configFile], { ...fake.env(), ...cluster.clientEnv() });
    // the hooks turn GRES indices into UUIDs through the inventory the daemon writes
    await waitFor(
      'inventory of 4 GPUs',
      () => {
        try {
          return q<{ n: number }>('SELECT COUNT(*) AS n FROM gpus WHERE minor IS NOT NULL')[0]!.n === 4;
        } catch {
          return false;
        }
      },
      30_000,
    );
  });

  after(async () => {
    const code = await daemon?.stop();
    if (process.env.L9GPU_TEST_DAEMON_LOG) writeFileSync(process.env.L9GPU_TEST_DAEMON_LOG, daemon?.stderr ?? '');
    // the workers go whatever the cluster's stop says
    await cluster?.stop().catch((e: Error) => process.stderr.write(`# the cluster's stop: ${e.message}\n`));
    // the ctld-epilog worker still draining its queue (a job without GPU series waits 30 s): this cluster's
    // only (it runs with its config), the other releases' suites run at the same time
    const workers = spawnSync('pgrep', ['-f', `${ROOT}bin/run.js slurm ctld-epilog --worker`], { encoding: 'utf8' })
      .stdout.split('\n')
      .filter(Boolean);
    for (const pid of workers) {
      try {
        if (readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`L9GPU_CONFIG=${configFile}`))
          process.kill(Number(pid), 'SIGTERM');
      } catch {
        /* exited meanwhile */
      }
    }
    await vm.stop();
    assert.equal(code, 0, daemon?.stderr);
  });

  /**
   * The configless case holds a machine-wide lock (it links /run/slurm/conf, a fixed path): registered at another
   * place in each release's suite, so that the three suites side by side do not queue for it (22.05's, the
   * slowest suite, waited 56 s when all three reached it together). A Record of every release: a new one must be
   * given its place, or the suite does not compile.
   */
  const configlessCase = (): void => {
    test(
      L +
        'configless Slurm: slurmd fetches its config; told nothing, the hooks and the daemon find ' +
        'slurm.conf and gres.conf in /run/slurm/conf',
      async () => {
        await idle();
        // the daemon, and the hooks' configuration, told nothing about Slurm's files: no SLURM_CONF, no [slurm] slurm_conf
        assert.equal(await daemon.stop(), 0, daemon.stderr);
        const told = readFileSync(configFile, 'utf8');
        writeFileSync(configFile, told.replace(/^slurm_conf = .*\n/m, ''));
        const cache = await cluster.enterConfigless();
        const bare = { ...fake.env(), PATH: cluster.clientEnv().PATH! };
        let passed = false;
        try {
          assert.ok(readFileSync(join(cache, 'gres.conf'), 'utf8').includes('Name=gpu'), 'slurmctld sent gres.conf with slurm.conf');
          const mark = Date.now();
          daemon = new DaemonProcess(['--config', configFile], bare);
          const doc = await runCli(['doctor', '--config', configFile], bare);
          assert.match(
            doc.stdout,
            /slurm\.conf \/run\/slurm\/conf\/slurm\.conf; gres\.conf \/run\/slurm\/conf\/gres\.conf(?! \(not found)/,
          );
          const id = await cluster.sbatch(['--gres=gpu:1', '--wrap', 'sleep 15']);
          await cluster.waitState(id, ['RUNNING']);
          const want = (await gresIdx(id)).map(uuidOfGres);
          const b = await waitFor('bound by the prolog', () => (bindings(id)[0]?.source === 'prolog' ? bindings(id) : undefined));
          assert.deepEqual(
            b.map((x) => x.gpu_uuid),
            want,
            'GRES index -> UUID through the cached gres.conf',
          );
          // the reconciler asked Slurm through the cached slurm.conf: it confirmed the job (its name is not in the prolog's environment)
          await waitFor('the job name from Slurm', () => job(id)?.name === 'wrap');
          // the name is written mid-reconcile; the reconcile counts as done only after its sacct pass
          await waitFor(
            'a whole reconcile through the cached slurm.conf',
            () => Number(q<{ value: string }>(`SELECT value FROM meta WHERE key = 'reconcile.last_ok'`)[0]?.value) > mark,
          );
          assert.doesNotMatch(daemon.stderr, /Slurm query failed/);
          await cluster.cmd(['scancel', id]);
          await waitFor('closed by its epilog', () => bindings(id)[0]!.closed_by === 'epilog');
          passed = true;
        } finally {
          // a failure above is the one to see: a daemon stopped a moment after it was spawned exits by the signal
          const stopped = daemon;
          const code = await stopped.stop();
          writeFileSync(configFile, told);
          await cluster.leaveConfigless();
          daemon = new DaemonProcess(['--config', configFile], { ...fake.env(), ...cluster.clientEnv() });
          if (passed) assert.equal(code, 0, stopped.stderr);
        }
        await daemon.waitStderr(/l9gpu daemon started/);
      },
    );
  };

  test(L + 'sbatch --gres=gpu:2: the prolog binds both GPUs by UUID, every point carries slurm.*, the epilog closes them', async () => {
    const work = gate();
    const id = await cluster.sbatch(['--gres=gpu:2', '-J', 'train-llm', '--wrap', work.script]);
    await cluster.waitState(id, ['RUNNING']);
    const want = (await gresIdx(id)).map(uuidOfGres).sort();
    // a poll may bind the job while its prolog still runs (24.11+ show it RUNNING then); the prolog confirms it
    const b = await waitFor('2 bindings, confirmed by the prolog', () =>
      bindings(id).length === 2 && bindings(id).every((x) => x.source === 'prolog') ? bindings(id) : undefined,
    );
    assert.deepEqual(b.map((x) => x.gpu_uuid).sort(), want, 'GRES index -> /dev minor -> NVML UUID, not NVML index');
    const run = await cluster.runKey(id);
    assert.ok(
      b.every((x) => x.source === 'prolog' && x.end_time === null && x.run_key === run),
      `${JSON.stringify(b)}: run ${run}`,
    );
    const pts = await waitFor('points with the job name (filled by the reconciler)', () => {
      const p = jobPoints(id).filter((x) => x.attributes['slurm.job.name'] === 'train-llm');
      return new Set(p.map((x) => x.attributes['gpu.uuid'])).size === 2 ? p : undefined;
    });
    const a = pts[0]!.attributes;
    assert.equal(a['slurm.user'], 'root');
    assert.equal(a['slurm.partition'], 'gpu');
    assert.equal(a['slurm.account'], 'root');
    assert.equal(a['slurm.cluster.name'], 'ci');
    assert.deepEqual([...new Set(pts.map((x) => x.attributes['gpu.uuid']))].sort(), want);
    assert.equal(jobPoints(id, 'gpu.job.share').at(-1)!.value, 1, 'an exclusive GPU: share 1');

    work.release();
    await cluster.waitState(id, ['COMPLETED']);
    await waitFor('bindings closed by the epilog', () => bindings(id).every((x) => x.end_time !== null && x.closed_by === 'epilog'));
    await waitFor('state from sacct', () => job(id)?.state === 'COMPLETED');
    assert.equal(job(id)!.exit_code, 0);
    const ended = Math.max(...bindings(id).map((x) => x.end_time!));
    await waitFor('points without the job after it ended', () =>
      points().some(
        (p) =>
          p.name === 'gpu.utilization' &&
          p.attributes['gpu.uuid'] === want[0] &&
          Date.parse(p.time) > ended + 500 &&
          !('slurm.job.id' in p.attributes),
      ),
    );
  });

  test(L + 'NodeName is not the host name: the daemon learns it from the prologs; a name Slurm does not know closes nothing', async () => {
    // learned from the prologs, or from Slurm by NodeHostName (a systemd service never sees SLURMD_NODENAME)
    assert.equal(q<{ value: string }>(`SELECT value FROM meta WHERE key = 'slurm.node_name'`)[0]?.value, SLURM_NODE);
    const doc = await runCli(['doctor', '--config', configFile], { ...fake.env(), ...cluster.clientEnv() });
    assert.match(doc.stdout, new RegExp(`node ${SLURM_NODE} \\(from learned\\)`));
    await idle();
    // a wrong name for this node first, then a stale open binding (a job long gone whose epilog never ran here). A
    // reconcile reads the name as it starts: once one that started after the name's write has ended, every later one
    // has it; a binding written sooner could be closed by a reconcile that read the right name just before
    const rw = new Database(join(stateDir, 'l9gpu.db'), { timeout: 5000 });
    const named = Date.now();
    rw.prepare(`UPDATE meta SET value = 'not-this-node' WHERE key = 'slurm.node_name'`).run();
    await waitFor(
      'a whole reconcile begun after the wrong name',
      () => Number(q<{ value: string }>(`SELECT value FROM meta WHERE key = 'reconcile.last_ok'`)[0]?.value) > named,
    );
    const old = Date.now() - 3_600_000;
    rw.prepare(`INSERT INTO jobs (job_id, run_key, start_time, source, updated_at) VALUES ('777777', 'r0', ?, 'prolog', ?)`).run(old, old);
    rw.prepare(
      `INSERT INTO bindings (job_id, run_key, gpu_uuid, start_time, source, shared) VALUES ('777777', 'r0', ?, ?, 'prolog', 0)`,
    ).run(gpus[0]!.uuid, old);
    rw.close();
    await daemon.waitStderr(/this node's name in Slurm is not \\"not-this-node\\" \(Slurm knows no such node\)/, 30_000);
    assert.equal(bindings('777777')[0]!.end_time, null, 'nothing closed on the word of a name Slurm does not know');
    const down = await runCli(['doctor', '--config', configFile], { ...fake.env(), ...cluster.clientEnv() });
    assert.match(down.stdout, /last error .*Slurm knows no such node/);
    const fix = new Database(join(stateDir, 'l9gpu.db'), { timeout: 5000 });
    fix.prepare(`UPDATE meta SET value = ? WHERE key = 'slurm.node_name'`).run(SLURM_NODE);
    fix.close();
    await waitFor('the stale binding closed once the name is right', () => bindings('777777')[0]!.end_time !== null);
    const clean = new Database(join(stateDir, 'l9gpu.db'), { timeout: 5000 });
    for (const t of ['bindings', 'jobs']) clean.prepare(`DELETE FROM ${t} WHERE job_id = '777777'`).run();
    clean.close();
  });

  test(L + 'srun --gres=gpu:1 and a job submitted by a non-root user', async () => {
    const [srunRun, sbRun] = [gate(), gate()];
    const srun = cluster.srun(['--gres=gpu:1', '-J', 'srun-job', 'sh', '-c', srunRun.script]);
    const sb = await cluster.sbatch(['--gres=gpu:1', '--wrap', sbRun.script], TEST_USER);
    const srunId = await waitFor(
      'srun job in the store',
      () => q<{ job_id: string }>(`SELECT job_id FROM jobs WHERE name = 'srun-job'`)[0]?.job_id,
    );
    assert.equal(bindings(srunId).length, 1);
    await waitFor('user job bound', () => bindings(sb).length === 1);
    const u = job(sb)!;
    assert.equal(u.user, TEST_USER);
    assert.equal(u.uid, Number((await cluster.cmd(['id', '-u', TEST_USER])).trim()));
    await waitFor('the user on the points', () => jobPoints(sb).some((p) => p.attributes['slurm.user'] === TEST_USER));
    srunRun.release();
    sbRun.release();
    assert.equal(await srun, 0);
    await waitFor('srun binding closed', () => bindings(srunId).every((x) => x.end_time !== null));
  });

  test(L + 'two concurrent jobs on different GPUs: each GPU carries only its own job', async () => {
    const [j1, j2] = await Promise.all([
      cluster.sbatch(['--gres=gpu:1', '--wrap', 'sleep 5']),
      cluster.sbatch(['--gres=gpu:1', '--wrap', 'sleep 5']),
    ]);
    await Promise.all([cluster.waitState(j1, ['RUNNING']), cluster.waitState(j2, ['RUNNING'])]);
    const [u1] = (await gresIdx(j1)).map(uuidOfGres);
    const [u2] = (await gresIdx(j2)).map(uuidOfGres);
    assert.notEqual(u1, u2);
    await waitFor('points of both', () => jobPoints(j1).length > 0 && jobPoints(j2).length > 0);
    assert.ok(jobPoints(j1).every((p) => p.attributes['gpu.uuid'] === u1));
    assert.ok(jobPoints(j2).every((p) => p.attributes['gpu.uuid'] === u2));
    const gpusOut = JSON.parse(
      (await runCli(['gpus', '--json', '--config', configFile], { ...fake.env(), ...cluster.clientEnv() })).stdout,
    ) as { gpus: { uuid: string; jobs: Record<string, string>[] }[] };
    assert.deepEqual(
      gpusOut.gpus.find((g) => g.uuid === u1)!.jobs.map((j) => j['slurm.job.id']),
      [j1],
      'l9gpu gpus shows the job on its GPU',
    );
  });

  if (CONFIGLESS_AT[release] === 'early') configlessCase();

  test(L + 'a prolog that never ran: the reconciler opens the binding from squeue', async () => {
    const id = await cluster.sbatch(['--gres=gpu:1', '--wrap', 'sleep 20']);
    await cluster.waitState(id, ['RUNNING']);
    // the prolog done (24.11 shows the job RUNNING while its prolog runs: a poll may have opened it first)
    await waitFor('bound by the prolog', () => bindings(id).length === 1 && bindings(id)[0]!.source === 'prolog');
    // as if the prolog had failed: nothing about the job in the store
    const db = new Database(join(stateDir, 'l9gpu.db'));
    db.prepare('DELETE FROM bindings WHERE job_id = ?').run(id);
    db.prepare('DELETE FROM jobs WHERE job_id = ?').run(id);
    db.close();
    const b = await waitFor('reopened by polling', () => (bindings(id).length === 1 ? bindings(id)[0] : undefined));
    assert.equal(b.source, 'poll');
    assert.equal(b.gpu_uuid, (await gresIdx(id)).map(uuidOfGres)[0]);
    await cluster.cmd(['scancel', id]);
  });

  test(L + 'slurmctld down: sampling and the last known bindings go on, doctor says so; then it recovers', async () => {
    const id = await cluster.sbatch(['--gres=gpu:1', '--wrap', 'sleep 60']);
    await cluster.waitState(id, ['RUNNING']);
    await waitFor('bound', () => bindings(id).length === 1);
    // the batch step runs, so the prolog has told slurmctld it is done: a controller killed while slurmd still sends
    // that leaves 22.05's slurmd retrying it and starting later jobs without their prolog
    await pidsOf(id);
    const pid = Number(readFileSync(join(cluster.base, 'run', 'slurmctld.pid'), 'utf8'));
    // a query may have failed earlier (a step that ended while scontrol listpids ran): only a failure after the kill counts
    const killed = daemon.stderr.length;
    process.kill(pid, 'SIGTERM');
    await daemon.waitStderr(/Slurm query failed: keeping the last known bindings error="\S*\/(squeue|scontrol) /, 60_000, killed);
    const mark = Date.now();
    await waitFor('points still attributed', () => jobPoints(id).some((p) => Date.parse(p.time) > mark));
    assert.equal(bindings(id)[0]!.end_time, null, 'not closed because Slurm did not answer');
    const doc = await runCli(['doctor', '--config', configFile], { ...fake.env(), ...cluster.clientEnv() });
    assert.match(doc.stdout, /Slurm is not answering: the last known bindings are kept/);
    assert.match(doc.stdout, new RegExp(`open binding\\(s\\): .*job ${id}`));
    const restarted = daemon.stderr.length;
    await cluster.cmd(['slurmctld', '-f', cluster.conf]);
    await daemon.waitStderr(/Slurm answers again/, 60_000, restarted);
    await cluster.cmd(['scancel', id]);
    await waitFor('closed after recovery', () => bindings(id).every((x) => x.end_time !== null));
  });

  test(L + 'a cancelled job and a failing job: bindings closed, end state and exit code recorded', async () => {
    const c = await cluster.sbatch(['--gres=gpu:1', '--wrap', 'sleep 60']);
    const f = await cluster.sbatch(['--gres=gpu:1', '--wrap', 'sleep 1; exit 3']);
    await cluster.waitState(c, ['RUNNING']);
    await waitFor('bound', () => bindings(c).length === 1);
    await cluster.cmd(['scancel', c]);
    await waitFor('cancelled: closed', () => bindings(c).every((x) => x.end_time !== null));
    await waitFor('CANCELLED from sacct (the epilog sees 0:0 for a cancelled job)', () => job(c)?.state === 'CANCELLED', 30_000);
    await waitFor('failed job ended', () => job(f)?.end_time !== null && job(f)?.exit_code === 3);
    assert.equal(job(f)!.state, 'FAILED');
  });

  test(L + 'an array job: each task is its own job, the array ids are filled by the reconciler', async () => {
    const arr = await cluster.sbatch(['--array=0-1', '--gres=gpu:1', '--wrap', 'sleep 4']);
    // filled by a reconcile: three suites side by side on a small machine can take two of its passes and more
    const tasks = await waitFor(
      'two array tasks with array ids',
      () => {
        const rows = q<JobRow>('SELECT * FROM jobs WHERE array_job_id = ? ORDER BY array_task_id', arr);
        return rows.length === 2 ? rows : undefined;
      },
      30_000,
    );
    assert.deepEqual(
      tasks.map((t) => t.array_task_id),
      ['0', '1'],
    );
    for (const t of tasks) assert.equal(bindings(t.job_id).length, 1);
    await waitFor('array attributes on points', () =>
      points().some((p) => p.attributes['slurm.array.job.id'] === arr && p.attributes['slurm.array.task.id'] === '1'),
    );
  });

  test(L + 'two jobs sharing one GPU through shards: both bound, points per job, shares from per-process memory', async () => {
    await idle();
    const [s1, s2] = await Promise.all([
      cluster.sbatch(['--gres=shard:1', '--wrap', 'sleep 30']),
      cluster.sbatch(['--gres=shard:1', '--wrap', 'sleep 30']),
    ]);
    await Promise.all([cluster.waitState(s1, ['RUNNING']), cluster.waitState(s2, ['RUNNING'])]);
    const [g1] = (await gresIdx(s1)).map(uuidOfGres);
    const [g2] = (await gresIdx(s2)).map(uuidOfGres);
    assert.equal(g1, g2, 'Slurm put both shards on one GPU');
    await waitFor(
      'both bound to it, marked shared',
      () =>
        bindings(s1)
          .concat(bindings(s2))
          .filter((b) => b.gpu_uuid === g1 && b.shared === 1).length === 2,
    );
    await waitFor(
      'equal shares without process data',
      () => jobPoints(s1, 'gpu.job.share').at(-1)?.value === 0.5 && jobPoints(s2, 'gpu.job.share').at(-1)?.value === 0.5,
    );
    // NVML reports each job's process on the GPU: 3 GiB and 1 GiB
    const [p1] = await pidsOf(s1);
    const [p2] = await pidsOf(s2);
    const devices = gpus.map((g) =>
      g.uuid === g1
        ? {
            ...g,
            processes: [
              { pid: p1, used: 3 * 2 ** 30 },
              { pid: p2, used: 2 ** 30 },
            ],
          }
        : g,
    );
    fake.write({ ...fake.desc, devices });
    await waitFor(
      'shares by process memory',
      () => jobPoints(s1, 'gpu.job.share').at(-1)?.value === 0.75 && jobPoints(s2, 'gpu.job.share').at(-1)?.value === 0.25,
    );
    const util = points()
      .filter((p) => p.name === 'gpu.utilization' && p.attributes['gpu.uuid'] === g1)
      .slice(-2);
    assert.deepEqual(util.map((p) => p.attributes['slurm.job.id']).sort(), [s1, s2].sort(), 'one copy per job, same value');
    assert.equal(util[0]!.value, util[1]!.value);
    const proc = points()
      .filter((p) => p.name === 'gpu.process.memory.used' && p.attributes['process.pid'] === p1)
      .at(-1)!;
    assert.equal(proc.attributes['slurm.job.id'], s1, 'a process point belongs to the job owning the pid');
    fake.write({ ...fake.desc, devices: gpus });
    await cluster.cmd(['scancel', s1, s2]);
  });

  test(L + 'a process on a GPU outside its job allocation is reported', async () => {
    const k = await cluster.sbatch(['--gres=gpu:1', '--wrap', 'sleep 30']);
    await cluster.waitState(k, ['RUNNING']);
    const [mine] = (await gresIdx(k)).map(uuidOfGres);
    const other = gpus.find((g) => g.uuid !== mine)!.uuid;
    const [pid] = await pidsOf(k);
    // the job a process's environment names counts once the store knows it as that process's user's: from its prolog,
    // or from the reconciler where it polled the job first (under load, with three clusters at once)
    await waitFor(`job ${k} in the store, bound`, () => job(k) !== undefined && bindings(k).some((b) => b.end_time === null)).catch(
      (e: Error) => {
        throw new Error(
          `${e.message}: store
            ${JSON.stringify(q('SELECT job_id, run_key, uid, user, source, start_time, end_time FROM jobs WHERE job_id = ?', k))}, ` +
            `bindings ${JSON.stringify(bindings(k))}; ${cluster.logLines(k)}`,
        );
      },
    );
    fake.write({ ...fake.desc, devices: gpus.map((g) => (g.uuid === other ? { ...g, processes: [{ pid, used: 2 ** 30 }] } : g)) });
    await waitFor('outside_allocation = 1 on the other GPU', () =>
      points().some((p) => p.name === 'gpu.process.outside_allocation' && p.attributes['gpu.uuid'] === other && p.value === 1),
    );
    await daemon.waitStderr(new RegExp(`process on a GPU outside its allocation gpu=${other} pid=${pid} job=${k}`)).catch((e: Error) => {
      const read = (f: string) => {
        try {
          return readFileSync(`/proc/${pid}/${f}`, 'latin1');
        } catch (err) {
          return String(err);
        }
      };
      const said = {
        uid: /^Uid:.*$/m.exec(read('status'))?.[0],
        env: /SLURM_JOB_ID=\d+/.exec(read('environ'))?.[0],
        cgroup: read('cgroup').trim(),
        cmd: read('cmdline').replaceAll('\0', ' '),
      };
      throw new Error(
        `${e.message}\nprocess ${pid}: ${JSON.stringify(said)}; store:
          ${JSON.stringify(q('SELECT job_id, run_key, uid, user, source, start_time FROM jobs WHERE job_id = ?', k))};
            daemon's limits: ${daemon.stderr
              .split('\n')
              .filter((l) => l.includes('limit reached'))
              .join(' | ')}`,
      );
    });
    fake.write({ ...fake.desc, devices: gpus });
    await cluster.cmd(['scancel', k]);
  });

  test(L + 'a requeued job: same id, a new run; the old run is closed', async () => {
    const r = await cluster.sbatch(['--gres=gpu:1', '--requeue', '--wrap', 'sleep 30']);
    await cluster.waitState(r, ['RUNNING']);
    const run0 = await cluster.runKey(r);
    await waitFor('first run bound', () => bindings(r).some((b) => b.run_key === run0));
    await cluster.cmd(['scontrol', 'requeue', r]);
    // Slurm delays a requeued batch job's BeginTime once its epilog is done (REQUEUED -> PENDING): an update sent
    // before that is overwritten, so make it eligible again for as long as it is still pending
    await waitFor('requeued', async () => ['PENDING', 'REQUEUED'].includes(await cluster.state(r)));
    // slurmd refuses a credential of the job made in the second its old one was revoked ("Job credential revoked":
    // the new run is killed, FAILED): made eligible only from the second after the requeue on
    const requeuedAt = Date.now();
    await waitFor(
      'second run bound',
      async () => {
        if (Date.now() - requeuedAt > 2000 && (await cluster.state(r)) === 'PENDING')
          await cluster.cmd(['scontrol', 'update', `jobid=${r}`, 'starttime=now']);
        return bindings(r).some((b) => b.run_key !== run0 && b.end_time === null);
      },
      60_000,
    ).catch((e: Error) => {
      throw new Error(
        `${e.message}; runs ${JSON.stringify(q('SELECT run_key, end_time, state, source FROM jobs WHERE job_id = ?', r))}, ` +
          `bindings ${JSON.stringify(bindings(r))}; ${cluster.logLines(r)}`,
      );
    });
    const run1 = await cluster.runKey(r);
    assert.notEqual(run1, run0);
    // slurmd runs the first run's epilog with the restart count already bumped: it closes that run, not a closed
    // second one; when it comes after the new run's prolog (seen under load), the prolog closed the first run and the
    // reconciler reopens the new run that late epilog closed
    assert.ok(
      bindings(r)
        .filter((b) => b.run_key === run0)
        .every((b) => b.end_time !== null && ['epilog', 'requeue'].includes(b.closed_by!)),
      'the first run closed',
    );
    assert.equal(bindings(r).filter((b) => b.run_key === run1).length, 1);
    assert.equal(job(r, run0)!.end_time !== null, true);
    assert.ok(job(r, run1), 'the new run is its own row');
    await waitFor('points carry the running job', () => jobPoints(r).length > 0);
    await cluster.cmd(['scancel', r]);
  });

  interface Fig {
    samples: number;
    seconds: number;
    gpu_hours: number;
    util_mean: number | null;
    util_max: number | null;
    mem_used_max: number | null;
    energy_j: number;
    energy_source: string;
    power_mean: number | null;
    share_mean: number;
  }
  interface Report {
    source: string;
    job: { id: string; user: string; state: string; nodes: string[] };
    gpus: { uuid: string; node: string; shared: boolean; figures: Fig }[];
    totals: { gpu_hours: number; util_mean: number | null; energy_j: number; mem_peak_bytes: number | null };
    notes: { code: string }[];
    efficiency?: EfficiencySection | null;
  }
  const show = async (id: string, extra: string[] = []): Promise<Report> => {
    const r = await runCli(['jobs', 'show', id, '--json', '--config', configFile, ...extra], { ...fake.env(), ...cluster.clientEnv() });
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout) as Report;
  };
  /**
   * The job's report from VictoriaMetrics once it has every sample the store has: the
   * samples of the last ticks may still be on their way (an export a tick, a flush),
   * and a count alone once matched while a sample at each end differed (26.05, under
   * load). The last report read is returned when they never agree, for the caller's
   * deepEqual to show how they differ.
   */
  const promqlLike = async (id: string, store: Report): Promise<Report> => {
    let last: Report | undefined;
    const figures = (x: Report) => x.gpus.map((g) => [g.uuid, g.figures]);
    return waitFor(`PromQL report of ${id} with the store's figures`, async () => {
      await vm.flush();
      const pr = await show(id, ['--source', 'promql', '--url', vm.url]).catch(() => undefined);
      if (pr) last = pr;
      return pr && isDeepStrictEqual(figures(pr), figures(store)) ? pr : undefined;
    }).catch((e: Error) => last ?? assert.fail(e.message));
  };

  test(
    L + 'l9gpu jobs: exact figures for a 2-GPU job with an idle GPU, two concurrent jobs and a shared GPU; PromQL agrees with the store',
    async () => {
      await idle();
      const multi = await cluster.sbatch(['--gres=gpu:2', '-J', 'two-gpus', '--wrap', 'sleep 6']);
      // one job of a user's own: the case's checks of who sees what need no earlier case's jobs
      const single = await cluster.sbatch(['--gres=gpu:1', '--wrap', 'sleep 6'], TEST_USER);
      const [sh1, sh2] = await Promise.all([
        cluster.sbatch(['--gres=shard:1', '--wrap', 'sleep 6']),
        cluster.sbatch(['--gres=shard:1', '--wrap', 'sleep 6']),
      ]);
      const ids = [multi, single, sh1, sh2];
      await Promise.all(ids.map((j) => cluster.waitState(j, ['RUNNING'])));
      const idx = Object.fromEntries(await Promise.all(ids.map(async (j) => [j, await gresIdx(j)] as const)));
      await Promise.all(ids.map((j) => cluster.waitState(j, ['COMPLETED'], 60_000)));
      await waitFor('bindings closed', () => ids.every((j) => bindings(j).every((b) => b.end_time !== null)));
      // the epilog cannot tell COMPLETED from CANCELLED: the state comes from sacct a few seconds later
      await waitFor('states from sacct', () => ids.every((j) => job(j)?.state === 'COMPLETED'), 30_000);

      for (const j of ids) {
        const r = await show(j);
        assert.equal(r.source, 'store');
        assert.equal(r.job.id, j);
        assert.equal(r.job.state, 'COMPLETED');
        assert.equal(r.gpus.length, idx[j]!.length);
        for (const g of r.gpus) {
          const minor = MINORS[gpus.findIndex((x) => x.uuid === g.uuid)]!;
          const f = g.figures;
          assert.ok(f.samples >= 10, `${j}: ${f.samples} samples`);
          assert.equal(f.util_mean, UTIL[minor]! / 100, 'mean utilization of a constant 0..1 value');
          assert.equal(f.util_max, UTIL[minor]! / 100);
          assert.equal(f.mem_used_max, MEM[minor], 'peak memory');
          assert.equal(f.power_mean, WATTS[minor], 'power mean, W');
          assert.equal(f.energy_source, 'counter');
          // energy = the delta of the counter values the daemon exported for this job and GPU, times the share
          const counter = points().filter(
            (pt) => pt.name === 'gpu.energy.consumption' && pt.attributes['slurm.job.id'] === j && pt.attributes['gpu.uuid'] === g.uuid,
          );
          assert.equal(counter.length, f.samples, 'one counter value per sample of the binding');
          // each gap's counter delta counts at the share the job had at the sample closing it (a shard job's share
          // is 1 until the second shard job is bound, then 0.5: the total delta x the mean share is not the same)
          const shareAt = new Map(
            points()
              .filter((pt) => pt.name === 'gpu.job.share' && pt.attributes['slurm.job.id'] === j && pt.attributes['gpu.uuid'] === g.uuid)
              .map((pt) => [pt.time, pt.value]),
          );
          let delta = 0;
          for (let i = 1; i < counter.length; i++) delta += (counter[i]!.value - counter[i - 1]!.value) * shareAt.get(counter[i]!.time)!;
          assert.ok(Math.abs(f.energy_j - delta) < 1e-3, `${j}: energy ${f.energy_j} J, counter deltas x shares ${delta} J`);
          // and physically: the counter grows at the GPU's power (read a few ms after each sample, so not exactly) over
          // the samples' own gaps, at each gap's share; not over f.seconds, which caps a gap of more than 2.5 intervals
          // (a tick late on a loaded machine: 780 J against 646 J once) where the counter counts the whole gap
          let physical = 0;
          for (let i = 1; i < counter.length; i++)
            physical +=
              (WATTS[minor]! * (Date.parse(counter[i]!.time) - Date.parse(counter[i - 1]!.time)) * shareAt.get(counter[i]!.time)!) / 1000;
          assert.ok(Math.abs(f.energy_j - physical) <= 0.15 * physical, `${j}: energy ${f.energy_j} J, power x time ${physical} J`);
          assert.ok(f.seconds > 4 && f.seconds < 10, `${j}: ${f.seconds} s sampled of a 6 s job`);
          // the report rounds seconds (ms) and the share (6 places) on their own: recomputed from them, GPU-hours may differ in the last
          // place
          assert.ok(
            Math.abs(f.gpu_hours - (f.seconds * f.share_mean) / 3600) <= 1.5e-6,
            `GPU-hours = sampled seconds x share: ${f.gpu_hours} vs ${f.seconds} s x ${f.share_mean}`,
          );
        }
        // the same job from the metrics the daemon exported to VictoriaMetrics
        const p = await promqlLike(j, r);
        assert.equal(p.source, 'promql');
        assert.deepEqual(
          p.gpus.map((g) => [g.uuid, g.figures]),
          r.gpus.map((g) => [g.uuid, g.figures]),
          `${j}: store and PromQL give the same figures`,
        );
        assert.deepEqual(p.totals, r.totals);
        assert.deepEqual(p.job.nodes, [NODE]);
        // the Efficiency section: the fake H100s' GPM (SM activity 70 %, DRAM 55 %, on every GPU), the same from PromQL
        const e = r.efficiency!;
        assert.equal(e.gpus_with_gpm, r.gpus.length, `${j}: every GPU has GPM`);
        assert.deepEqual(
          [e.job.means!.sm_active, e.job.means!.dram_active, e.job.means!.tensor_active, e.job.class],
          [0.7, 0.55, 0.4, 'memory-bound'],
        );
        assert.deepEqual(p.efficiency, e, `${j}: store and PromQL give the same Efficiency section`);
      }
      const m = await show(multi);
      const idleGpu = m.gpus.find((g) => g.figures.util_max === 0);
      assert.ok(idleGpu, 'the 2-GPU job got the idle GPU (GRES index 1)');
      assert.equal(m.totals.util_mean, (UTIL[idx[multi]![0]!]! + UTIL[idx[multi]![1]!]!) / 200);
      assert.ok(
        m.notes.some((n) => n.code === 'too-short'),
        'a 6 s job is too short to judge',
      );
      const s1 = await show(sh1);
      assert.equal(s1.gpus[0]!.shared, true);
      // two jobs on one GPU, no process data: half each while both are bound; a shard job alone on it (before the
      // other one's prolog, or after its epilog: under load the two ends are ticks apart) has the whole GPU then.
      // The mean is over the shares the daemon exported for it.
      const shareTimes = (id: string) =>
        points()
          .filter((pt) => pt.name === 'gpu.job.share' && pt.attributes['slurm.job.id'] === id)
          .map((pt) => [Date.parse(pt.time), pt.value] as const);
      const s1Points = shareTimes(sh1);
      const s2Times = shareTimes(sh2).map(([t]) => t);
      const s1Shares = s1Points.map(([, v]) => v);
      const alone = ([t]: readonly [number, number]) => t < Math.min(...s2Times) || t > Math.max(...s2Times);
      assert.ok(
        s1Points.every((x) => (alone(x) ? x[1] === 1 : x[1] === 0.5)) && s1Shares.includes(0.5),
        `${sh1}: shares ${s1Shares.join(',')}; ${sh2}'s from ${new Date(Math.min(...s2Times)).toISOString()} ` +
          `to ${new Date(Math.max(...s2Times)).toISOString()}`,
      );
      assert.equal(s1.gpus[0]!.figures.share_mean, Math.round((s1Shares.reduce((a, b) => a + b, 0) / s1Shares.length) * 1e6) / 1e6);
      assert.ok(s1.notes.some((n) => n.code === 'shared'));
      // the job-end summary was exported once, with the store's figures
      const summary = await waitFor('job-end summary', () =>
        points().find((pt) => pt.name === 'gpu.job.energy' && pt.attributes['slurm.job.id'] === single),
      );
      assert.equal(summary.value, (await show(single)).gpus[0]!.figures.energy_j);

      // the list, filters and formats
      const list = JSON.parse(
        (await runCli(['jobs', '--json', '--config', configFile, '--state', 'completed', '--since', '1h'], { SLURM_CONF: cluster.conf }))
          .stdout,
      ) as { id: string; gpus: number; util_mean: number; energy_kwh: number; problems: string[] }[];
      const row = list.find((x) => x.id === multi)!;
      assert.equal(row.gpus, 2);
      assert.equal(row.util_mean, m.totals.util_mean);
      assert.equal(row.energy_kwh, Math.round((m.totals.energy_j / 3.6e6) * 1e6) / 1e6);
      const csv = (await runCli(['jobs', '--csv', '--config', configFile, '--limit', '3'], { SLURM_CONF: cluster.conf })).stdout
        .trim()
        .split('\n');
      assert.equal(
        csv[0],
        'id,user,account,partition,state,start,elapsed_s,gpus,gpu_hours,idle_gpu_hours,util_mean,' +
          'mem_peak_bytes,energy_kwh,cost,co2e_g,problems',
      );
      assert.equal(csv.length, 4);
      const text = (await runCli(['jobs', 'show', multi, '--config', configFile], { SLURM_CONF: cluster.conf })).stdout;
      assert.match(text, new RegExp(`^Job ${multi} \\(two-gpus\\)`));
      assert.match(text, /GPU utilization\s+\[\|+\s*\]\s+\d+%/);
      assert.match(text, /Per GPU/);
      assert.doesNotMatch(text, /\x1b\[/, 'no colours when not a TTY');
      const unknown = await runCli(['jobs', 'show', '999999', '--config', configFile], cluster.clientEnv());
      assert.equal(unknown.status, 1);
      assert.match(
        unknown.stderr,
        new RegExp(
          String.raw`job 999999 is not known to this node .*; Slurm accounting does not know it .*; ` +
            String.raw`no GPU metrics of job 999999 at http:\/\/127\.0\.0\.1:\d+ `,
        ),
      );
      // root sees everyone; a user sees their own jobs only, and not someone else's report
      const all = JSON.parse((await runCli(['jobs', '--json', '--config', configFile], {})).stdout) as { user: string }[];
      assert.ok(new Set(all.map((x) => x.user)).size >= 2, 'root sees every user');
      const asUser = (args: string[]) =>
        spawnSync('runuser', ['-u', TEST_USER, '--', process.execPath, CLI, ...args, '--config', configFile], { encoding: 'utf8' });
      const theirs = asUser(['jobs', '--json']);
      assert.equal(theirs.status, 0, theirs.stderr);
      const rows = JSON.parse(theirs.stdout) as { user: string }[];
      assert.ok(rows.length >= 1 && rows.every((x) => x.user === TEST_USER), 'only their own jobs');
      const denied = asUser(['jobs', 'show', multi]);
      assert.equal(denied.status, 1);
      // PrivateData=jobs: neither the owner nor where else to look
      assert.equal(denied.stderr, `l9gpu: job ${multi} is not yours\n`);
      assert.equal(asUser(['jobs', '--user', 'root']).status, 1);
    },
  );

  test(L + 'a store locked by another writer: the prolog gives up within its deadline, the job runs, polling binds it after', async () => {
    await idle();
    const holder = new Database(join(stateDir, 'l9gpu.db'), { timeout: 10_000 });
    holder.prepare('BEGIN IMMEDIATE').run();
    let id = '';
    try {
      const t0 = Date.now();
      id = await cluster.sbatch(['--gres=gpu:1', '--wrap', 'sleep 20']);
      await cluster.waitState(id, ['RUNNING']);
      const line = await waitFor('the prolog said why', () =>
        readFileSync(join(stateDir, 'hooks.log'), 'utf8')
          .split('\n')
          .find((l) => l.includes(`l9gpu prolog job ${id}: database is locked`)),
      );
      // the hook's deadline is [slurm] hook_timeout (5 s), counted from its process's start: it gave up by itself
      // within it (the wrapper's kill one second later leaves no such line), however long Slurm took to start it
      const ran = Number(/\(after (\d+) ms of 5 s\)$/.exec(line)?.[1] ?? NaN);
      assert.ok(ran >= 4000 && ran < 6000, `${line}: ${Date.parse(line.slice(0, 24)) - t0} ms after sbatch`);
      assert.equal(await cluster.state(id), 'RUNNING', 'the node is not drained, the job runs');
    } finally {
      holder.prepare('ROLLBACK').run();
      holder.close();
    }
    const b = await waitFor('bound by polling once the lock is gone', () => bindings(id)[0]);
    assert.equal(b.source, 'poll');
    assert.equal(b.gpu_uuid, (await gresIdx(id)).map(uuidOfGres)[0]);
    await cluster.cmd(['scancel', id]);
  });

  /** Edits the running daemon's configuration file and reloads it (SIGHUP), as an admin would. */
  async function reloadConfig(edit: (text: string) => string): Promise<void> {
    const reloads = () => daemon.stderr.match(/configuration reloaded/g)?.length ?? 0;
    const n = reloads();
    writeFileSync(configFile, edit(readFileSync(configFile, 'utf8')));
    daemon.child.kill('SIGHUP');
    await waitFor('configuration reloaded', () => reloads() > n);
  }

  /** Sets (or, with null, removes) a [slurm] key of the running daemon by a configuration reload. */
  function reloadSlurm(key: string, value: string | null): Promise<void> {
    return reloadConfig((t) => {
      const text = t.replace(new RegExp(`^${key} = .*\\n`, 'm'), '');
      return value === null ? text : text.replace('[slurm]\n', `[slurm]\n${key} = ${value}\n`);
    });
  }
  const reconcileFrom = (source: 'local' | 'squeue'): Promise<void> => reloadSlurm('reconcile_source', source);

  test(
    L +
      'reconcile_source = squeue (the whole queue): a job polled before its prolog ends gets one ' +
      "run, one binding, the prolog's key (26.05: the SLUID from squeue)",
    async () => {
      await idle();
      await reconcileFrom('squeue');
      cluster.slowHook('prolog', 4);
      let id = '';
      try {
        id = await cluster.sbatch(['--gres=gpu:1', '--wrap', 'sleep 10']);
        // the reconciler polls every second while the prolog sleeps: it binds the job first
        const first = await waitFor('bound', () => bindings(id)[0], 30_000);
        assert.equal(first.source, 'poll', 'opened by polling while the prolog still ran');
      } finally {
        cluster.slowHook('prolog', 0);
      }
      try {
        await waitFor('confirmed by the prolog', () => bindings(id)[0]?.source === 'prolog', 30_000);
        const run = await cluster.runKey(id);
        assert.deepEqual(
          q<{ run_key: string }>('SELECT run_key FROM jobs WHERE job_id = ?', id).map((r) => r.run_key),
          [run],
          "no phantom run beside the prolog's",
        );
        assert.deepEqual(
          bindings(id).map((b) => b.run_key),
          [run],
        );
        await cluster.cmd(['scancel', id]);
      } finally {
        await reconcileFrom('local');
      }
    },
  );

  test(
    L + 'a job found by polling before any hook recorded it is keyed as its prolog would key it (26.05: the SLUID from scontrol)',
    async () => {
      await idle();
      const id = await cluster.sbatch(['--gres=gpu:1', '--wrap', 'sleep 20']);
      await cluster.waitState(id, ['RUNNING']);
      await waitFor('bound by the prolog', () => bindings(id)[0]?.source === 'prolog');
      const db = new Database(join(stateDir, 'l9gpu.db'));
      for (const t of ['bindings', 'jobs']) db.prepare(`DELETE FROM ${t} WHERE job_id = ?`).run(id);
      db.close();
      const b = await waitFor('reopened by polling', () => bindings(id)[0]);
      assert.equal(b.source, 'poll');
      assert.equal(b.run_key, await cluster.runKey(id));
      await cluster.cmd(['scancel', id]);
      await waitFor('closed by its epilog, in the same run', () => bindings(id).length === 1 && bindings(id)[0]!.closed_by === 'epilog');
    },
  );

  test(L + 'a COMPLETING job still holds its GPU until its epilog ends: polling does not close it', async () => {
    await idle();
    // older than the reconciler's grace when it starts completing, so only the COMPLETING state keeps it open
    // (a grace of 3 s rather than the default 30 s: the same case, 27 s sooner)
    await reloadSlurm('reconcile_grace', '3s');
    const id = await cluster.sbatch(['--gres=gpu:1', '--wrap', 'sleep 5']);
    await cluster.waitState(id, ['RUNNING']);
    await waitFor('bound', () => bindings(id).length === 1);
    cluster.slowHook('epilog', 8);
    try {
      await cluster.waitState(id, ['COMPLETING'], 60_000);
      const squeue = JSON.parse(await cluster.cmd(['squeue', '--json'])) as { jobs: { job_id: unknown; job_state: unknown }[] };
      const shown = squeue.jobs.find((j) => JSON.stringify(j.job_id).includes(id))?.job_state;
      const mark = Date.now();
      // several reconciles (1 s apart) while Slurm shows it completing
      await waitFor('points attributed while completing', () => jobPoints(id).some((p) => Date.parse(p.time) > mark + 3000), 15_000);
      assert.equal(bindings(id)[0]!.end_time, null, `still open while squeue shows ${JSON.stringify(shown)}`);
    } finally {
      cluster.slowHook('epilog', 0);
      await reloadSlurm('reconcile_grace', null);
    }
    await waitFor('closed by its epilog', () => bindings(id)[0]!.end_time !== null, 30_000);
    assert.equal(bindings(id)[0]!.closed_by, 'epilog');
  });

  test(L + 'slurmd killed while a job runs: no epilog, the reconciler closes the binding', async () => {
    const k = await cluster.sbatch(['--gres=gpu:1', '--no-requeue', '--wrap', 'sleep 120']);
    await cluster.waitState(k, ['RUNNING']);
    await waitFor('bound', () => bindings(k).length === 1);
    cluster.killSlurmd();
    await cluster.cmd(['scontrol', 'update', `nodename=${SLURM_NODE}`, 'state=down', 'reason=l9gpu-test']);
    await waitFor('closed by polling', () => bindings(k).every((b) => b.end_time !== null && b.closed_by === 'poll'), 60_000);
    await waitFor('NODE_FAIL from sacct', () => job(k)?.state === 'NODE_FAIL', 30_000);
    await cluster.restartSlurmd();
  });

  if (CONFIGLESS_AT[release] === 'middle') configlessCase();

  test(
    L + "an inference engine inside a job: its points carry the job (slurm.*, from the listening process) and the job's GPUs (gpu.uuids)",
    async () => {
      await idle();
      const port = await freePort();
      const page = join(ROOT, 'plugins', 'vllm', 'testdata', 'vllm-datadog-fixture-mixed-0.4-to-0.11', 'page.prom');
      const id = await cluster.sbatch([
        '--gres=gpu:1',
        '-J',
        'serve-llm',
        '--wrap',
        `exec ${process.execPath} ${join(ROOT, 'test', 'fixtures', 'engine-server.mjs')} ${port} ${page}`,
      ]);
      await cluster.waitState(id, ['RUNNING']);
      const gpus = await waitFor('bound', () => (bindings(id).length === 1 ? bindings(id).map((b) => b.gpu_uuid) : undefined));
      // the node's daemon scrapes the engine too, from a reload (one daemon per state folder: a second is refused),
      // once the reconciler has the job's name from Slurm (a prolog's environment has none)
      await waitFor('the job name from Slurm', () => job(id)?.name === 'serve-llm' || undefined, 30_000);
      const before = readFileSync(configFile, 'utf8');
      await reloadConfig(
        (t) => `${t.replace('plugins = nvml\n', 'plugins = nvml, vllm\n')}[vllm]\nendpoints = http://127.0.0.1:${port}/metrics\n`,
      );
      let pts: JsonPoint[];
      try {
        pts = await waitFor(
          'vllm points with the job',
          () => {
            // the job's name from the attribution's next look at the store, after the reconciler wrote it there: the first
            // scrapes after the reload may carry the job without it yet, as the GPU series do after a prolog
            const p = points().filter(
              (x) =>
                x.name === 'vllm.tokens.prompt' && x.attributes['slurm.job.id'] === id && x.attributes['slurm.job.name'] === 'serve-llm',
            );
            // three scrapes: the report's serving time spans them
            return p.length >= 3 ? p : undefined;
          },
          20_000,
        );
      } finally {
        await cluster.cmd(['scancel', id]);
        await reloadConfig(() => before);
      }
      const a = pts[0]!.attributes;
      assert.equal(a['slurm.partition'] !== undefined, true);
      assert.equal(a['gpu.uuids'], gpus.join(','));
      assert.equal(typeof a['process.pid'], 'number');
      assert.equal(a['server.port'], port);
      // and in the backend, over OTLP: the series carries the job
      await vm.flush();
      const exported = await waitFor(
        'the engine series in VictoriaMetrics',
        async () => {
          // this VictoriaMetrics keeps OTLP's names and attribute keys (no Prometheus naming)
          const r = (await vm.exportRaw('{__name__="vllm.tokens.prompt"}')).filter((x) => x.metric['slurm.job.id'] === id);
          return r.length ? r : undefined;
        },
        15_000,
      );
      assert.equal(exported[0]!.metric['gpu.uuids'], gpus.join(','));
      assert.equal(exported[0]!.metric['slurm.job.name'], 'serve-llm');
      await waitFor('closed by its epilog', () => bindings(id).every((b) => b.end_time !== null));
      // the job's report: what its engine served, the page counted whole (the engine's process was the job's)
      const show = JSON.parse(
        (await runCli(['jobs', 'show', id, '--json', '--config', configFile], { SLURM_CONF: cluster.conf })).stdout,
      ) as JobReport;
      const inf = show.inference!;
      assert.deepEqual(inf.engines, [{ engine: 'vllm', endpoint: `127.0.0.1:${port}`, model: 'facebook/opt-125m' }]);
      assert.deepEqual([inf.requests, inf.prompt_tokens, inf.generation_tokens], [1, 5, 7]);
      // by hand from the page: TTFT 1 request in (0.25, 0.5]: 0.25 + 0.25 x 0.5, x 0.95; ITL (the current name,
      // not time_per_output_token) 141 in (0, 0.01], 3 in (0.01, 0.1]: 0.01 x 72/141, 0.01 x 136.8/141
      assert.deepEqual([inf.ttft_p50_s, inf.ttft_p95_s, inf.itl_p50_s, inf.itl_p95_s], [0.375, 0.4875, 0.005106, 0.009702]);
      // serving_s is rounded to the ms: tokens/s within that
      assert.ok(
        inf.serving_s > 0 && Math.abs(inf.tokens_per_s! - 7 / inf.serving_s) <= 0.001 + (7 / inf.serving_s) * 0.001,
        JSON.stringify(inf),
      );
      const j = show.totals.energy_j ?? 0;
      assert.equal(inf.tokens_per_j, j > 0 ? Math.round((7 / j) * 1e6) / 1e6 : null);
    },
  );

  test(
    L +
      'HealthCheckProgram runs l9gpu health --nhc --drain: a lost GPU drains the node with the ' +
      'reason, its return resumes it; a node an admin drained stays drained',
    async () => {
      await idle();
      const nodeState = async () => parseNodeState(await cluster.cmd(['scontrol', 'show', 'node', '-o', SLURM_NODE]));
      const checks = () => (existsSync(join(dir, 'healthcheck.log')) ? readFileSync(join(dir, 'healthcheck.log'), 'utf8') : '');
      const lost = MINORS.indexOf(1); // NVML index of GRES GPU 1
      writeFileSync(join(dir, 'health-on'), '');
      try {
        fake.write({ ...fake.desc, devices: gpus.map((g, k) => (k === lost ? { ...g, lost: true } : g)) });
        const drained = await waitFor(
          'the node drained by its health check',
          async () => {
            const st = await nodeState();
            return isDrained(st) && st.reason?.startsWith('l9gpu:') ? st : undefined;
          },
          60_000,
          300,
        ).catch(async (e: Error) => {
          throw new Error(
            `${e.message}: ${JSON.stringify(await nodeState())}; health checks: ${checks().split('\n').slice(-3).join(' | ')}`,
          );
        });
        assert.match(
          drained.reason!,
          new RegExp(
            `^l9gpu: GPU ${lost} \\(${gpus[lost]!.uuid.slice(0, 12)}\\) failed: the driver reports the GPU lost: it fell off the bus`,
          ),
        );
        // slurmd's environment names the node: the check drained this node by its Slurm name, not the host's
        assert.match(readFileSync(join(dir, 'healthcheck.env'), 'utf8'), new RegExp(`^SLURMD_NODENAME=${SLURM_NODE}$`, 'm'));
        fake.write({ ...fake.desc, devices: gpus });
        await waitFor('the node resumed by its health check', async () => !isDrained(await nodeState()) || undefined, 60_000, 300);
        assert.match(checks(), new RegExp(`l9gpu: drained ${SLURM_NODE}\n`));
        assert.match(checks(), new RegExp(`l9gpu: resumed ${SLURM_NODE}\n`));
        // an admin's drain is not l9gpu's to lift: two healthy checks later the node is still drained
        await cluster.cmd(['scontrol', 'update', `NodeName=${SLURM_NODE}`, 'State=DRAIN', 'Reason=disk swap']);
        const okLines = () =>
          checks()
            .split('\n')
            .filter((l) => l === 'l9gpu: 4 GPU(s) ok').length;
        const before = okLines();
        await waitFor("two healthy checks after the admin's drain", () => okLines() >= before + 2 || undefined, 30_000, 300);
        const st = await nodeState();
        assert.ok(isDrained(st), st.state);
        assert.equal(st.reason, 'disk swap');
      } finally {
        rmSync(join(dir, 'health-on'), { force: true });
        fake.write({ ...fake.desc, devices: gpus });
        if (isDrained(await nodeState())) await cluster.cmd(['scontrol', 'update', `NodeName=${SLURM_NODE}`, 'State=RESUME']);
      }
    },
  );

  test(
    L +
      "EpilogSlurmctld keeps a finished 2-GPU job's summary in its AdminComment: jobs show on a " +
      "machine without the store reports the node's figures from sacct alone, with the Slurm " +
      'header, after the metrics backend is wiped',
    async () => {
      await idle();
      const id = await cluster.sbatch(['--gres=gpu:2', '-J', 'kept', '-t', '30', '--wrap', 'sleep 3']);
      await cluster.waitState(id, ['COMPLETED'], 60_000);
      await waitFor('bindings closed', () => bindings(id).length === 2 && bindings(id).every((b) => b.end_time !== null));
      await waitFor('state from sacct', () => job(id)?.state === 'COMPLETED', 30_000);
      const onNode = await show(id);
      assert.equal(onNode.source, 'store');
      const comment = await waitFor(
        'the summary in AdminComment',
        async () => {
          const out = (await cluster.cmd(['sacct', '-j', id, '-X', '-n', '-P', '-o', 'AdminComment'])).trim();
          return /^L9G1:/i.test(out) ? out : undefined;
        },
        120_000,
        1000,
      ).catch((e: Error) => {
        throw new Error(`${e.message}; ctld-epilog.log: ` + tail(join(stateDir, 'ctld-epilog.log'), 600));
      });
      assert.ok(comment.length < 6000, `${comment.length} characters for 2 GPUs`);
      // the metrics backend loses everything: a new, empty VictoriaMetrics on the same port
      await vm.stop();
      await vm.start({ port: vm.port });
      // a login node: another state folder (no store, no daemon), no metrics backend configured
      const login = join(dir, 'login.ini');
      writeFileSync(login, `[daemon]\nstate_dir = ${join(dir, 'login-state')}\n[slurm]\nslurm_conf = ${cluster.conf}\n`);
      const r = await runCli(['jobs', 'show', id, '--json', '--config', login], cluster.clientEnv());
      assert.equal(r.status, 0, r.stderr);
      const fromAcct = JSON.parse(r.stdout) as Report & {
        job: Report['job'] & {
          cpus: number | null;
          time_limit_s: number | null;
          qos: string | null;
          cluster: string | null;
          exit_code: number | null;
          gpus_alloc: number | null;
          name: string | null;
        };
      };
      assert.equal(fromAcct.source, 'sacct');
      assert.deepEqual(
        fromAcct.gpus.map((g) => [g.uuid, g.figures]),
        onNode.gpus.map((g) => [g.uuid, g.figures]),
        "the node's figures, GPU by GPU",
      );
      assert.deepEqual(fromAcct.totals, onNode.totals);
      assert.equal(fromAcct.job.state, 'COMPLETED');
      assert.equal(fromAcct.job.exit_code, 0);
      assert.equal(fromAcct.job.name, 'kept');
      assert.equal(fromAcct.job.cluster, 'ci');
      assert.equal(fromAcct.job.qos, 'normal');
      assert.equal(fromAcct.job.time_limit_s, 1800);
      assert.equal(fromAcct.job.gpus_alloc, 2);
      assert.ok((fromAcct.job.cpus ?? 0) >= 1);
      // the notes are worked out again from the kept figures and sacct's header: the node's report's, word for word
      assert.deepEqual(fromAcct.notes, onNode.notes);
      // and the Efficiency section, from the GPM means the summary keeps
      assert.equal(onNode.efficiency!.gpus_with_gpm, 2);
      assert.deepEqual(fromAcct.efficiency, onNode.efficiency);
      assert.ok(
        fromAcct.notes.some((n) => n.code === 'too-short'),
        'a 3 s job is too short to judge',
      );
      const text = await runCli(['jobs', 'show', id, '--config', login], cluster.clientEnv());
      assert.match(text.stdout, new RegExp(`^Job ${id} \\(kept\\)`));
      assert.match(text.stdout, /\nEfficiency \(GPU counters, GPM: 2 of 2 GPUs\)\n {2}job +memory-bound +score 0\.63 /);
      // --cluster names the accounting cluster, as Slurm's own -M
      const m = await runCli(['jobs', 'show', id, '--json', '--cluster', 'ci', '--config', login], cluster.clientEnv());
      assert.equal(m.status, 0, m.stderr);
      assert.equal((JSON.parse(m.stdout) as Report).source, 'sacct');
    },
  );

  test(
    L +
      'a job named to pose as fields (sbatch -J with the delimiter, newlines, a GRES line, ' +
      'another user, a blank line and a record): bound to its own GPU as its own user; jobs show ' +
      'from sacct reads the name as a name',
    async () => {
      await idle();
      // slurmctld stores any byte of a name, and sacct and scontrol's text print it raw
      const hostile =
        `x\x1fmallory\x1f0\n   UserId=mallory(666) GroupId=mallory(666) MCS_label=N/A\n     Nodes=${SLURM_NODE} ` +
        `CPU_IDs=0 Mem=0 GRES=gpu:4(IDX:0-3)\n\nJobId=999999 JobName=y`;
      const work = gate();
      const id = await cluster.sbatch(['--gres=gpu:1', '-J', hostile, '--wrap', work.script], TEST_USER);
      try {
        await hostileNameCase(id, hostile);
      } finally {
        work.release();
      }
    },
  );

  /** The job named `hostile`, running: what the reconciler makes of it, then what jobs show reads once it ended. */
  async function hostileNameCase(id: string, hostile: string): Promise<void> {
    const t0 = Date.now();
    await cluster.waitState(id, ['RUNNING']);
    // its GPU as slurmctld holds it: the per-node line after JOB_GRES (gresIdx() would take the name's line first)
    const detail = await cluster.cmd(['scontrol', 'show', 'job', '-d', id]);
    const own = [uuidOfGres(Number(/\n\s*JOB_GRES=\S*\n\s+Nodes=\S+ .*?GRES=gpu[^(]*\(IDX:(\d+)\)/.exec(detail)?.[1] ?? NaN))];
    await waitFor('bound by its prolog', () => bindings(id).length === 1);
    // the reconciler asks about every run it has not confirmed (its name): two whole reconciles after the prolog
    for (let i = 0; i < 2; i++) {
      const mark = Date.now();
      await waitFor(
        'a whole reconcile',
        () => Number(q<{ value: string }>(`SELECT value FROM meta WHERE key = 'reconcile.last_ok'`)[0]?.value) > mark,
      );
    }
    assert.deepEqual(
      bindings(id).map((b) => b.gpu_uuid),
      own,
      "its own GPU, none of the name's GRES line",
    );
    assert.equal(job(id)!.user, TEST_USER);
    assert.equal(job('999999'), undefined, "no job from the name's record");
    // 22.05 answers in text: the record is refused and said; 24.11 and later answer in JSON, the name whole
    if (release === 'bookworm')
      assert.match(daemon.stderr, new RegExp(`a job's record in Slurm is not read job=${id} error="scontrol show job ${id}: `));
    else assert.equal(job(id)!.name, hostile);
    await cluster.cmd(['scancel', id]);
    await cluster.waitState(id, ['CANCELLED'], 60_000);
    // 22.05's suite: jobs show's header for this job said name "allocation" and user root in three full runs of
    // 2026-11-27, while slurmdbd's job table held this job alone under its id, with its name and uid: not understood
    // yet (docs/reliability.md, the hostile-text row). The header from accounting is checked on 24.11 and 26.05, the
    // name call's parsing on every release by sacct-job.test
    if (release === 'bookworm') return;
    // the node's report with the header from accounting (sacct: the record, then the name in a call of its own)
    const shown = await waitFor(
      'the ended job in accounting',
      async () => {
        const r = await runCli(['jobs', 'show', id, '--json', '--config', configFile], cluster.clientEnv());
        const rep =
          r.status === 0
            ? (JSON.parse(r.stdout) as Report & {
                job: { name: string | null; user: string | null; state: string | null; cluster: string | null; start: string | null };
              })
            : undefined;
        // this job's record: a cluster whose slurmctld lost its state (an earlier case) gave its id to an earlier job too,
        // which accounting has until this one's record arrives
        return rep?.job.state === 'CANCELLED' && rep.job.cluster === 'ci' && Date.parse(rep.job.start ?? '') >= t0 - 2000 ? rep : undefined;
      },
      60_000,
      1000,
    );
    assert.deepEqual([shown.job.name, shown.job.user], [hostile, TEST_USER]);
    const text = await runCli(['jobs', 'show', id, '--config', configFile], cluster.clientEnv());
    assert.doesNotMatch(text.stdout, /[\u0000-\u0008\u000b-\u001f\u007f]/, 'the name printable on a terminal');
  }

  test(
    L +
      "[attribution] job_labels = info (a reload): a 2-GPU job's GPU series carry no job; jobs " +
      "show --source promql and the EpilogSlurmctld summary in AdminComment are the node's " +
      'figures',
    async () => {
      await idle();
      const INFO = '[attribution]\njob_labels = info\n';
      await reloadConfig((t) => t + INFO);
      try {
        // a 2 h limit for 3 s of work: jobs --waste's time-limit class, its limit from sacct
        const id = await cluster.sbatch(['--gres=gpu:2', '-J', 'info', '-t', '120', '--wrap', 'sleep 3']);
        await cluster.waitState(id, ['COMPLETED'], 60_000);
        await waitFor('bindings closed', () => bindings(id).length === 2 && bindings(id).every((b) => b.end_time !== null));
        await waitFor('state from sacct', () => job(id)?.state === 'COMPLETED', 30_000);
        // the store may have the end from scontrol before slurmctld has sent slurmdbd the job's record (seen with three
        // clusters at once): --waste says so and gives no time-limit class, so the case waits for accounting first
        await waitFor(
          `job ${id}'s time limit in accounting`,
          async () => /2:00:00/.test(await cluster.cmd(['sacct', '-n', '-X', '-j', id, '-o', 'timelimit'])),
          30_000,
        );
        const waste = await runCli(['jobs', '--waste', '--json', '--config', configFile], cluster.clientEnv());
        assert.equal(waste.status, 0, waste.stderr);
        const limit = (JSON.parse(waste.stdout) as { id: string; class: string; wasted_gpu_hours: number }[]).find(
          (r) => r.id === id && r.class === 'time-limit',
        );
        assert.ok(
          limit && limit.wasted_gpu_hours > 3.9,
          `jobs --waste: the time-limit class of ${id} from sacct (2 GPUs x ~2 h unused): ${waste.stdout.slice(0, 1500)} ${waste.stderr}`,
        );
        const onNode = await show(id);
        await vm.flush();
        assert.deepEqual(await vm.exportRaw(`{__name__="gpu.utilization","slurm.job.id"="${id}"}`), [], 'no GPU series names the job');
        assert.equal(
          (await vm.exportRaw(`{__name__="gpu.job.share","slurm.job.id"="${id}","slurm.job.name"="info"}`)).length,
          2,
          'its share on each GPU does',
        );
        const viaPromql = await promqlLike(id, onNode);
        assert.deepEqual(
          viaPromql.gpus.map((g) => [g.uuid, g.figures]),
          onNode.gpus.map((g) => [g.uuid, g.figures]),
          'store and PromQL give the same figures',
        );
        await waitFor(
          'the summary in AdminComment',
          async () => /^L9G1:/i.test((await cluster.cmd(['sacct', '-j', id, '-X', '-n', '-P', '-o', 'AdminComment'])).trim()) || undefined,
          120_000,
          1000,
        ).catch((e: Error) => {
          throw new Error(
            `${e.message}; ctld-epilog.log: ` +
              `${tail(join(stateDir, 'ctld-epilog.log'), 1500)}; ` +
              `the queue: ${readdirSync(join(stateDir, 'ctld-queue'), { recursive: true }).join(' ')}`,
          );
        });
        const login = join(dir, 'login-info.ini');
        writeFileSync(login, `[daemon]\nstate_dir = ${join(dir, 'login-info-state')}\n[slurm]\nslurm_conf = ${cluster.conf}\n`);
        const r = await runCli(['jobs', 'show', id, '--json', '--config', login], cluster.clientEnv());
        assert.equal(r.status, 0, r.stderr);
        const fromAcct = JSON.parse(r.stdout) as Report;
        assert.equal(fromAcct.source, 'sacct');
        assert.deepEqual(
          fromAcct.gpus.map((g) => [g.uuid, g.figures]),
          onNode.gpus.map((g) => [g.uuid, g.figures]),
          "the node's figures, GPU by GPU",
        );
      } finally {
        await reloadConfig((t) => t.replace(INFO, ''));
      }
    },
  );

  test(
    L +
      "NCCL Inspector logs written by a job's ranks: the series carry the job (from each rank's " +
      'process), the slow rank is flagged, and jobs show has the communication section (store and ' +
      'PromQL)',
    async () => {
      await idle();
      // the job's working directory: the Inspector's default folder, nccl-inspector-<job id>, is made there
      const work = tempDir('l9gpu-nccl-job-');
      chmodSync(work, 0o777);
      const OPS = 40;
      const ranks = [0, 1, 2, 3]
        .map((r) => `${process.execPath} ${join(ROOT, 'test', 'fixtures', 'nccl-writer.mjs')} ${r} 4 ${OPS} ${r === 2 ? 1.5 : 1} &`)
        .join(' ');
      const id = await cluster.sbatch([
        '--gres=gpu:1',
        '-J',
        'allreduce',
        `--chdir=${work}`,
        '--export=ALL,NCCL_INSPECTOR_ENABLE=1',
        '--wrap',
        `${ranks} wait`,
      ]);
      await cluster.waitState(id, ['RUNNING']);
      await waitFor('bound', () => bindings(id).length === 1);
      // the node's daemon follows NCCL too, from a reload, finding the ranks' folder by their environment (discover) alone,
      // once the reconciler has the job's name from Slurm (a prolog's environment has none)
      await waitFor('the job name from Slurm', () => job(id)?.name === 'allreduce' || undefined, 30_000);
      const before = readFileSync(configFile, 'utf8');
      await reloadConfig(
        (t) => `${t.replace('plugins = nvml\n', 'plugins = nvml, nccl\n')}[nccl]\npaths = ${work}/elsewhere-*\ndiscover = true\n`,
      );
      const mark = daemon.stderr.length;
      let pts: JsonPoint[];
      try {
        pts = await waitFor(
          "every rank's operations with the job",
          () => {
            const p = points().filter((x) => x.name === 'nccl.operations' && x.attributes['slurm.job.id'] === id && x.value === OPS);
            const flagged = points().some((x) => x.name === 'nccl.rank.straggler' && x.attributes['slurm.job.id'] === id && x.value === 1);
            return new Set(p.map((x) => x.attributes['nccl.rank'])).size === 4 && flagged ? points() : undefined;
            // discovery looks every 10 s: the ranks may start just after its first look
          },
          45_000,
        ).catch((e: Error) => {
          const seen = points()
            .filter((x) => x.name === 'nccl.operations')
            .slice(-4)
            .map((x) => JSON.stringify({ v: x.value, a: x.attributes }));
          throw new Error(
            `${e.message}; last nccl.operations: ${seen.join(' ') || 'none'}; the folder holds ` +
              `${readdirSync(work, { recursive: true }).join(', ')}; ` +
              `stderr: ${daemon.stderr.slice(mark).slice(-1500)}`,
          );
        });
        // flushed on every look: an export that arrives after one flush is searchable only after the next
        // every rank, each as its series (the figures of the PromQL report below are checked exactly)
        let seen: { metric: Record<string, string> }[] = [];
        await waitFor(
          "the ranks' series in VictoriaMetrics",
          async () => {
            await vm.flush();
            seen = (await vm.exportRaw('{__name__="nccl.operations"}')).filter((x) => x.metric['slurm.job.id'] === id);
            return new Set(seen.map((x) => x.metric['nccl.rank'])).size === 4 || undefined;
          },
          30_000,
        ).catch((e: Error) => {
          throw new Error(
            `${e.message}: the job's nccl.operations series there: ${JSON.stringify(seen.map((x) => x.metric)).slice(0, 2000)}; ` +
              `the daemon's stderr: ${daemon.stderr.slice(mark).slice(-1500)}`,
          );
        });
      } finally {
        await cluster.cmd(['scancel', id]);
        await reloadConfig(() => before);
      }
      const ops = pts.filter((x) => x.name === 'nccl.operations' && x.attributes['slurm.job.id'] === id);
      const a = ops[0]!.attributes;
      assert.equal(a['slurm.job.name'], 'allreduce');
      assert.equal(a['nccl.job.id'], id, 'the folder names the job too');
      assert.equal(typeof a['process.pid'], 'number');
      assert.equal(a['nccl.message.size'], '256MiB');
      const flags = pts.filter((x) => x.name === 'nccl.rank.straggler' && x.attributes['slurm.job.id'] === id);
      assert.deepEqual([...new Set(flags.filter((x) => x.value === 1).map((x) => x.attributes['nccl.rank']))], [2]);
      assert.doesNotMatch(daemon.stderr.slice(mark), /differs from the one recomputed/);
      await waitFor('closed by its epilog', () => bindings(id).every((b) => b.end_time !== null));
      // by hand: 4 ranks x 40 AllReduce of 256 MiB; rank 2 takes 1.5x; bus = bytes / seconds x 2(n-1)/n
      let seconds = 0;
      for (let r = 0; r < 4; r++)
        for (let sn = 0; sn < OPS; sn++) seconds += Math.round((1000 + (sn % 5) * 10) * (r === 2 ? 1.5 : 1)) / 1e6;
      const bus = ((4 * OPS * 268435456) / seconds) * 1.5;
      // what the node's daemon exported up to the epilog, searchable
      await vm.flush();
      for (const source of [[], ['--source', 'promql', '--url', vm.url]]) {
        const run = await runCli(['jobs', 'show', id, '--json', '--config', configFile, ...source], { SLURM_CONF: cluster.conf });
        if (run.status !== 0) {
          // seen once under load on 26.05 (no share series of the job found): what the backend and the daemon had
          const shares = await vm.exportRaw(`{__name__="gpu.job.share","slurm.job.id"="${id}"}`).catch((e: Error) => e.message);
          assert.fail(
            `${run.stderr}; the job's gpu.job.share in VictoriaMetrics: ${JSON.stringify(shares).slice(0, 800)}; ` +
              `the node's points of it: ` +
              `${points().filter((p) => p.attributes['slurm.job.id'] === id && p.name === 'gpu.job.share').length}; ` +
              `daemon: ${daemon.stderr.slice(-1500)}`,
          );
        }
        const c = (JSON.parse(run.stdout) as JobReport).communication!;
        const what = source.length ? 'promql' : 'store';
        assert.equal(c.collectives.length, 1, what);
        const k = c.collectives[0]!;
        assert.deepEqual(
          [k.comm_name, k.collective, k.size, k.ranks, k.ranks_seen, k.operations],
          ['slurm_world', 'AllReduce', '256MiB', 4, 4, OPS],
          what,
        );
        assert.ok(Math.abs(k.bus_bw_Bps! - bus) <= 1, `${what}: ${k.bus_bw_Bps} against ${bus}`);
        assert.equal(c.slowest_ranks[0]!.rank, 2, what);
        assert.equal(c.slowest_ranks[0]!.straggler, true, what);
        assert.ok(Math.abs(c.slowest_ranks[0]!.slowdown - 1.5) < 0.01, `${what}: ${c.slowest_ranks[0]!.slowdown}`);
        assert.ok(
          (JSON.parse(run.stdout) as JobReport).notes.some((n) => n.code === 'nccl-straggler'),
          what,
        );
      }
    },
  );

  if (CONFIGLESS_AT[release] === 'late') configlessCase();

  test(L + '5,000 pending jobs: a reconcile costs slurmctld the same RPCs as with an empty queue, and no full-queue dump', async (t) => {
    // an empty queue, pending jobs included: one that starts mid-measure would be one more job to ask about
    await waitFor('an empty queue', async () => (await cluster.cmd(['squeue', '-h', '-o', '%A'])).trim() === '', 60_000, 200);
    const k = await cluster.sbatch(['--gres=gpu:1', '--wrap', 'sleep 300']);
    await cluster.waitState(k, ['RUNNING']);
    await waitFor('bound', () => bindings(k).length === 1);
    // the production reconciler on a store of its own, a reconcile a minute for five minutes (its clock told so;
    // job_recheck is 5 minutes); the daemon is paused
    // meanwhile so that sdiag's counts are this reconciler's alone
    const MINUTES = 5;
    // the squeue source's dump of 5,000 jobs takes seconds a reconcile: two show it as well as five
    const measure = async (source: ReconcileSource, minutes = MINUTES) => {
      const db = openStore(tempDir('l9gpu-reconcile-'));
      const r = new Reconciler({
        db,
        node: () => ({ name: SLURM_NODE, guessed: false }),
        gresConf: join(cluster.base, 'etc', 'gres.conf'),
        binDir: join(cluster.base, 'bin'),
        slurmConf: cluster.conf,
        commandTimeoutMs: 60_000,
        source,
        log: createLogger('error', () => {}),
      });
      // sdiag counts every client's RPCs: a step left by an earlier case (slurmd killed under it) would be one more
      // job for this reconciler to ask about and close
      let seen = '';
      await waitFor(`steps of ${k} alone on the node`, async () => (seen = [...(await stepsHere())].join()) === k, 150_000, 500).catch(
        (e: Error) => {
          // which job's steps stayed says which earlier case left them (a slurmd killed under a job, a step that never ended)
          throw new Error(`${e.message}; the node's steps at the end: ${seen || 'none'}`);
        },
      );
      const t0 = Date.now();
      daemon.child.kill('SIGSTOP');
      try {
        await r.reconcileOnce(t0); // the first learns the running job
        const before = await cluster.rpcCounts();
        const w0 = performance.now();
        for (let i = 1; i <= minutes; i++) await r.reconcileOnce(t0 + i * 60_000);
        const wallMs = (performance.now() - w0) / minutes;
        const after = await cluster.rpcCounts();
        const byType: Record<string, number> = {};
        let us = 0;
        for (const [type, a] of after) {
          const d = a.count - (before.get(type)?.count ?? 0);
          // queries the reconciler's commands make; not sdiag's own, nor slurmd's registrations and completions
          if (!/^REQUEST_\w+_INFO(_SINGLE)?$/.test(type) || type === 'REQUEST_STATS_INFO' || d === 0) continue;
          byType[type] = d;
          us += a.totalUs - (before.get(type)?.totalUs ?? 0);
        }
        assert.equal(
          (db.prepare('SELECT COUNT(*) AS n FROM bindings WHERE job_id = ? AND end_time IS NULL').get(k) as { n: number }).n,
          1,
          `${source}: the running job is bound`,
        );
        return {
          byType,
          minutes,
          perMinute: Object.values(byType).reduce((a, b) => a + b, 0) / minutes,
          wallMs,
          slurmctldMsPerMinute: us / minutes / 1000,
        };
      } finally {
        daemon.child.kill('SIGCONT');
        db.close();
      }
    };
    const empty = await measure('local');
    const s0 = Date.now();
    await cluster.submitHeld(5000);
    const queued = (await cluster.cmd(['squeue', '-h', '-t', 'PD', '-o', '%A'])).trim().split('\n').length;
    assert.equal(queued, 5000);
    t.diagnostic(`5,000 held jobs submitted in ${((Date.now() - s0) / 1000).toFixed(1)} s`);
    try {
      const local = await measure('local');
      const whole = await measure('squeue', 2);
      const fmt = (n: string, m: typeof local) =>
        `${n}: ${m.perMinute} RPC/min ${JSON.stringify(m.byType)}, ${m.wallMs.toFixed(1)} ms a ` +
        `reconcile, slurmctld busy ${m.slurmctldMsPerMinute.toFixed(2)} ms/min`;
      t.diagnostic(fmt('local, empty queue', empty));
      t.diagnostic(fmt('local, 5,000 pending', local));
      t.diagnostic(fmt('squeue, 5,000 pending', whole));
      assert.deepEqual(local.byType, empty.byType, 'the same RPCs whatever the queue');
      assert.equal(local.byType.REQUEST_JOB_INFO, undefined, 'no full-queue dump');
      assert.ok(local.perMinute <= 1, `at most one RPC a minute for one job: ${local.perMinute}`);
      assert.ok(
        (whole.byType.REQUEST_JOB_INFO ?? 0) >= whole.minutes,
        `the squeue source dumps the queue at least once a reconcile (and sdiag sees it): ${JSON.stringify(whole.byType)}`,
      );
    } finally {
      // never masks the case's own failure
      await cluster.cmd(['scancel', '--state=PENDING']).catch((e: Error) => t.diagnostic(`scancel: ${e.message}`));
      await cluster.cmd(['scancel', k]).catch(() => '');
    }
  });
}
