/**
 * The wall clock steps during a job: -1 h, then +2 h, as NTP or chrony at
 * boot, a VM's live migration or a wrong RTC set right do on real nodes.
 * libfaketime (Debian's faketime) steps the daemon's and the hooks' wall
 * clock only, through a file it reads again every second; their monotonic
 * clock is left alone (FAKETIME_DONT_FAKE_MONOTONIC), as a real step leaves
 * CLOCK_MONOTONIC, and the machine's own clock is never touched.
 *
 * Held: no tick lost (each second's sample is counted), no negative duration
 * anywhere (jobs, show, --csv, --json, the job-end summary), the job's run time
 * and GPU-hours those of the real time it ran, the step said once each, and
 * `l9gpu health` judging the health file by its monotonic age.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { DaemonProcess, runCli } from '../helpers/daemon.js';
import { runHook } from '../helpers/hook.js';
import { tempDir } from '../helpers/paths.js';
import { waitFor } from '../helpers/wait.js';

/** Debian's libfaketime, wherever the architecture puts it. */
function libfaketime(): string {
  for (const d of readdirSync('/usr/lib')) {
    const p = join('/usr/lib', d, 'faketime', 'libfaketime.so.1');
    if (existsSync(p)) return p;
  }
  throw new Error("libfaketime.so.1 not found: install Debian's faketime (test/setup/install-test-deps.sh does)");
}

const d = tempDir('l9gpu-clock-steps-');
const state = join(d, 'state');
const config = join(d, 'l9gpu.ini');
const offset = join(d, 'faketime-offset');
const JOB = '9001';
let daemon: DaemonProcess;
let fake: Record<string, string>;

/** Steps the daemon's and the hooks' wall clock to `spec` (libfaketime's relative form: "+0", "-1h", "+1h"). */
const stepTo = (spec: string) => writeFileSync(offset, `${spec}\n`);

before(async () => {
  mkdirSync(state, { recursive: true });
  const bin = join(d, 'bin');
  mkdirSync(bin);
  // 24.11's scontrol with the job's step daemon on the node (recorded answer: slurm/testdata/scontrol-listjobs-24.11.txt)
  writeFileSync(
    join(bin, 'scontrol'),
    `#!/bin/sh\n[ "$1" = listjobs ] && { printf 'JOBID\\n${JOB}       \\n'; exit 0; }\necho ` +
      `"scontrol: $*: not answered by this stand-in" >&2; exit 1\n`,
    { mode: 0o755 },
  );
  writeFileSync(join(bin, 'sacct'), `#!/bin/sh\necho 'sacct: error: Slurm accounting storage is disabled' >&2; exit 1\n`, { mode: 0o755 });
  writeFileSync(join(d, 'slurm.conf'), 'ClusterName=ci\n');
  writeFileSync(
    config,
    `[daemon]\nstate_dir = ${state}\nattribution = slurm\ninterval = 1s\n[slurm]\nslurm_conf = ${join(d, 'slurm.conf')}\nnode_name ` +
      `= gpunode9\nbin_dir = ${bin}\n[sim]\ngpus = 2\n`,
  );
  stepTo('+0');
  fake = { LD_PRELOAD: libfaketime(), FAKETIME_TIMESTAMP_FILE: offset, FAKETIME_CACHE_DURATION: '1', FAKETIME_DONT_FAKE_MONOTONIC: '1' };
  daemon = new DaemonProcess(['--config', config, '--plugin', 'sim', '--sink', 'stdout'], fake);
  await waitFor(
    'two GPUs sampled',
    () =>
      new Set(
        daemon
          .points()
          .filter((p) => p.name === 'gpu.utilization')
          .map((p) => p.attributes['gpu.uuid']),
      ).size === 2 || undefined,
    20_000,
  );
});

after(async () => {
  assert.equal(await daemon.stop(), 0, daemon.stderr);
});

/** The samples of one GPU written so far: one a tick. */
const samplesOf = (uuid: string) => daemon.points().filter((p) => p.name === 'gpu.utilization' && p.attributes['gpu.uuid'] === uuid);

/** Waits for n more ticks of the daemon (by the samples of one GPU). */
async function ticks(uuid: string, n: number): Promise<void> {
  const want = samplesOf(uuid).length + n;
  await waitFor(`${n} more ticks`, () => samplesOf(uuid).length >= want || undefined, 20_000 + n * 2000);
}

test('steps of -1 h and +2 h during a job: no tick lost, no negative duration, the figures of the real time', async () => {
  const uuids = [
    ...new Set(
      daemon
        .points()
        .filter((p) => p.name === 'gpu.utilization')
        .map((p) => String(p.attributes['gpu.uuid'])),
    ),
  ].sort();
  const [gpu0] = uuids as [string, string];
  const hookEnv = {
    ...fake,
    SLURM_JOB_ID: JOB,
    SLURM_JOB_USER: 'root',
    SLURM_JOB_UID: '0',
    SLURM_JOB_PARTITION: 'gpu',
    CUDA_VISIBLE_DEVICES: uuids.join(','),
    SLURM_CONF: join(d, 'slurm.conf'),
    SLURMD_NODENAME: 'gpunode9',
    L9GPU_STATE_DIR: state,
  };
  const pro = runHook('prolog', hookEnv);
  assert.equal(pro.status, 0, pro.stderr);
  const started = performance.now();
  const firstSample = samplesOf(gpu0).length;
  await waitFor(
    'the job on its GPUs',
    () => daemon.points().some((p) => p.name === 'gpu.utilization' && p.attributes['slurm.job.id'] === JOB) || undefined,
    20_000,
  );
  await ticks(gpu0, 3);

  let mark = daemon.stderr.length;
  stepTo('-1h');
  await daemon.waitStderr(/the wall clock stepped -(?:59m5\ds|1h0m[0-2]s)/, 20_000, mark);
  await ticks(gpu0, 4);
  mark = daemon.stderr.length;
  stepTo('+1h');
  await daemon.waitStderr(/the wall clock stepped \+(?:1h59m5\ds|2h0m[0-2]s)/, 20_000, mark);
  await ticks(gpu0, 4);

  const epi = runHook('epilog', { ...hookEnv, SLURM_JOB_EXIT_CODE: '0' });
  assert.equal(epi.status, 0, epi.stderr);
  const ranS = (performance.now() - started) / 1000;
  // the daemon sees the job leave its GPUs: the job-end summaries
  const summary = await waitFor(
    'the job-end summary',
    () =>
      daemon
        .points()
        .find((p) => p.name === 'gpu.job.duration' && p.attributes['gpu.uuid'] === gpu0 && p.attributes['slurm.job.id'] === JOB),
    20_000,
  );

  // no tick lost: one sample a second of real time, whatever the wall clock did
  const taken = samplesOf(gpu0).length - firstSample;
  assert.ok(taken >= Math.floor(ranS) - 1, `${taken} samples in ${ranS.toFixed(1)} s of real time`);
  const steps = daemon.stderr.match(/the wall clock stepped/g) ?? [];
  assert.equal(steps.length, 2, `each step said once:\n${daemon.stderr.slice(-2000)}`);

  // the job's figures, asked with the wall clock as it is now (+1 h)
  const cli = (args: string[]) => runCli([...args, '--config', config], fake);
  const list = await cli(['jobs', '--json', '--state', 'all']);
  assert.equal(list.status, 0, list.stderr);
  const row = (JSON.parse(list.stdout) as { id: string; elapsed_s: number; gpu_hours: number }[]).find((r) => r.id === JOB)!;
  assert.ok(row, list.stdout);
  assert.ok(Math.abs(row.elapsed_s - ranS) <= 2, `run time ${row.elapsed_s} s; the job ran ${ranS.toFixed(1)} s`);
  // GPU-hours: both GPUs over the seconds sampled (the first sample of each GPU opens its rollup: a tick less)
  assert.ok(Math.abs(row.gpu_hours * 3600 - 2 * ranS) <= 2 * 3, `GPU-hours ${row.gpu_hours} for 2 GPUs over ${ranS.toFixed(1)} s`);
  assert.ok(Math.abs(summary.value - ranS) <= 3, `gpu.job.duration ${summary.value} s; the job ran ${ranS.toFixed(1)} s`);

  const show = await cli(['jobs', 'show', JOB, '--json']);
  assert.equal(show.status, 0, show.stderr);
  const report = JSON.parse(show.stdout) as { job: { elapsed_s: number } };
  assert.equal(report.job.elapsed_s, row.elapsed_s);
  const text = await cli(['jobs', 'show', JOB]);
  assert.match(text.stdout, /run time 00:00:\d\d/);
  const csv = await cli(['jobs', '--csv', '--state', 'all']);
  assert.equal(csv.status, 0, csv.stderr);
  assert.doesNotMatch(csv.stdout + text.stdout + list.stdout, /(?<![\w.])-\d/, 'no negative figure anywhere');

  // the health file is the daemon's of a second ago by the monotonic clock, whatever its wall time says
  const health = await cli(['health', '--json']);
  assert.notEqual((JSON.parse(health.stdout) as { state: string }).state, 'unknown', health.stdout);
  // and asked with the wall clock an hour behind the file's, it is not "from the future", still fresh
  const behind = await runCli(['health', '--json', '--config', config], {
    LD_PRELOAD: fake.LD_PRELOAD!,
    FAKETIME: '-1h',
    FAKETIME_DONT_FAKE_MONOTONIC: '1',
  });
  assert.notEqual((JSON.parse(behind.stdout) as { state: string }).state, 'unknown', behind.stdout);
});
