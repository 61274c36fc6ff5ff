/**
 * The architecture's layers as data, and a checker over the real import graph
 * (docs/architecture.md draws the same picture). A file may import its own
 * group and any lower rank; at rank 2 the groups are walled off from each
 * other (a plugin never imports another plugin, slurm/ or the daemon), and
 * only the CLI, bench and tests sit above the composition root. Inside the
 * services, the per-job figures go one way (WALLED).
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';

export interface Layer {
  readonly group: string;
  readonly rank: number;
}

/** Which layer a repository-relative path belongs to; undefined: in no layer (an error of its own). */
export function layerOf(path: string): Layer | undefined {
  const p = path.split(sep).join('/');
  if (p.startsWith('src/core/')) return { group: 'core', rank: 0 };
  // src/nccl: NCCL's figures (bandwidth factors, stragglers), shared by the nccl plugin and the job report
  if (serviceOf(p) !== undefined) return { group: 'services', rank: 1 };
  // the composition root, and its light half (the config schema and the providers the CLI reads a configuration with)
  if (p === 'daemon/catalog.ts' || p === 'daemon/schema.ts') return { group: 'root', rank: 3 };
  if (p.startsWith('daemon/')) return { group: 'runtime', rank: 2 };
  const plugin = /^plugins\/([^/]+)\//.exec(p);
  if (plugin) return { group: `plugins/${plugin[1]}`, rank: 2 };
  if (p.startsWith('slurm/')) return { group: 'slurm', rank: 2 };
  const provider = /^src\/attribution\/([^/]+)\//.exec(p);
  if (provider) return { group: `attribution/${provider[1]}`, rank: 2 };
  if (/^src\/(cli|commands)\//.test(p)) return { group: 'cli', rank: 4 };
  // the release builder sits beside the CLI: it packages the product and is no part of it
  if (p.startsWith('src/release/')) return { group: 'release', rank: 4 };
  if (/^(bench|test)\//.test(p)) return { group: 'tools', rank: 5 };
  return undefined;
}

const SERVICES = ['pipeline', 'sinks', 'store', 'ledger', 'jobs', 'scrape', 'health', 'nccl', 'figures'];

/** The service folder (src/<name>/) a path is in, or undefined. */
function serviceOf(path: string): string | undefined {
  const m = /^src\/([^/]+)\//.exec(path);
  return m && SERVICES.includes(m[1]!) ? m[1] : undefined;
}

/**
 * The services use each other freely but for the per-job figures, which go
 * one way: src/figures (the rollup fold, its samples, prices, histogram
 * buckets) imports the core alone; the ledger, which writes the figures, and
 * the job reports, which read them, both import it and never each other.
 */
const WALLED: Readonly<Record<string, readonly string[]>> = {
  figures: SERVICES.filter((s) => s !== 'figures'),
  ledger: ['jobs'],
  jobs: ['ledger'],
};

/** Why a service may not import another service's file, or undefined where it may. */
function serviceWall(from: string, to: string): string | undefined {
  const a = serviceOf(from);
  const b = serviceOf(to);
  if (a === undefined || b === undefined || !WALLED[a]?.includes(b)) return undefined;
  return a === 'figures'
    ? 'src/figures imports the core alone'
    : `src/${a} and src/${b} share their figures through src/figures, never each other`;
}

export function allowed(from: Layer, to: Layer): boolean {
  if (from.group === to.group) return true;
  if (to.rank < from.rank) return true;
  // the core and the services are each one layer: their folders may use each other
  return from.rank === to.rank && from.rank <= 1;
}

export interface Edge {
  readonly from: string;
  readonly line: number;
  readonly to: string;
}

/** Every relative import of a TypeScript file (static, dynamic, re-export, type-only), resolved to a .ts path. */
export function importsOf(file: string, text: string, root: string): Edge[] {
  const info = ts.preProcessFile(text, true, true);
  const out: Edge[] = [];
  for (const ref of info.importedFiles) {
    if (!ref.fileName.startsWith('.')) continue;
    const target = resolve(dirname(join(root, file)), ref.fileName.replace(/\.js$/, '.ts'));
    const line = text.slice(0, ref.pos).split('\n').length;
    out.push({ from: file, line, to: relative(root, target) });
  }
  return out;
}

export function sourceFiles(root: string, dirs: readonly string[]): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const name of readdirSync(join(root, d))) {
      const rel = join(d, name);
      if (name === 'node_modules' || name === 'testdata' || name === 'fixtures') continue;
      if (statSync(join(root, rel)).isDirectory()) walk(rel);
      else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(rel);
    }
  };
  for (const d of dirs) walk(d);
  return out.sort();
}

/** Imports against the layer directions, and files in no layer. */
export function violations(files: readonly string[], edges: readonly Edge[]): string[] {
  const out: string[] = [];
  for (const f of files) if (!layerOf(f)) out.push(`${f}: in no layer (see test/helpers/layers.ts)`);
  for (const e of edges) {
    const a = layerOf(e.from);
    const b = layerOf(e.to);
    if (!a || !b) continue;
    if (!allowed(a, b))
      out.push(`${e.from}:${e.line}: imports ${e.to}: ${a.group} (rank ${a.rank}) may not import ${b.group} (rank ${b.rank})`);
    else {
      const wall = serviceWall(e.from, e.to);
      if (wall) out.push(`${e.from}:${e.line}: imports ${e.to}: ${wall}`);
    }
  }
  return out;
}

/** Import loops (strongly connected components of more than one file, or a file importing itself), each as a path. */
export function loops(edges: readonly Edge[]): string[] {
  const next = new Map<string, Edge[]>();
  for (const e of edges) {
    let l = next.get(e.from);
    if (!l) next.set(e.from, (l = []));
    l.push(e);
  }
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[] = [];
  let n = 0;
  const visit = (v: string): void => {
    index.set(v, n);
    low.set(v, n++);
    stack.push(v);
    onStack.add(v);
    for (const e of next.get(v) ?? []) {
      if (!index.has(e.to)) {
        visit(e.to);
        low.set(v, Math.min(low.get(v)!, low.get(e.to)!));
      } else if (onStack.has(e.to)) low.set(v, Math.min(low.get(v)!, index.get(e.to)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const scc: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      scc.push(w);
    } while (w !== v);
    const self = (next.get(v) ?? []).find((e) => e.to === v);
    if (scc.length > 1 || self) {
      const inScc = new Set(scc);
      const at = edges.filter((e) => inScc.has(e.from) && inScc.has(e.to)).map((e) => `${e.from}:${e.line} -> ${e.to}`);
      out.push(`import loop among ${scc.sort().join(', ')}: ${at.join('; ')}`);
    }
  };
  for (const v of [...next.keys()].sort()) if (!index.has(v)) visit(v);
  return out;
}

export const LAYERED_DIRS = ['src', 'daemon', 'plugins', 'slurm', 'bench', 'test'];

export function repositoryEdges(root: string): { files: string[]; edges: Edge[] } {
  const files = sourceFiles(root, LAYERED_DIRS);
  const edges = files.flatMap((f) => importsOf(f, readFileSync(join(root, f), 'utf8'), root));
  return { files, edges };
}
