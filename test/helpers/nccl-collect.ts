/**
 * Runs the nccl plugin's collections in a process of their own, so that a test
 * can kill it at a deadline: a collection that blocks the event loop (a FIFO
 * opened for reading) fails the test instead of hanging it. Between
 * collections it runs the given shell commands (a user replacing a file).
 *
 * argv[2]: JSON of CollectSpec. Prints one JSON CollectReport line on stdout.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { DEFAULT_LIMITS, BudgetLedger, type Limits } from '../../src/core/limits.js';
import { createLogger } from '../../src/core/log.js';
import { PointBuffer } from '../../src/core/metrics/model.js';
import { NcclPlugin, type NcclOptions } from '../../plugins/nccl/index.js';

export interface CollectSpec {
  readonly options: NcclOptions;
  readonly limits?: Partial<Limits>;
  /** Shell commands run (as root, through sh) before collection i+1; missing: none. */
  readonly between?: readonly (string | null)[];
  readonly collections: number;
}

export interface CollectReport {
  /** The last collection's points. */
  readonly points: { name: string; value: number; attributes: Record<string, unknown> }[];
  /** Every collection's points, as JSON text (searched for leaked bytes). */
  readonly allPoints: string;
  readonly budgets: Record<string, number>;
  /** The same by budget and user: "not_owner/65534". */
  readonly byUser: Record<string, number>;
  readonly log: string[];
  /** Descriptors open before the first collection and after the last (this process's own). */
  readonly fdsBefore: number;
  readonly fdsAfter: number;
  /** Most descriptors seen right after a collection. */
  readonly fdsPeak: number;
  /** Distinct fields the collections said were unreadable: the runner logs one line for each. */
  readonly unread: number;
}

const BUDGETS = [
  'files_per_user',
  'files',
  'read_bytes',
  'series_per_communicator',
  'log_lines_per_minute',
  'not_owner',
  'not_regular_file',
] as const;

const fds = () => readdirSync('/proc/self/fd').length;

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2]!) as CollectSpec;
  const log: string[] = [];
  const logger = createLogger('debug', (l) => log.push(l));
  const budgets = new BudgetLedger(logger);
  const p = new NcclPlugin(spec.options, logger, { limits: { ...DEFAULT_LIMITS, ...spec.limits }, budgets });
  const fdsBefore = fds();
  let fdsPeak = fdsBefore;
  let all = '';
  const unread = new Set<string>();
  let last: PointBuffer | undefined;
  for (let i = 0; i < spec.collections; i++) {
    const cmd = spec.between?.[i];
    if (cmd) execFileSync('sh', ['-c', cmd], { stdio: 'inherit' });
    last = new PointBuffer();
    last.time = Date.now();
    await p.collect(last);
    fdsPeak = Math.max(fdsPeak, fds());
    all += JSON.stringify(last.points.map((x) => [x.metric.name, x.value, x.attributes]));
    all += JSON.stringify([...last.unread]);
    for (const k of last.unread.keys()) unread.add(k);
  }
  const ledger = new PointBuffer();
  budgets.collect(ledger);
  const report: CollectReport = {
    points: (last?.points ?? []).map((x) => ({ name: x.metric.name, value: x.value, attributes: x.attributes })),
    allPoints: all,
    budgets: Object.fromEntries(BUDGETS.map((b) => [b, budgets.total(b)])),
    byUser: Object.fromEntries(
      ledger.points.map((x) => [`${String(x.attributes['l9gpu.budget'])}/${String(x.attributes['user.name'])}`, x.value]),
    ),
    log,
    fdsBefore,
    fdsAfter: fds(),
    fdsPeak,
    unread: unread.size,
  };
  p.close();
  process.stdout.write(`${JSON.stringify(report)}\n`);
}

// `node --test dist/test/` runs every file under a test folder: without a spec this is no run, and does nothing
if (process.argv[2]) {
  void main().catch((e: Error) => {
    process.stderr.write(`${e.stack ?? e.message}\n`);
    process.exit(1);
  });
}
