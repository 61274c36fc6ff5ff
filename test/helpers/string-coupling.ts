/**
 * Couplings the import graph does not show (test/unit/string-coupling.test.ts):
 * SQL naming a table outside the table's one owner module (docs/architecture.md,
 * "one owner per table"), and the ledger or the shared transform reading a
 * scheduler's or a plugin's own attribute key ("the ledger knows no scheduler").
 * Both read the strings of a file as TypeScript parses them: literals,
 * templates (a substitution reads as `${}`) and `+` chains of them, so a
 * statement split over lines is one statement; comments are not read.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import ts from 'typescript';

/** Each table's one owner: the only module whose SQL names it. */
export const TABLE_OWNERS: Readonly<Record<string, string>> = {
  jobs: 'src/store/jobs.ts',
  bindings: 'src/store/jobs.ts',
  gpus: 'src/store/gpus.ts',
  meta: 'src/store/meta.ts',
  job_gpu: 'src/store/rollups.ts',
  job_gpu_series: 'src/store/rollups.ts',
  job_engine: 'src/store/counted.ts',
  job_nccl: 'src/store/counted.ts',
  engine_series: 'src/store/counted.ts',
};

/**
 * Reads that join a run's bindings to its figures live with the figures' owner: another owner's table may be
 * named there only in a statement that names one of the module's own tables too (a join, never a query of it alone).
 */
export const JOINED_READS: Readonly<Record<string, readonly string[]>> = {
  'src/store/rollups.ts': ['jobs', 'bindings'],
};

/** The migrations name every table: the schema is no query. */
export const SCHEMA_FILE = 'src/store/schema.ts';

/** The folders of the product (not the tests, benches or release tools' own checks). */
export const PRODUCT_DIRS = ['src', 'slurm', 'plugins', 'daemon'];

/** The tables the schema creates. */
export function schemaTables(schemaText: string): string[] {
  return [...schemaText.matchAll(/CREATE TABLE (\w+)/g)].map((m) => m[1]!);
}

/** A file's strings as it builds them: each literal, template or + chain of them, with its line. */
export function stringsOf(file: string, text: string): { line: number; text: string }[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const out: { line: number; text: string }[] = [];
  /** The text of a string expression, or undefined for anything else. */
  const textOf = (n: ts.Node): string | undefined => {
    if (ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n)) return n.text;
    if (ts.isTemplateExpression(n)) return n.head.text + n.templateSpans.map((s) => '${}' + s.literal.text).join('');
    if (ts.isParenthesizedExpression(n)) return textOf(n.expression);
    if (ts.isBinaryExpression(n) && n.operatorToken.kind === ts.SyntaxKind.PlusToken) {
      const l = textOf(n.left);
      const r = textOf(n.right);
      if (l === undefined && r === undefined) return undefined;
      return (l ?? '${}') + (r ?? '${}');
    }
    return undefined;
  };
  const visit = (n: ts.Node, inChain: boolean): void => {
    const t = textOf(n);
    if (t !== undefined && !inChain) out.push({ line: sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1, text: t });
    // a chain's parts are the chain's; a substitution's own strings are read on their own
    const chainPart = (c: ts.Node) =>
      t !== undefined && (ts.isBinaryExpression(n) || ts.isParenthesizedExpression(n)) && textOf(c) !== undefined;
    if (ts.isTemplateExpression(n)) {
      for (const s of n.templateSpans) visit(s.expression, false);
      return;
    }
    n.forEachChild((c) => visit(c, chainPart(c)));
  };
  visit(sf, false);
  return out;
}

/** The regular expressions a file writes as literals. */
function regexesOf(file: string, text: string): { line: number; text: string }[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const out: { line: number; text: string }[] = [];
  const visit = (n: ts.Node): void => {
    if (n.kind === ts.SyntaxKind.RegularExpressionLiteral)
      out.push({ line: sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1, text: (n as ts.RegularExpressionLiteral).text });
    n.forEachChild(visit);
  };
  visit(sf);
  return out;
}

/** What SQL names as a table: after FROM, JOIN, INTO, UPDATE, TABLE (DELETE FROM, INSERT OR REPLACE INTO...). */
const TABLE_REF = /\b(?:FROM|JOIN|INTO|UPDATE|TABLE)\s+(\$\{\}|"?[A-Za-z_]\w*"?)/g;

/**
 * Every SQL statement of a product file that names a table outside its owner
 * ("file:line: names <table>, <owner>'s"), or names a table only known at run time.
 * `tables`: the schema's; `owners`, `joined`: the maps above (the test's synthetic cases give their own).
 */
export function sqlOutsideOwner(
  file: string,
  text: string,
  tables: readonly string[] = Object.keys(TABLE_OWNERS),
  owners: Readonly<Record<string, string>> = TABLE_OWNERS,
  joined: Readonly<Record<string, readonly string[]>> = JOINED_READS,
): string[] {
  const p = file.split(sep).join('/');
  if (p === SCHEMA_FILE) return [];
  const known = new Set(tables);
  const out: string[] = [];
  for (const s of stringsOf(p, text)) {
    const named = [...s.text.matchAll(TABLE_REF)].map((m) => m[1]!.replace(/"/g, ''));
    const mine = named.some((t) => owners[t] === p);
    for (const t of named) {
      if (t === '${}') {
        // a table named at run time is no table an owner can be checked for: only an owner may build such statements
        if (!Object.values(owners).includes(p)) out.push(`${p}:${s.line}: SQL names a table only known at run time`);
        continue;
      }
      if (!known.has(t) || owners[t] === p) continue;
      if (mine && joined[p]?.includes(t)) continue;
      out.push(`${p}:${s.line}: SQL names ${t}, whose one owner is ${owners[t] ?? 'no module (add it to TABLE_OWNERS)'}`);
    }
  }
  return [...new Set(out)];
}

/** The folders that know no scheduler: the ledger and the shared transform (src/pipeline/). */
export const NEUTRAL_DIRS = ['src/ledger/', 'src/pipeline/'];

/**
 * A scheduler's attribute keys (slurm.*, k8s.*) and a plugin's own job hint (nccl.job.id: the nccl plugin
 * declares it, src/core/plugin.ts jobHint) are what a provider or a plugin writes; the ledger and the shared
 * transform read the provider-neutral run key and the declared hint instead.
 */
const SCHEDULER_KEY = /(?:^|[^\w.])(?:slurm|k8s)(?:\.|\\\.)|(?:^|[^\w.])nccl\.job\.id\b/;

/** Every string or regular expression of a ledger or pipeline file naming a scheduler's (or a plugin's) attribute key. */
export function schedulerKeysIn(file: string, text: string): string[] {
  const p = file.split(sep).join('/');
  if (!NEUTRAL_DIRS.some((d) => p.startsWith(d))) return [];
  return [...stringsOf(p, text), ...regexesOf(p, text)]
    .filter((s) => SCHEDULER_KEY.test(s.text))
    .map((s) => `${p}:${s.line}: names a scheduler's or plugin's attribute key (${JSON.stringify(s.text.slice(0, 60))})`);
}

/** Every .ts file of the product, relative to root, sorted. */
export function productFiles(root: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d)) {
      if (e === 'node_modules' || e === 'testdata' || e.startsWith('.')) continue;
      const f = join(d, e);
      if (statSync(f).isDirectory()) walk(f);
      else if (f.endsWith('.ts') && !f.endsWith('.d.ts')) out.push(relative(root, f).split(sep).join('/'));
    }
  };
  for (const d of PRODUCT_DIRS) walk(join(root, d));
  return out.sort();
}

/** A product file's text. */
export const textOf = (root: string, file: string): string => readFileSync(join(root, file), 'utf8');
