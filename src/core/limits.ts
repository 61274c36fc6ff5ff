/**
 * Budgets on what local users can make the root daemon do. A node is shared:
 * NCCL dump folders, engine pages, the jobs socket and job names are in users'
 * hands, so each has a bound here. Hitting one costs the source that hit it
 * (its files are not followed, its series dropped, its request refused) and
 * nothing else: the hit is counted per budget and user (or source), exported
 * as l9gpu.budget.exceeded, and said in one log line per budget and user.
 *
 * The [limits] section holds the numbers; docs/reliability.md says how to
 * raise them.
 */
import type { Config } from './config/load.js';
import { readSection, sectionDefaults, type SectionValues } from './config/read.js';
import { defineSection } from './config/schema.js';
import type { Logger } from './log.js';
import type { Emitter } from './metrics/model.js';
import { metric } from './metrics/registry.js';

export const LIMITS_SECTION = defineSection({
  name: 'limits',
  description:
    'Bounds on what local users can make the daemon (root) do: files followed in their folders, ' +
    'bytes read, series taken from their engines and NCCL communicators, label lengths, log ' +
    'lines, and requests on the jobs socket. A source past a bound loses what is past it, is ' +
    'counted in l9gpu.budget.exceeded{l9gpu.budget, user.name} and said once; nothing else of ' +
    'the daemon is affected.',
  keys: [
    {
      key: 'files_per_user',
      type: 'int',
      default: 64,
      min: 1,
      description:
        "NCCL Inspector files (rank logs and .prom files) followed for one user at a time; a user's " +
        'files past it are not read (a job of 64 ranks on one node is far more than a node holds ' +
        'GPUs).',
    },
    { key: 'files', type: 'int', default: 1024, min: 1, description: 'NCCL Inspector files followed on the node in all.' },
    {
      key: 'read_bytes',
      type: 'bytes',
      default: 64 << 20,
      min: 4096,
      example: '64MiB',
      description:
        "Bytes read from users' NCCL files in one collection, all files together (a backlog is caught up over later collections).",
    },
    {
      key: 'series_per_endpoint',
      type: 'int',
      default: 3_000,
      min: 10,
      description:
        "Series taken from one engine endpoint's page in one scrape (a real vLLM or SGLang page has " +
        'hundreds to two thousand); the page is read to 4 lines a series and no further, and the ' +
        'rest is dropped. Each series costs its share of every /metrics render and OTLP export ' +
        "(3,000 are ~0.5 MB of /metrics and ~40 MB of the daemon's memory); the largest real page " +
        'recorded here (vLLM 0.10, several models) has 1,930.',
    },
    {
      key: 'series_per_user',
      type: 'int',
      default: 6_000,
      min: 10,
      description:
        "Series taken from the engine endpoints of one user's processes in one collection, all endpoints together (engines = auto).",
    },
    {
      key: 'engine_ports_per_user',
      type: 'int',
      default: 16,
      min: 1,
      description:
        "Ports of one user's processes asked for an engine page under engines = auto (a real engine " +
        'listens on one to a few); a user whose processes named like an engine listen on more gets ' +
        'the first ones asked, the rest counted and not.',
    },
    {
      key: 'page_bytes_per_user',
      type: 'bytes',
      default: 32 << 20,
      min: 4096,
      example: '32MiB',
      description:
        "Bytes of the engine pages of one user's processes held at once, all their endpoints " +
        'together (each is read whole before it is parsed): a page that would pass it is that ' +
        "endpoint's error for the scrape. max_page_size bounds one page.",
    },
    {
      key: 'series_per_communicator',
      type: 'int',
      default: 4_096,
      min: 10,
      description: "NCCL series (rank x collective x size bucket) kept for one communicator; the NCCL plugin's max_series bounds them all.",
    },
    {
      key: 'nccl_series_per_user',
      type: 'int',
      default: 5_000,
      min: 10,
      description:
        "NCCL series kept from one user's files, all their communicators together (a file picks its " +
        'communicator ids, so series_per_communicator alone does not stop one user filling the NCCL ' +
        "plugin's max_series); root's files are bounded by max_series only.",
    },
    {
      key: 'label_length',
      type: 'int',
      default: 256,
      min: 16,
      max: 65536,
      description:
        'Longest value a user-controlled attribute carries (a job name, an engine\'s model name): a longer one is cut and ends in "...".',
    },
    {
      key: 'log_lines_per_minute',
      type: 'int',
      default: 10,
      min: 1,
      description:
        'Log lines about one user-controlled source (a file, an endpoint, a socket client) in one ' +
        'minute; the rest are counted and the next line says how many were held back.',
    },
    {
      key: 'jobs_connections_per_user',
      type: 'int',
      default: 8,
      min: 1,
      description: 'Open connections of one uid to the jobs socket; more are refused at once.',
    },
    { key: 'jobs_connections', type: 'int', default: 128, min: 1, description: 'Open connections to the jobs socket in all.' },
    {
      key: 'jobs_request_timeout',
      type: 'duration',
      default: 5,
      min: 0.1,
      max: 300,
      example: '5s',
      description: 'Whole time a jobs socket client has to send its request: bytes trickled in do not extend it.',
    },
    {
      key: 'jobs_rows',
      type: 'int',
      default: 1000,
      min: 1,
      description: 'Most jobs in one answer of the jobs socket (`l9gpu jobs` pages past it).',
    },
  ],
});

export interface Limits {
  readonly filesPerUser: number;
  readonly files: number;
  readonly readBytes: number;
  readonly seriesPerEndpoint: number;
  readonly seriesPerUser: number;
  readonly enginePortsPerUser: number;
  readonly pageBytesPerUser: number;
  readonly seriesPerCommunicator: number;
  readonly ncclSeriesPerUser: number;
  readonly labelLength: number;
  readonly logLinesPerMinute: number;
  readonly jobsConnectionsPerUser: number;
  readonly jobsConnections: number;
  readonly jobsRequestTimeoutMs: number;
  readonly jobsRows: number;
}

/** The bounds from the section's values (its numbers as the schema parsed them). */
function limitsOf(n: SectionValues<typeof LIMITS_SECTION>): Limits {
  return {
    filesPerUser: n.files_per_user,
    files: n.files,
    readBytes: n.read_bytes,
    seriesPerEndpoint: n.series_per_endpoint,
    seriesPerUser: n.series_per_user,
    enginePortsPerUser: n.engine_ports_per_user,
    pageBytesPerUser: n.page_bytes_per_user,
    seriesPerCommunicator: n.series_per_communicator,
    ncclSeriesPerUser: n.nccl_series_per_user,
    labelLength: n.label_length,
    logLinesPerMinute: n.log_lines_per_minute,
    jobsConnectionsPerUser: n.jobs_connections_per_user,
    jobsConnections: n.jobs_connections,
    jobsRequestTimeoutMs: n.jobs_request_timeout * 1000,
    jobsRows: n.jobs_rows,
  };
}

export function limitsFrom(c: Config): Limits {
  return limitsOf(readSection(c, LIMITS_SECTION));
}

/** The schema's defaults, for code run without a configuration (tests, the CLI's own tools): one place for each number. */
export const DEFAULT_LIMITS: Limits = limitsOf(sectionDefaults(LIMITS_SECTION));

/** Budget names, as l9gpu.budget carries them. */
export type BudgetName =
  | 'files_per_user'
  | 'files'
  | 'read_bytes'
  | 'series_per_endpoint'
  | 'series_per_user'
  | 'engine_ports_per_user'
  | 'page_bytes_per_user'
  | 'series_per_communicator'
  | 'nccl_series_per_user'
  /** [nccl] max_series: the NCCL plugin's series on the node in all. */
  | 'nccl_max_series'
  | 'label_length'
  | 'log_lines_per_minute'
  | 'jobs_connections_per_user'
  | 'jobs_connections'
  | 'jobs_request_timeout'
  | 'jobs_rows'
  /** Not a number to raise: a user's file or page that is not theirs to give (a link, a FIFO, another user's job). */
  | 'not_owner'
  | 'not_regular_file';

const EXCEEDED = metric('l9gpu.budget.exceeded');
/** Keys kept for the metric: past this many, new ones are folded into user.name="(other)" (the ledger is itself bounded). */
const MAX_KEYS = 1024;

/**
 * Counts budget hits per (budget, user) and says the first of each. One per
 * agent, shared by plugins, sinks and the jobs socket; the self plugin
 * exports it.
 */
export class BudgetLedger {
  private readonly counts = new Map<string, { budget: BudgetName; user: string; n: number }>();
  private readonly start = Date.now();

  constructor(private readonly log?: Logger) {}

  /**
   * A hit: `user` is the user (name or uid) or source that hit it; `detail`
   * goes to the log the first time this budget is hit by this user.
   */
  hit(budget: BudgetName, user: string, detail: string, n = 1): void {
    let key = `${budget}\0${user}`;
    let c = this.counts.get(key);
    if (!c) {
      if (this.counts.size >= MAX_KEYS) {
        user = '(other)';
        key = `${budget}\0${user}`;
        c = this.counts.get(key);
      }
      if (!c) {
        c = { budget, user, n: 0 };
        this.counts.set(key, c);
        this.log?.warn(`limit reached: ${detail}`, {
          budget,
          user,
          raise:
            budget === 'not_owner' || budget === 'not_regular_file'
              ? undefined
              : budget === 'nccl_max_series'
                ? '[nccl] max_series'
                : `[limits] ${budget}`,
        });
      }
    }
    c.n += n;
  }

  /** Hits so far of one budget (all users), for tests and doctor. */
  total(budget: BudgetName): number {
    let n = 0;
    for (const c of this.counts.values()) if (c.budget === budget) n += c.n;
    return n;
  }

  collect(out: Emitter): void {
    for (const c of this.counts.values()) out.add(EXCEEDED, c.n, { 'l9gpu.budget': c.budget, 'user.name': c.user }, this.start);
  }
}

const MAX_SOURCES = 4096;
/** The allowance the sources past MAX_SOURCES share (no source is a NUL). */
const OTHER_SOURCES = '\0';

/**
 * Log lines about one user-controlled source, at most `perMinute` a minute:
 * the rest are held back and counted, and the next line said says how many.
 * Bounded in the sources it remembers (the oldest minute's are forgotten).
 */
export class LogRate {
  private readonly seen = new Map<string, { minute: number; n: number; held: number }>();
  constructor(
    private readonly perMinute: number,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Whether a line about `source` may be said now; `held` is what was held back before it.
   * Past 4,096 sources in one minute the rest share one allowance, so their lines are still
   * limited and what they held back is still told.
   */
  allow(source: string): { ok: boolean; held: number } {
    const minute = Math.floor(this.now() / 60_000);
    let s = this.seen.get(source);
    if (!s && this.seen.size >= MAX_SOURCES) {
      for (const [k, v] of this.seen) if (v.minute !== minute && k !== OTHER_SOURCES) this.seen.delete(k);
      if (this.seen.size >= MAX_SOURCES) s = this.seen.get((source = OTHER_SOURCES));
    }
    if (!s || s.minute !== minute) {
      const held = s?.held ?? 0;
      s = { minute, n: 0, held };
      this.seen.set(source, s);
    }
    if (s.n >= this.perMinute) {
      s.held++;
      return { ok: false, held: 0 };
    }
    s.n++;
    const held = s.held;
    s.held = 0;
    return { ok: true, held };
  }
}
