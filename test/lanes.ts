/**
 * `npm test`: every test file, in lanes (the rule is in test/README.md).
 *
 *   unit    files that run only in the test process: several at a time, last,
 *           at nice 19 beside alone and wire.
 *   slurm   the real-Slurm suites, one per release: each cluster has its own
 *           ports, so the three run at once (they mostly wait for jobs).
 *   packages the packages installed into roots of their own (rollout.test.ts),
 *           beside slurm: it mostly waits on dpkg and the disk.
 *   system  daemons, CLI children and real components on their own state
 *           folders and ports: three files at a time, once slurm and lint
 *           are done (beside serial, bundled and the end of packages).
 *   serial  one file at a time, beside system.
 *   bundled the product's own subset (BUNDLED_FILES) once more, beside
 *           system, its hooks, CLI and daemon run from a release tree
 *           assembled as `npm run package` does, on the Node.js the package
 *           ships.
 *   alone, wire: one file at a time each, the two side by side, last
 *           (AFTER says which lane waits for which).
 *
 * Each lane is its own `node --test` (TAP). Its output is printed whole when
 * it ends (lanes never interleave), its top-level tests numbered on from the
 * lanes printed before it, and its own summary replaced by one summary of the whole
 * run in the runner's format (`# tests`, `# pass`, `# fail`, ...). The exit
 * status is non-zero if any lane failed.
 *
 * `node dist/test/lanes.js dist/test/a.test.js ...` runs only those files,
 * each in its lane.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));

/**
 * A file's lane is its folder:
 *
 *   test/unit/      runs only in the test process on its own temporary files: no
 *                   daemon or CLI child, no listening socket, no real component, no
 *                   fixed port or path outside its temporary folder, no root-only
 *                   machine state (a compiler writing its own temporary folder, as
 *                   the fake NVML's build does, is allowed); test/unit/lanes.test.ts
 *                   checks each one's imports against the rule.
 *   test/slurm/     the real-Slurm suites, one per release: each cluster has its own
 *                   ports, MariaDB, munge and chroot lock, so they run side by side.
 *   test/packages/  the packages installed into roots of their own (chroot, unshare,
 *                   rpm --root): it mostly waits on dpkg and the disk.
 *   test/system/    daemons, CLI children and real components, each on its own
 *                   temporary state folder and free ports (L9GPU_TEST_SYSTEM_AT_ONCE
 *                   of them at a time, 3 by default), after slurm and lint.
 *   test/serial/    files that share something of the node's with each other: the
 *                   default state folder /var/lib/l9gpu (its lock, store and
 *                   socket), or the machine-wide discovery of engines and NCCL logs
 *                   (every process of the node, the user nobody's limits): one at a
 *                   time, beside the system lane (whose files do neither).
 *   test/alone/     the user nobody's attacks, with bounds on the daemon's own
 *                   latency, memory and open files (pkill of nobody's helpers): one
 *                   at a time, last, beside the wire lane only.
 *   test/wire/      floods of the daemon's listeners from loopback peers (tens of
 *                   thousands of connections, root's, no user nobody), with the same
 *                   bounds: one at a time, last, beside the alone lane only.
 *   test/lint/      the formatter's and the linter's checks over the sources (their
 *                   own children, reading files only).
 */
export const FOLDERS = ['unit', 'slurm', 'packages', 'system', 'serial', 'alone', 'wire', 'lint'] as const;
export type Folder = (typeof FOLDERS)[number];

/**
 * The bundled lane: files whose hooks, CLI and daemon children are the
 * product under test (PRODUCT, test/helpers/paths.ts), run again on a release
 * tree and its own Node.js (the test process stays on the machine's). The
 * packages themselves are installed and run by test/packages/rollout.test.ts.
 */
export const BUNDLED_FILES = ['system/hooks.test.js', 'system/smoke.test.js'];

interface Lane {
  name: string;
  concurrency: number;
  files: string[];
}

/** `unit/a.test.js` for a path ending in `.../test/unit/a.test.js` (or given so). */
export function laneKey(file: string): string {
  return `${basename(dirname(file))}/${basename(file)}`;
}

/** The folder a file's lane is named by (a file outside the folders runs one at a time, in the serial lane). */
export function folderOf(file: string): Folder {
  const dir = basename(dirname(file));
  return (FOLDERS as readonly string[]).includes(dir) ? (dir as Folder) : 'serial';
}

/** The lanes for these files (every dist/test/<folder>/*.test.js by default). */
export function lanesFor(files: string[]): Lane[] {
  const of = (folder: Folder) => files.filter((f) => folderOf(f) === folder);
  const slurm = of('slurm');
  return [
    { name: 'unit', concurrency: Math.max(2, availableParallelism()), files: of('unit') },
    // the three suites side by side (each cluster has its own ports, MariaDB, munge and chroot lock): 190-200 s
    // against 476 s one after the other on 2 cores. L9GPU_TEST_SLURM_AT_ONCE=1 runs them one at a time (a suspected
    // interaction between two clusters is ruled in or out that way)
    {
      name: 'slurm',
      concurrency: Math.max(1, Math.min(slurm.length, Number(process.env.L9GPU_TEST_SLURM_AT_ONCE) || slurm.length)),
      files: slurm,
    },
    { name: 'packages', concurrency: 1, files: of('packages') },
    { name: 'lint', concurrency: 1, files: of('lint') },
    // three at a time once the Slurm suites are done: 115 s against 336 s one at a time. Beside the Slurm suites too, the
    // daemons with 100 ms plugin timeouts and the ctld worker's settling waits failed (L9GPU_TEST_SYSTEM_AT_ONCE=1: one
    // at a time)
    { name: 'system', concurrency: Number(process.env.L9GPU_TEST_SYSTEM_AT_ONCE) || 3, files: of('system') },
    { name: 'serial', concurrency: 1, files: of('serial') },
    { name: 'alone', concurrency: 1, files: of('alone') },
    { name: 'wire', concurrency: 1, files: of('wire') },
    { name: 'bundled', concurrency: 1, files: files.filter((f) => BUNDLED_FILES.includes(laneKey(f))) },
  ];
}

/**
 * The lanes each lane waits for: slurm, packages and lint start at once; system, serial and bundled once the Slurm
 * suites (the heaviest load) and lint are done, beside the end of the packages lane (its installs mostly wait on dpkg
 * and the disk); alone and wire last, side by side (their floods mostly wait on their own deadlines: 5-30% of the
 * machine's CPU), with the unit lane beside them at nice 19 on the CPU they leave (NICE).
 */
export const AFTER: Record<string, readonly string[]> = {
  slurm: [],
  packages: [],
  lint: [],
  system: ['slurm', 'lint'],
  serial: ['slurm', 'lint'],
  bundled: ['slurm', 'lint'],
  alone: ['system', 'serial', 'bundled', 'packages'],
  wire: ['system', 'serial', 'bundled', 'packages'],
  unit: ['system', 'serial', 'bundled', 'packages'],
};

/**
 * The niceness a lane's processes run at, for the lanes with no deadline: the formatter and linter take the CPU the
 * Slurm suites leave (their clusters have settling waits), and the unit files the CPU the floods of alone and wire
 * leave (at 19 a runnable process weighs 15 against a nice-0 one's 1024: the floods' daemons keep their CPU, as
 * their bounds on latency need). A lane not named runs at the runner's own. The packages lane is not niced: at 10
 * it took 598 s against 336-505 s, and alone waits for it.
 */
export const NICE: Record<string, number> = { lint: 10, unit: 19 };

const SUMMARY = ['tests', 'suites', 'pass', 'fail', 'cancelled', 'skipped', 'todo'] as const;
type Counts = Record<(typeof SUMMARY)[number], number>;

interface LaneResult {
  lane: Lane;
  code: number | null;
  output: string;
  ms: number;
}

/**
 * The release tree the bundled lane runs (src/release/release-tree.ts, as
 * `npm run package` assembles it: the bundled Node.js, better-sqlite3 built
 * for it), in a temporary folder.
 */
async function releaseTree(): Promise<string> {
  const root = join(HERE, '..', '..');
  const { assembleTree, readBuildInfo } = await import('../src/release/release-tree.js');
  const { findRuntime } = await import('../src/release/runtime.js');
  const runtime = findRuntime(root);
  const tree = join(mkdtempSync(join(tmpdir(), 'l9gpu-bundled-')), 'l9gpu');
  assembleTree(root, tree, readBuildInfo(root, runtime), runtime);
  return tree;
}

async function runLane(lane: Lane): Promise<LaneResult> {
  const t0 = Date.now();
  process.stderr.write(`# lane ${lane.name}: ${lane.files.length} file(s), ${lane.concurrency} at a time\n`);
  let env = process.env;
  let tree: string | undefined;
  if (lane.name === 'bundled') {
    try {
      tree = await releaseTree();
    } catch (e) {
      // no summary: the lane counts as failed
      return {
        lane,
        code: 1,
        output: `not ok 1 - the release tree for the bundled lane\n# ${(e as Error).message.split('\n').join('\n# ')}\n`,
        ms: Date.now() - t0,
      };
    }
    env = { ...process.env, L9GPU_TEST_TREE: tree };
  }
  try {
    return await runFiles(lane, env, t0);
  } finally {
    if (tree) rmSync(dirname(tree), { recursive: true, force: true });
  }
}

function runFiles(lane: Lane, env: NodeJS.ProcessEnv, t0: number): Promise<LaneResult> {
  return new Promise((resolve, reject) => {
    const argv = [process.execPath, '--test', `--test-concurrency=${lane.concurrency}`, '--test-reporter=tap', ...lane.files];
    // nice(1), not os.setPriority after the spawn: Linux sets a niceness per thread, and the child starts its threads at once
    const nice = NICE[lane.name];
    const [file, ...args] = nice ? ['nice', '-n', String(nice), ...argv] : argv;
    const child = spawn(file!, args, {
      env,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (output += d));
    child.on('error', reject);
    child.on('close', (code) => {
      process.stderr.write(`# lane ${lane.name} done in ${((Date.now() - t0) / 1000).toFixed(0)} s, exit ${code}\n`);
      resolve({ lane, code, output, ms: Date.now() - t0 });
    });
  });
}

/**
 * One lane's TAP without its header, plan and summary, top-level tests
 * numbered from `from`; and its summary counts (a lane that printed none,
 * having crashed, counts as a failure).
 */
export function relabel(tap: string, from: number): { text: string; counts: Counts; top: number } {
  const counts = Object.fromEntries(SUMMARY.map((k) => [k, 0])) as Counts;
  let seen = false;
  let top = 0;
  const keep: string[] = [];
  for (const line of tap.split('\n')) {
    const s = /^# (tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) ([\d.]+)$/.exec(line);
    if (s) {
      if (s[1] !== 'duration_ms') counts[s[1] as keyof Counts] = Number(s[2]);
      seen = true;
      continue;
    }
    if (line === 'TAP version 13' || /^1\.\.\d+$/.test(line)) continue;
    const t = /^(not ok|ok) \d+( - .*)?$/.exec(line);
    if (t) keep.push(`${t[1]} ${from + ++top}${t[2] ?? ''}`);
    else keep.push(line);
  }
  if (!seen) counts.fail += 1;
  return { text: keep.join('\n').replace(/\n+$/, ''), counts, top };
}

async function main(): Promise<number> {
  const t0 = Date.now();
  const asked = process.argv.slice(2);
  const files = asked.length
    ? asked
    : FOLDERS.flatMap((d) =>
        readdirSync(join(HERE, d))
          .filter((f) => f.endsWith('.test.js'))
          .sort()
          .map((f) => join(HERE, d, f)),
      );
  const lanes = lanesFor(files).filter((l) => l.files.length > 0);
  const total = Object.fromEntries(SUMMARY.map((k) => [k, 0])) as Counts;
  let n = 0;
  let failed = false;
  // each lane's output as soon as it ends, numbered on from what was printed before it
  const print = (r: LaneResult): void => {
    const { text, counts, top } = relabel(r.output, n);
    n += top;
    if (text) process.stdout.write(`# lane ${r.lane.name} (${r.lane.files.length} files, ${(r.ms / 1000).toFixed(0)} s)\n${text}\n`);
    for (const k of SUMMARY) total[k] += counts[k];
    if (r.code !== 0 || counts.fail > 0 || counts.cancelled > 0) failed = true;
  };
  process.stdout.write('TAP version 13\n');
  // a lane waits for those of AFTER that this run has (a lane with no files is done at once)
  const done = new Map<string, Promise<void>>();
  const start = (l: Lane): Promise<void> => {
    let p = done.get(l.name);
    if (!p) {
      const before = lanes.filter((b) => AFTER[l.name]!.includes(b.name));
      p = Promise.all(before.map(start)).then(async () => print(await runLane(l)));
      done.set(l.name, p);
    }
    return p;
  };
  await Promise.all(lanes.map(start));
  process.stdout.write(`1..${n}\n`);
  for (const k of SUMMARY) process.stdout.write(`# ${k} ${total[k]}\n`);
  process.stdout.write(`# duration_ms ${Date.now() - t0}\n`);
  return failed ? 1 : 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) process.exitCode = await main();
