/**
 * The layering of docs/architecture.md, enforced on the real import graph:
 * core <- services <- runtime | plugins/<name> | slurm | attribution/<name>
 * <- composition root (daemon/catalog.ts) <- CLI, bench, tests. No loops.
 * Inside the services: src/figures <- src/ledger | src/jobs.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { importsOf, loops, repositoryEdges, violations, type Edge } from '../helpers/layers.js';
import { ROOT } from '../helpers/paths.js';

test('every import of the repository follows the layer directions, with no loop', () => {
  const { files, edges } = repositoryEdges(ROOT);
  assert.ok(files.length > 100 && edges.length > 300, `the walk found the tree (${files.length} files, ${edges.length} imports)`);
  assert.deepEqual(violations(files, edges), []);
  assert.deepEqual(loops(edges), []);
});

test('the checker names the file and line of an upward, a sideways and a looping import', () => {
  const src = (path: string, ...imports: string[]): Edge[] =>
    importsOf(path, imports.map((i) => `import { x } from '${i}';`).join('\n') + '\n', '/r');
  const edges = [
    ...src('src/core/log.ts', '../../daemon/catalog.js'),
    ...src('plugins/nvml/index.ts', '../../src/core/log.js', '../amdsmi/parse.js'),
    ...src('slurm/hook.ts', '../daemon/agent.js'),
    ...src('daemon/agent.ts', '../plugins/nvml/index.js'),
    ...src('src/jobs/a.ts', './b.js'),
    ...src('src/jobs/b.ts', '../store/c.js'),
    ...src('src/store/c.ts', '../jobs/a.js'),
    ...src('src/cli/x.ts', '../../daemon/catalog.js'),
  ];
  const files = [...new Set(edges.map((e) => e.from)), 'src/misc.ts'];
  assert.deepEqual(violations(files, edges), [
    'src/misc.ts: in no layer (see test/helpers/layers.ts)',
    'src/core/log.ts:1: imports daemon/catalog.ts: core (rank 0) may not import root (rank 3)',
    'plugins/nvml/index.ts:2: imports plugins/amdsmi/parse.ts: plugins/nvml (rank 2) may not import plugins/amdsmi (rank 2)',
    'slurm/hook.ts:1: imports daemon/agent.ts: slurm (rank 2) may not import runtime (rank 2)',
    'daemon/agent.ts:1: imports plugins/nvml/index.ts: runtime (rank 2) may not import plugins/nvml (rank 2)',
  ]);
  assert.deepEqual(loops(edges), [
    'import loop among src/jobs/a.ts, src/jobs/b.ts, src/store/c.ts: src/jobs/a.ts:1 -> ' +
      'src/jobs/b.ts; src/jobs/b.ts:1 -> src/store/c.ts; src/store/c.ts:1 -> src/jobs/a.ts',
  ]);
});

test('dynamic imports, re-exports and type-only imports count', () => {
  const text =
    "import type { A } from './a.js';\nexport { B } from './b.js';\nconst c = await " +
    "import('./c.js');\nimport 'node:fs';\nimport x from 'koffi';\n";
  assert.deepEqual(
    importsOf('src/core/x.ts', text, '/r').map((e) => `${e.line} ${e.to}`),
    ['1 src/core/a.ts', '2 src/core/b.ts', '3 src/core/c.ts'],
  );
});

test('src/nccl is a service: the nccl plugin and the job report both use it, and it uses neither', () => {
  const edges = [
    ...importsOf('plugins/nccl/aggregate.ts', "import { bandwidth } from '../../src/nccl/bandwidth.js';\n", '/r'),
    ...importsOf('src/jobs/communication.ts', "import { rankFactors } from '../nccl/straggler.js';\n", '/r'),
    ...importsOf('src/nccl/straggler.ts', "import { x } from '../../plugins/nccl/aggregate.js';\n", '/r'),
  ];
  assert.deepEqual(violations(['plugins/nccl/aggregate.ts', 'src/jobs/communication.ts', 'src/nccl/straggler.ts'], edges), [
    'src/nccl/straggler.ts:1: imports plugins/nccl/aggregate.ts: services (rank 1) may not import plugins/nccl (rank 2)',
  ]);
});

test('src/figures sits below the ledger and the job reports, which never import each other', () => {
  const edges = [
    ...importsOf('src/ledger/ledger.ts', "import { samplesFromPoints } from '../figures/samples.js';\n", '/r'),
    ...importsOf(
      'src/jobs/report.ts',
      "import { addBuckets } from '../figures/buckets.js';\nimport { x } from '../ledger/engine-rollup.js';\n",
      '/r',
    ),
    ...importsOf('src/ledger/cost-rate.ts', "import type { Prices } from '../jobs/prices.js';\n", '/r'),
    ...importsOf(
      'src/figures/samples.ts',
      "import type { Attributes } from '../core/metrics/model.js';\nimport type { Db } from '../store/open.js';\n",
      '/r',
    ),
  ];
  assert.deepEqual(violations(['src/ledger/ledger.ts', 'src/jobs/report.ts', 'src/ledger/cost-rate.ts', 'src/figures/samples.ts'], edges), [
    'src/jobs/report.ts:2: imports src/ledger/engine-rollup.ts: src/jobs and src/ledger share ' +
      'their figures through src/figures, never each other',
    'src/ledger/cost-rate.ts:1: imports src/jobs/prices.ts: src/ledger and src/jobs share their ' +
      'figures through src/figures, never each other',
    'src/figures/samples.ts:2: imports src/store/open.ts: src/figures imports the core alone',
  ]);
});
