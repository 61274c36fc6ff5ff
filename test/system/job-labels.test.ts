/**
 * [attribution] job_labels = points | info, end to end: the same GPU batches
 * (the sim plugin's) through the real attribution stage and job ledger over a
 * real store, in each mode, out through the OTLP sink into real
 * VictoriaMetrics (dotted names and Prometheus naming); then a real daemon in
 * each mode, scraped by a real Prometheus and exporting to VictoriaMetrics,
 * read as `l9gpu jobs show --source promql` and the ctld epilog's worker read
 * it. The reports must not tell the modes apart.
 */
import assert from 'node:assert/strict';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { createLogger } from '../../src/core/log.js';
import { PointBuffer, type Batch } from '../../src/core/metrics/model.js';
import { summaryGrainOf, type JobLabels } from '../../src/core/job-labels.js';
import { JobLedger } from '../../src/ledger/ledger.js';
import { Pipeline } from '../../src/pipeline/pipeline.js';
import { otlpSink } from '../../src/sinks/otlp.js';
import { jobEndCoverage, reportFromPromql, settledReport, type PromqlOptions } from '../../src/jobs/promql.js';
import type { JobReport } from '../../src/jobs/report-model.js';
import { reportJson, type JobReportJson } from '../../src/jobs/report-json.js';
import { recordEnd, recordStart, type GpuBinding } from '../../src/store/jobs.js';
import { openStore, type Db } from '../../src/store/open.js';
import { simPlugin, simUuid } from '../../plugins/sim/index.js';
import { SlurmAttribution } from '../../slurm/attribution.js';
import { BudgetLedger, DEFAULT_LIMITS } from '../../src/core/limits.js';
import { configFrom } from '../helpers/config.js';
import { DaemonProcess, runCli } from '../helpers/daemon.js';
import { freePort } from '../helpers/net.js';
import { tempDir } from '../helpers/paths.js';
import { Prometheus } from '../helpers/prometheus.js';
import { slurmControllerDown } from '../helpers/slurm-down.js';
import { VictoriaMetrics } from '../helpers/victoriametrics.js';
import { waitFor } from '../helpers/wait.js';

const log = createLogger('error', () => {});
const HOST = 'labelnode';
const gpu = (i: number) => simUuid(HOST, i);

/**
 * One mode's half: a store, the real stage over it, and VictoriaMetrics under both of its namings behind the OTLP
 * sink, each once with the l9gpu names and once with the conventions' ([otlp] semantic_conventions = hw).
 */
interface Half {
  name: string;
  db: Db;
  attribution: SlurmAttribution;
  pipeline: Pipeline;
  otel: VictoriaMetrics;
  prom: VictoriaMetrics;
  hwOtel: VictoriaMetrics;
  hwProm: VictoriaMetrics;
}
const backends = (h: Half): [string, VictoriaMetrics, 'l9gpu' | 'hw'][] => [
  ['otel', h.otel, 'l9gpu'],
  ['prometheus', h.prom, 'l9gpu'],
  ['otel hw', h.hwOtel, 'hw'],
  ['prometheus hw', h.hwProm, 'hw'],
];

const halves: Half[] = [];
before(async () => {
  // points with two attributes left off them (the report's header must come from the share), info with all
  const modes: [string, JobLabels][] = [
    ['points', { mode: 'points', omit: ['slurm.user', 'slurm.job.name'] }],
    ['info', { mode: 'info', omit: [] }],
  ];
  for (const [name, jobLabels] of modes) {
    const db = openStore(tempDir(`l9gpu-labels-${name}-`));
    const attribution = new SlurmAttribution(db, log, undefined, {
      labelLength: DEFAULT_LIMITS.labelLength,
      budgets: new BudgetLedger(),
      jobLabels,
    });
    const pipeline = new Pipeline(log, {
      attribution,
      ledger: new JobLedger(db, log, { seriesMs: 86_400_000, jobsMs: 86_400_000 }, undefined, summaryGrainOf(jobLabels)),
    });
    const [otel, prom, hwOtel, hwProm] = await Promise.all(
      [false, true, false, true].map((prometheusNaming) => new VictoriaMetrics().start({ prometheusNaming })),
    );
    halves.push({ name, db, attribution, pipeline, otel: otel!, prom: prom!, hwOtel: hwOtel!, hwProm: hwProm! });
  }
});
after(async () => {
  for (const h of halves) {
    h.db.close();
    await Promise.all(backends(h).map(([, vm]) => vm.stop()));
  }
});

test(
  "the same batches in points and info mode: every job's PromQL report (GPUs, figures, " +
    'header, series) and the GPUs its job-end summaries cover are identical, under dotted and Prometheus names, with the ' +
    "l9gpu names and the conventions' hw names; info mode's GPU series carry no job",
  async () => {
    const plugin = await simPlugin.create({
      config: configFrom({ sim: { gpus: '3', seed: '7' } }),
      log,
      hostName: HOST,
      limits: DEFAULT_LIMITS,
      budgets: new BudgetLedger(),
    });
    const resource = { 'service.name': 'l9gpu', 'host.name': HOST, 'cluster.name': 'ci' };
    const TICKS = 20;
    const STEP = 10_000;
    // whole seconds, in the past: PromQL's time is in seconds, and every sample is in before the reports are read
    const t0 = Math.floor(Date.now() / 1000) * 1000 - (TICKS + 6) * STEP;
    const sinks = await Promise.all(
      halves.flatMap((h) =>
        backends(h).map(async ([, vm, naming]) => {
          const config = configFrom({ otlp: { endpoint: vm.otlpEndpoint, semantic_conventions: naming } });
          const s = otlpSink.create({ config, log, resource, startTime: t0 });
          await s.start!();
          return s;
        }),
      ),
    );
    halves.forEach((h, i) => h.pipeline.configure({ sinks: sinks.slice(4 * i, 4 * i + 4) }));
    // 7001 holds GPUs 0 and 1 for 14 ticks; 7002 shares GPU 1 with it from tick 4 to 11; GPU 2 is 7003's from tick 2
    // to 7, nobody's, then 7004's from tick 10 on (open at the end): in info mode GPU 2's series goes on between them
    const events: Record<number, [job: string, user: string, gpus: GpuBinding[] | null][]> = {
      0: [
        [
          '7001',
          'alice',
          [
            { uuid: gpu(0), shared: false },
            { uuid: gpu(1), shared: true },
          ],
        ],
      ],
      2: [['7003', 'carol', [{ uuid: gpu(2), shared: false }]]],
      4: [['7002', 'bob', [{ uuid: gpu(1), shared: true }]]],
      7: [['7003', 'carol', null]],
      10: [['7004', 'dave', [{ uuid: gpu(2), shared: false }]]],
      11: [['7002', 'bob', null]],
      14: [['7001', 'alice', null]],
    };
    for (let i = 0; i < TICKS; i++) {
      const time = t0 + i * STEP;
      for (const h of halves) {
        for (const [jobId, user, gpus] of events[i] ?? []) {
          if (gpus)
            recordStart(
              h.db,
              { jobId, runKey: 'r0', user, uid: 1000 + (Number(jobId) % 10), partition: 'gpu', name: `run-${jobId}`, account: 'physics' },
              gpus,
              'prolog',
              time - 1,
            );
          else recordEnd(h.db, { jobId, runKey: 'r0' }, { endTime: time - 1, state: 'COMPLETED', exitCode: 0 }, [], 'epilog', time - 1);
        }
        // the writes are on the stage's own connection: data_version does not move for it
        h.attribution.invalidate();
      }
      const out = new PointBuffer();
      await plugin.collect(out, AbortSignal.timeout(5000));
      const batch: Batch = { source: 'sim', time, intervalMs: STEP, points: out.points };
      for (const h of halves) h.pipeline.publish(batch);
    }
    for (const s of sinks) {
      await s.close(Date.now() + 15_000);
      assert.deepEqual({ errors: s.stats.errors, dropped: s.stats.dropped }, { errors: 0, dropped: 0 });
    }
    await Promise.all(halves.flatMap((h) => backends(h).map(([, vm]) => vm.flush())));
    const [points, info] = halves as [Half, Half];
    // what the modes send: in info mode no GPU series names a job, and the shares are the same series
    assert.equal((await info.otel.exportRaw('{__name__="gpu.utilization","slurm.job.id"!=""}')).length, 0);
    assert.equal((await info.otel.exportRaw('{__name__="gpu.utilization"}')).length, 3);
    assert.equal((await points.otel.exportRaw('{__name__="gpu.utilization","slurm.job.id"!=""}')).length, 5, 'one per (GPU, job)');
    // the hw backends hold the conventions' names, not ours, a series for each of ours, the product's attributes beside
    for (const h of halves) {
      const ours = (await h.otel.exportRaw('{__name__="gpu.utilization"}')).length;
      assert.equal((await h.hwOtel.exportRaw('{__name__="gpu.utilization"}')).length, 0, h.name);
      const hw = await h.hwOtel.exportRaw('{__name__="hw.gpu.utilization","hw.gpu.task"="general","hw.type"="gpu"}');
      assert.equal(hw.length, ours, h.name);
      assert.ok(hw.every((x) => x.metric['hw.id'] === x.metric['gpu.uuid']));
      assert.equal((await h.hwProm.exportRaw('{__name__="hw_power_watts",hw_type="gpu"}')).length, ours, h.name);
    }
    const shares = async (h: Half) =>
      (await h.otel.exportRaw('{__name__="gpu.job.share"}')).map((s) => JSON.stringify([s.metric, s.values, s.timestamps])).sort();
    assert.deepEqual(await shares(info), await shares(points));
    const now = t0 + (TICKS + 60) * STEP;
    for (const job of ['7001', '7002', '7003', '7004']) {
      const reports: [string, JobReport][] = [];
      for (const h of halves) {
        for (const [naming, vm] of backends(h)) {
          const r = await reportFromPromql({ url: vm.url, window: '1h' }, job, null, now);
          assert.ok(r, `${h.name} ${naming}: job ${job} found`);
          reports.push([`${h.name} ${naming}`, r]);
        }
      }
      for (const [name, r] of reports.slice(1)) assert.deepEqual(r, reports[0]![1], `job ${job}: ${name} vs ${reports[0]![0]}`);
      const r = reports[0]![1];
      assert.equal(
        r.job.user,
        { 7001: 'alice', 7002: 'bob', 7003: 'carol', 7004: 'dave' }[job],
        'the header from the share, which keeps what points omit',
      );
      assert.equal(r.job.name, `run-${job}`);
      // samples: the ticks the job held each GPU
      const held = { 7001: [14, 14], 7002: [7], 7003: [5], 7004: [10] }[job]!;
      assert.deepEqual(
        r.gpus.map((g) => g.figures.samples),
        held,
        `job ${job}`,
      );
      const cov = await Promise.all(
        halves.flatMap((h) => [h.otel, h.hwOtel].map((vm) => jobEndCoverage({ url: vm.url, window: '1h' }, job))),
      );
      // the same GPUs ended in every mode; the summaries themselves per GPU in one, per node in the other
      for (const c of cov.slice(1)) assert.deepEqual([c.gpus, c.ended], [cov[0]!.gpus, cov[0]!.ended], `job ${job}: coverage`);
      assert.deepEqual(cov[1], cov[0], `job ${job}: coverage, points mode, either naming`);
      assert.deepEqual(cov[3], cov[2], `job ${job}: coverage, info mode, either naming`);
      assert.equal(cov[0]!.ended, job === '7004' ? 0 : held.length);
    }
    // a shared GPU: each job's share of it, the same in both modes
    const shared = (await reportFromPromql({ url: info.otel.url, window: '1h' }, '7002', null, now))!;
    assert.equal(shared.gpus[0]!.figures.shareMean, 0.5);
  },
);

/** The epilog while the daemon runs: the job's bindings closed, then its job-end summary waited for in VictoriaMetrics. */
async function endJob(db: Db, vm: VictoriaMetrics, jobId: string): Promise<void> {
  recordEnd(db, { jobId, runKey: 'r0' }, { endTime: Date.now(), state: 'COMPLETED', exitCode: 0 }, [], 'epilog');
  await waitFor(
    'the job-end summary',
    async () => {
      await vm.flush();
      return (await vm.exportRaw(`{__name__="gpu.job.energy","slurm.job.id"="${jobId}"}`)).length === 1 || undefined;
    },
    30_000,
  );
}

/**
 * The job read as the ctld epilog's worker reads it (coverage until every GPU's summary is in, then the report until
 * it agrees with them), held to the node's store report: the same figures, exactly. Returns the PromQL report.
 */
async function assertNodeFigures(config: string, vm: VictoriaMetrics, jobId: string): Promise<JobReport> {
  const store = await runCli(['jobs', 'show', jobId, '--json', '--config', config]);
  assert.equal(store.status, 0, store.stderr);
  const node = JSON.parse(store.stdout) as JobReportJson;
  assert.equal(node.source, 'store');
  const q: PromqlOptions = { url: vm.url, window: '1h' };
  const cov = await jobEndCoverage(q, jobId);
  assert.deepEqual([cov.gpus, cov.ended], [node.gpus.length, node.gpus.length]);
  const logged: string[] = [];
  const report = await settledReport(() => reportFromPromql(q, jobId, null), cov.ends, {
    deadline: Date.now() + 30_000,
    settledAfterMs: 30_000,
    pauseMs: 200,
    log: (m) => logged.push(m),
  });
  assert.deepEqual(logged, []);
  assert.deepEqual(
    reportJson(report!).gpus.map((g) => [g.uuid, g.figures]),
    node.gpus.map((g) => [g.uuid, g.figures]),
    "the node's figures, exactly (--json: snake_case)",
  );
  return report!;
}

for (const mode of ['points', 'info'] as const)
  test(
    `a real daemon in ${mode} mode: its GPU series ${mode === 'info' ? 'carry no job' : 'carry the job'}; ` +
      `the PromQL report from VictoriaMetrics (OTLP) is the node's figures exactly, read as the ` +
      `ctld epilog's worker reads it, and a real Prometheus scraping it finds the job too`,
    async () => {
      const d0 = tempDir(`l9gpu-${mode}-daemon-`);
      chmodSync(d0, 0o755);
      const slurm = slurmControllerDown(d0, 'infonode');
      const vm = await new VictoriaMetrics().start();
      const port = await freePort();
      const config = join(d0, 'l9gpu.ini');
      writeFileSync(
        config,
        `[daemon]\n${slurm.daemon}plugins = sim\nsinks = otlp, prometheus\ninterval = ` +
          `300ms\nhost_name = infonode\n[attribution]\njob_labels = ${mode}\nomit_from_points = ` +
          `slurm.job.name\n[sim]\ngpus = 2\n[otlp]\nendpoint = ${vm.otlpEndpoint}\nexport_interval = ` +
          `300ms\n[prometheus]\nhost = 127.0.0.1\nport = ${port}\n${slurm.slurm}`,
      );
      const uuid = simUuid('infonode', 1);
      const db = openStore(slurm.state);
      recordStart(
        db,
        { jobId: '6161', runKey: 'r0', user: 'alice', uid: 1001, partition: 'gpu', name: 'train' },
        [{ uuid, shared: false }],
        'prolog',
        Date.now(),
      );
      const prom = await new Prometheus().start(`127.0.0.1:${port}`);
      const d = new DaemonProcess(['--config', config]);
      try {
        try {
          await waitFor(
            "8 samples of the job's share, and 5 scrapes",
            async () => {
              await vm.flush();
              const n = (await vm.exportRaw('{__name__="gpu.job.share","slurm.job.id"="6161"}'))[0]?.values.length ?? 0;
              const scraped = Number(
                (await prom.query('count_over_time(gpu_job_share_ratio{slurm_job_id="6161"}[1m])'))[0]?.value?.[1] ?? 0,
              );
              return (n >= 8 && scraped >= 5) || undefined;
            },
            40_000,
          );
          await endJob(db, vm, '6161');
        } finally {
          db.close();
          assert.equal(await d.stop(), 0, d.stderr);
        }
        const labelled = await vm.exportRaw('{__name__=~"gpu[.](utilization|memory[.]used|power[.]draw)","slurm.job.id"!=""}');
        assert.deepEqual(
          labelled.map((s) => [s.metric.__name__, s.metric['gpu.uuid'], s.metric['slurm.job.name']]).sort(),
          mode === 'info' ? [] : ['gpu.memory.used', 'gpu.power.draw', 'gpu.utilization'].map((n) => [n, uuid, undefined]),
        );
        const [share] = await vm.exportRaw('{__name__="gpu.job.share","slurm.job.id"="6161"}');
        assert.equal(share!.metric['slurm.job.name'], 'train', 'the share keeps what points omit');
        const report = await assertNodeFigures(config, vm, '6161');
        assert.equal(report.job.name, 'train');
        // the pull endpoint through a real Prometheus: the job's GPU and its samples (a scrape resamples: not exact)
        const r = await runCli(['jobs', 'show', '6161', '--json', '--config', config, '--source', 'promql', '--url', prom.url]);
        assert.equal(r.status, 0, r.stderr);
        const viaProm = JSON.parse(r.stdout) as JobReportJson;
        assert.deepEqual(
          viaProm.gpus.map((g) => g.uuid),
          [uuid],
        );
        const f = viaProm.gpus[0]!.figures;
        assert.ok(f.samples >= 5 && f.util_mean !== null && f.share_mean === 1, JSON.stringify(f));
        assert.equal(f.mem_total, report.gpus[0]!.figures.memTotal);
        assert.equal(viaProm.job.user, 'alice');
      } finally {
        await prom.stop();
        await vm.stop();
      }
    },
  );

test(
  'a reload (SIGHUP) switches job_labels from points to info mid-job: the next GPU points ' +
    'carry no job, the share still does, and the PromQL report of the job (points, then info) ' +
    "is the node's figures exactly",
  async () => {
    const d0 = tempDir('l9gpu-labels-reload-');
    chmodSync(d0, 0o755);
    const slurm = slurmControllerDown(d0, 'reloadnode');
    const vm = await new VictoriaMetrics().start();
    const config = join(d0, 'l9gpu.ini');
    const write = (mode: string) =>
      writeFileSync(
        config,
        `[daemon]\n${slurm.daemon}plugins = sim\nsinks = stdout, otlp\ninterval = 200ms\nhost_name ` +
          `= reloadnode\n[attribution]\njob_labels = ${mode}\n[sim]\ngpus = 1\n[otlp]\nendpoint = ${vm.otlpEndpoint}\nexport_interval ` +
          `= 200ms\n${slurm.slurm}`,
      );
    write('points');
    const db = openStore(slurm.state);
    recordStart(
      db,
      { jobId: '7070', runKey: 'r0', user: 'alice', uid: 1001, partition: 'gpu' },
      [{ uuid: simUuid('reloadnode', 0), shared: false }],
      'prolog',
      Date.now(),
    );
    const d = new DaemonProcess(['--config', config]);
    try {
      try {
        const job = (name: string, from: number) =>
          d
            .pointsSince(from)
            .filter((p) => p.name === name)
            .map((p) => p.attributes['slurm.job.id']);
        await waitFor('3 GPU points with the job', () => job('gpu.utilization', 0).filter((j) => j === '7070').length >= 3 || undefined);
        write('info');
        d.child.kill('SIGHUP');
        await d.waitStderr(/configuration reloaded/);
        // stdout and stderr are two pipes: a tick before the reload may still come after its line; the last three may not
        const mark = d.stdout.length;
        await waitFor('three ticks in info mode', () => {
          const u = job('gpu.utilization', mark);
          return (u.length >= 3 && u.slice(-3).every((j) => j === undefined)) || undefined;
        });
        const share = job('gpu.job.share', mark);
        assert.ok(share.length >= 3 && share.every((j) => j === '7070'), JSON.stringify(share));
        await endJob(db, vm, '7070');
      } finally {
        db.close();
        assert.equal(await d.stop(), 0, d.stderr);
      }
      // across the switch: points-mode samples, then info-mode ones
      await assertNodeFigures(config, vm, '7070');
    } finally {
      await vm.stop();
    }
  },
);

test(
  "info mode at size: a GPU's own series are read over the job's time only (two days of " +
    "another job's samples before it stay on the backend), and a 400-GPU job's UUIDs are asked " +
    'in queries VictoriaMetrics takes',
  async () => {
    const vm = await new VictoriaMetrics().start();
    try {
      const STEP = 10_000;
      const t0 = Math.floor(Date.now() / 1000) * 1000 - 3_600_000;
      const ts = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i * STEP);
      const job = (id: string) => ({ 'slurm.job.id': id, 'slurm.user': 'zoe', 'slurm.partition': 'gpu' });
      const lines: object[] = [];
      const gpu = (host: string, i: number, jobId: string, before: number) => {
        const id = { 'host.name': host, 'gpu.uuid': simUuid(host, i), 'gpu.index': String(i), 'gpu.model': 'NVIDIA H100 80GB HBM3' };
        const during = ts(t0, 60);
        const earlier = ts(t0 - before * STEP, before);
        lines.push(
          {
            metric: { __name__: 'gpu.utilization', ...id },
            values: [...earlier.map(() => 1), ...during.map(() => 0.25)],
            timestamps: [...earlier, ...during],
          },
          { metric: { __name__: 'gpu.job.share', ...id, ...job(jobId) }, values: during.map(() => 1), timestamps: during },
        );
      };
      // job 8080: one GPU, busy for two days (another job's) before it
      gpu('longnode', 0, '8080', 2 * 8640);
      // job 8081: 400 GPUs, ~16 kB of UUIDs in one regular expression
      for (let i = 0; i < 400; i++) gpu('bignode', i, '8081', 0);
      const r = await fetch(`${vm.url}/api/v1/import`, { method: 'POST', body: lines.map((l) => JSON.stringify(l)).join('\n') });
      assert.ok(r.ok, await r.text());
      await vm.flush();
      // the two days are ~0.5 MB of answer: past this bound the report would stop reading
      const one = await reportFromPromql({ url: vm.url, window: '3d', maxBytes: 64 << 10 }, '8080', null);
      assert.deepEqual(
        one!.gpus.map((g) => [g.uuid, g.figures.samples, g.figures.utilMean]),
        [[simUuid('longnode', 0), 60, 0.25]],
      );
      const big = await reportFromPromql({ url: vm.url, window: '3d' }, '8081', null);
      assert.equal(big!.gpus.length, 400);
      assert.ok(big!.gpus.every((g) => g.figures.samples === 60 && g.figures.utilMean === 0.25));
      assert.equal(big!.job.user, 'zoe');
    } finally {
      await vm.stop();
    }
  },
);
