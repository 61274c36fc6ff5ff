/**
 * What the import graph does not show (docs/architecture.md): each store table
 * has one owner module, the only one whose SQL names it; and the ledger and
 * the shared attribution transform know no scheduler (they read the
 * provider-neutral run key, and a plugin's declared job hint, never a
 * slurm.*, k8s.* or plugin's own key).
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  JOINED_READS,
  SCHEMA_FILE,
  TABLE_OWNERS,
  productFiles,
  schedulerKeysIn,
  schemaTables,
  sqlOutsideOwner,
  stringsOf,
  textOf,
} from '../helpers/string-coupling.js';
import { ROOT } from '../helpers/paths.js';

const TABLES = schemaTables(readFileSync(join(ROOT, SCHEMA_FILE), 'utf8'));

test('every table of the schema has one owner module, and the owners exist', () => {
  assert.ok(TABLES.length >= 9, `the schema's tables were read (${TABLES.join(', ')})`);
  assert.deepEqual([...TABLES].sort(), Object.keys(TABLE_OWNERS).sort());
  for (const owner of new Set([...Object.values(TABLE_OWNERS), ...Object.keys(JOINED_READS)]))
    assert.ok(existsSync(join(ROOT, owner)), `${owner} exists`);
});

test('no product file names a table in SQL outside its owner', () => {
  const files = productFiles(ROOT);
  assert.ok(files.length > 100 && files.includes('src/store/jobs.ts'), `the walk found the product (${files.length} files)`);
  assert.deepEqual(
    files.flatMap((f) => sqlOutsideOwner(f, textOf(ROOT, f), TABLES)),
    [],
  );
  // the owners do hold their tables' statements (the check reads what it should)
  const named = (f: string, t: string) =>
    stringsOf(f, textOf(ROOT, f)).some((s) => new RegExp(`\\b(FROM|INTO|UPDATE) ${t}\\b`).test(s.text));
  for (const [t, owner] of Object.entries(TABLE_OWNERS)) assert.ok(named(owner, t), `${owner} names ${t}`);
});

test('a query of bindings added to src/jobs/ is found, in a literal, a template or a chain, and not in a comment', () => {
  const text = [
    "import type { Db } from '../store/open.js';",
    '// SELECT * FROM job_gpu: a comment is no statement',
    'export const a = (db: Db) => db.prepare("SELECT * FROM bindings WHERE end_time IS NULL").all();',
    'export const b = (db: Db, t: string) => db.prepare(`SELECT b.gpu_uuid FROM jobs j JOIN bindings b USING (job_id) ${t}`).all();',
    "export const c = 'SELECT COUNT(*) FROM ' +",
    "  'job_nccl WHERE job_id = ?';",
    'export const d = (t: string) => `DELETE FROM ${t} WHERE job_id = ?`;',
    "export const e = 'rows from jobs'; // English, not SQL",
  ].join('\n');
  assert.deepEqual(sqlOutsideOwner('src/jobs/x.ts', text, TABLES), [
    'src/jobs/x.ts:3: SQL names bindings, whose one owner is src/store/jobs.ts',
    'src/jobs/x.ts:4: SQL names jobs, whose one owner is src/store/jobs.ts',
    'src/jobs/x.ts:4: SQL names bindings, whose one owner is src/store/jobs.ts',
    'src/jobs/x.ts:5: SQL names job_nccl, whose one owner is src/store/counted.ts',
    'src/jobs/x.ts:7: SQL names a table only known at run time',
  ]);
  // the owner itself may; a joined read only beside its own table, never alone
  assert.deepEqual(sqlOutsideOwner('src/store/jobs.ts', text, TABLES), [
    'src/store/jobs.ts:5: SQL names job_nccl, whose one owner is src/store/counted.ts',
  ]);
  const joins = [
    "export const j = 'SELECT g.state FROM bindings b LEFT JOIN job_gpu g USING (job_id, run_key, gpu_uuid)';",
    "export const k = 'SELECT COUNT(*) FROM bindings';",
  ].join('\n');
  assert.deepEqual(sqlOutsideOwner('src/store/rollups.ts', joins, TABLES), [
    'src/store/rollups.ts:2: SQL names bindings, whose one owner is src/store/jobs.ts',
  ]);
  // a table the map does not know yet is said so
  assert.deepEqual(sqlOutsideOwner('src/jobs/y.ts', "const q = 'SELECT * FROM job_disk';", [...TABLES, 'job_disk']), [
    'src/jobs/y.ts:1: SQL names job_disk, whose one owner is no module (add it to TABLE_OWNERS)',
  ]);
});

test('the ledger and the shared transform read no scheduler attribute key', () => {
  const files = productFiles(ROOT).filter((f) => f.startsWith('src/ledger/') || f.startsWith('src/pipeline/'));
  assert.ok(files.includes('src/ledger/cost-rate.ts') && files.includes('src/pipeline/bound-attribution.ts'), files.join(', '));
  assert.deepEqual(
    files.flatMap((f) => schedulerKeysIn(f, textOf(ROOT, f))),
    [],
  );
});

test("a read of slurm.job.id, a k8s key or the nccl plugin's hint in src/ledger/ or src/pipeline/ is found", () => {
  const text = [
    '// slurm.job.id in a comment is no read',
    "export const a = (x: Record<string, unknown>) => x['slurm.job.id'] ?? x['k8s.pod.name'];",
    'export const b = (x: Record<string, unknown>) => x[`slurm.partition`];',
    'export const c = /^(?:slurm\\.|k8s\\.)/;',
    "export const d = (x: Record<string, unknown>) => x['nccl.job.id'];",
    "export const e = (x: Record<string, unknown>) => x['gpu.uuid'] ?? x['nccl.comm.id'];",
  ].join('\n');
  assert.deepEqual(
    schedulerKeysIn('src/ledger/x.ts', text).map((f) => f.slice(0, f.indexOf(' '))),
    ['src/ledger/x.ts:2:', 'src/ledger/x.ts:2:', 'src/ledger/x.ts:3:', 'src/ledger/x.ts:5:', 'src/ledger/x.ts:4:'],
  );
  assert.equal(schedulerKeysIn('src/pipeline/y.ts', text).length, 5);
  // a provider's own folder writes its keys
  assert.deepEqual(schedulerKeysIn('slurm/attribution.ts', text), []);
  assert.deepEqual(schedulerKeysIn('src/attribution/kubernetes/manifest.ts', text), []);
});
