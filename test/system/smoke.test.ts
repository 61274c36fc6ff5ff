/**
 * One job on a node, end to end through the product's processes: the prolog
 * records it, the daemon attributes the GPUs' points to it from the store,
 * the epilog closes it, `l9gpu jobs` lists and shows it. Run twice by `npm
 * test`: on this checkout, and in the bundled lane on a release tree and the
 * Node.js it ships (PRODUCT, test/helpers/paths.ts), where `--version` names
 * that runtime.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { simUuid } from '../../plugins/sim/index.js';
import { parseLines, runCli } from '../helpers/daemon.js';
import { runHook } from '../helpers/hook.js';
import { PRODUCT, tempDir } from '../helpers/paths.js';

/** The Node.js version the product runs on: the tree's BUILD-INFO.json names its runtime. */
const productNode = existsSync(join(PRODUCT.root, 'BUILD-INFO.json'))
  ? `v${(JSON.parse(readFileSync(join(PRODUCT.root, 'BUILD-INFO.json'), 'utf8')) as { nodeVersion: string }).nodeVersion}`
  : process.version;

test('--version names the Node.js the product runs on', async () => {
  const r = await runCli(['--version']);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, new RegExp(`^l9gpu/\\S+ ${process.platform}-${process.arch} node-${productNode.replace(/\./g, '\\.')}\\n$`));
});

test("a job: prolog, the daemon's points carry it, epilog, jobs lists and shows it ended", async () => {
  const d = tempDir('l9gpu-smoke-');
  const state = join(d, 'state');
  // no Slurm to ask: the reconciler's query fails (an empty bin_dir) and the hooks' bindings stand
  mkdirSync(join(d, 'bin'));
  writeFileSync(join(d, 'slurm.conf'), 'ClusterName=smoke\n');
  const config = join(d, 'l9gpu.ini');
  writeFileSync(
    config,
    `[daemon]\nhost_name = smokehost\nstate_dir = ${state}\nattribution = ` +
      `slurm\n[slurm]\nslurm_conf = ${join(d, 'slurm.conf')}\nnode_name = gpunode1\nbin_dir = ${join(d, 'bin')}\n[sim]\ngpus ` +
      `= 2\n`,
  );
  const gpus = [simUuid('smokehost', 0), simUuid('smokehost', 1)];
  const job = {
    L9GPU_CONFIG: config,
    SLURM_JOB_ID: '42',
    SLURM_JOB_USER: 'alice',
    SLURM_JOB_UID: '1001',
    SLURM_JOB_PARTITION: 'gpu',
    CUDA_VISIBLE_DEVICES: gpus.join(','),
  };
  const prolog = runHook('prolog', job);
  assert.deepEqual([prolog.status, prolog.stderr], [0, '']);

  const daemon = await runCli(['daemon', '--once', '--plugin', 'sim', '--sink', 'stdout', '--config', config]);
  assert.equal(daemon.status, 0, daemon.stderr);
  const util = parseLines(daemon.stdout).filter((p) => p.name === 'gpu.utilization');
  assert.deepEqual(
    util.map((p) => [p.attributes['gpu.uuid'], p.attributes['slurm.job.id'], p.attributes['slurm.user']]),
    gpus.map((g) => [g, '42', 'alice']),
  );

  // gpus names the job beside each of its GPUs (slurm/manifest.ts jobsByGpu: the store's open bindings)
  const shown = await runCli(['gpus', '--json', '--plugin', 'sim', '--config', config]);
  assert.equal(shown.status, 0, shown.stderr);
  const view = JSON.parse(shown.stdout) as { gpus: { uuid: string; jobs: Record<string, string>[] }[] };
  assert.deepEqual(
    view.gpus.map((g) => [g.uuid, g.jobs.map((j) => [j['slurm.job.id'], j['slurm.user'], j['slurm.partition']])]),
    gpus.map((g) => [g, [['42', 'alice', 'gpu']]]),
  );

  const epilog = runHook('epilog', { ...job, SLURM_JOB_EXIT_CODE: '0' });
  assert.deepEqual([epilog.status, epilog.stderr], [0, '']);
  const list = await runCli(['jobs', '--json', '--config', config]);
  assert.equal(list.status, 0, list.stderr);
  const rows = JSON.parse(list.stdout) as { id: string; user: string; state: string; gpus: number }[];
  assert.deepEqual(
    rows.map((r) => [r.id, r.user, r.state, r.gpus]),
    [['42', 'alice', 'ENDED', 2]],
  );
  const show = await runCli(['jobs', 'show', '42', '--json', '--config', config]);
  assert.equal(show.status, 0, show.stderr);
  const report = JSON.parse(show.stdout) as { gpus: { uuid: string; node: string }[] };
  // the report lists a job's GPUs by UUID
  assert.deepEqual(
    report.gpus.map((g) => [g.uuid, g.node]),
    [...gpus].sort().map((g) => [g, 'gpunode1']),
  );
});
