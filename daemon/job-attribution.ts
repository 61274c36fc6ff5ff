/**
 * The agent's job side: the attribution provider the configuration resolves
 * to, the store it shares with the job ledger, and the socket that answers
 * users' `l9gpu jobs` from that store. Built once at start, swapped whole
 * when a reload changes their settings, closed at stop. The store and its
 * native module load only when a provider is on: a node without a scheduler
 * never pays for them.
 */
import { lstatSync, statSync } from 'node:fs';
import { noneProvider, type AttributionProvider } from '../src/core/attribution.js';
import type { Config } from '../src/core/config/load.js';
import type { Logger } from '../src/core/log.js';
import { limitsFrom, type BudgetLedger } from '../src/core/limits.js';
import { jobLabelsFrom, summaryGrainOf } from '../src/core/job-labels.js';
import type { Pipeline, PipelineStages } from '../src/pipeline/pipeline.js';
import type { Db } from '../src/store/open.js';
import type { ViewerCache } from '../src/jobs/access.js';
import type { JobsServer } from '../src/jobs/server.js';
import { resolveAttribution, type Manifests } from './selection.js';
import { readSection } from '../src/core/config/read.js';
import { DAEMON_SECTION } from '../src/core/config/sections.js';
import { JOBS_SECTION } from '../src/jobs/config.js';

/**
 * How long one of the daemon's store writes waits for a lock someone else
 * holds. better-sqlite3 waits on the event loop's thread: a long wait would
 * stop sampling and exporting for as long as a stuck hook or an admin's
 * open transaction holds the lock. A hook's own transaction takes a few ms;
 * a write that finds the store locked longer fails, is said, and the next
 * tick writes again.
 */
const DAEMON_BUSY_MS = 50;
/** A store that cannot be used (read-only or full disk, newer schema, a lock) is tried again this often. */
const STORE_RETRY_MS = 60_000;
/** When the store's pages are read after its open: after the first ticks, not in their way. */
const PAGE_CHECK_AFTER_MS = 30_000;

export interface JobAttributionOptions {
  manifests: Manifests;
  /** The configuration now (a reload replaces it). */
  config: () => Config;
  /** Whether the agent runs: a store retry after stop does nothing. */
  running: () => boolean;
  log: Logger;
  env: NodeJS.ProcessEnv;
  budgets: BudgetLedger;
  /** Where the provider and the ledger go. */
  pipeline: Pipeline;
  /**
   * Another daemon owns the state folder (`daemon --once` beside it): the
   * store is opened read-only and the provider only reads the bindings that
   * daemon keeps; no ledger writes, no reconciler, no jobs socket.
   */
  readOnly?: boolean;
}

export class JobAttribution {
  private ready = false;
  /** Closes the provider and the store it shares with the ledger. */
  private closeProvider: () => void = () => {};
  private storeRetry: NodeJS.Timeout | undefined;
  /** What made the store unusable, said once until it changes or the store is usable again. */
  private storeProblem = '';
  /** NSS answers for the jobs socket, kept for the daemon's life: a reload is no reason to ask them all again. */
  private viewers: ViewerCache | undefined;
  private jobsServer: JobsServer | undefined;
  private pageCheck: NodeJS.Timeout | undefined;
  /** What the page check found, for the next open to move the store aside. */
  private damaged: { reason: string; checkedIno: number } | undefined;
  /** The node name the jobs socket answers with (kept to make the socket again). */
  private jobsNode: (() => string) | undefined;

  constructor(private readonly o: JobAttributionOptions) {}

  /** Builds the provider once (start, once); reload swaps it when its settings change. */
  async init(): Promise<void> {
    if (this.ready) return;
    await this.swap();
    this.ready = true;
  }

  /** After a reload to `next`: swapped when [daemon] attribution, the state folder, [jobs], [attribution] or a provider's sections changed.
   * */
  async reload(prev: Config, next: Config): Promise<void> {
    const sections = ['jobs', 'attribution', ...this.o.manifests.attributions.flatMap((a) => a.sections.map((s) => s.name))];
    const keys = (c: Config) => {
      const d = readSection(c, DAEMON_SECTION);
      return JSON.stringify([d.attribution, d.state_dir, ...sections.map((s) => c.section(s))]);
    };
    if (keys(next) !== keys(prev)) await this.swap();
    else await this.socketAgain();
  }

  /**
   * A reload (SIGHUP) makes the users' socket again if its path is gone (an
   * admin's rm, a cleanup of /var/lib, an older l9gpu's `daemon --once`
   * that removed it as it exited): users' l9gpu jobs answered again without
   * a restart.
   */
  private async socketAgain(): Promise<void> {
    const server = this.jobsServer;
    if (!server || !this.jobsNode) return;
    const { jobsSocketPath } = await import('../src/jobs/server.js');
    const path = jobsSocketPath(server.stateDir);
    if (lstatSync(path, { throwIfNoEntry: false })?.isSocket()) return;
    this.o.log.warn('the jobs socket was gone: made again', { socket: path });
    this.stopJobsServer();
    await this.serveJobs(this.jobsNode);
  }

  /** The provider the configuration resolves to, and the job ledger on the same store connection. */
  private async swap(): Promise<void> {
    const cfg = this.o.config();
    const r = resolveAttribution(this.o.manifests, cfg, this.o.env);
    let provider: AttributionProvider = noneProvider;
    let ledger: PipelineStages['ledger'];
    let close = (): void => {};
    clearTimeout(this.storeRetry);
    clearTimeout(this.pageCheck);
    if (this.o.readOnly) return this.swapReadOnly(r.manifest);
    const opened = r.manifest ? await this.openStoreOrSay() : undefined;
    const db = opened?.db;
    if (r.manifest && opened && db) {
      const [{ JobLedger }, { pricesFrom }] = await Promise.all([import('../src/ledger/ledger.js'), import('../src/jobs/prices.js')]);
      try {
        // a newer store (a downgrade) is read, never written: its bindings attribute, no reconciler, no ledger
        provider = await r.manifest.create({
          config: cfg,
          log: this.o.log,
          env: this.o.env,
          store: db,
          labelLength: limitsFrom(cfg).labelLength,
          budgets: this.o.budgets,
          jobLabels: jobLabelsFrom(cfg),
          ...(opened.readOnly ? { readOnly: true } : {}),
        });
      } catch (e) {
        db.close();
        throw e;
      }
      const manifest = r.manifest;
      if (!opened.readOnly) {
        // prices read at every batch: a reload's new prices apply without a new ledger
        const cost = { prices: () => pricesFrom(this.o.config()), node: () => manifest.nodeName(this.o.config(), this.o.env, db) };
        const jobs = readSection(cfg, JOBS_SECTION);
        ledger = new JobLedger(
          db,
          this.o.log.child('ledger'),
          { seriesMs: jobs.series_retention * 1000, jobsMs: jobs.job_retention * 1000 },
          cost,
          summaryGrainOf(jobLabelsFrom(cfg)),
        );
        this.checkPagesLater(db.name);
      }
      const p = provider;
      // users' `l9gpu jobs`: the store is root's alone, the daemon answers them by their uid
      await this.serveJobs(() => manifest.nodeName(this.o.config(), this.o.env, db));
      close = () => {
        p.close?.();
        db.close();
      };
    }
    if (!db) this.stopJobsServer();
    this.closeProvider();
    this.o.pipeline.configure({ attribution: provider, ledger });
    this.closeProvider = close;
  }

  /**
   * Every page of the store read once the daemon runs (src/store/page-check.ts),
   * not before its first tick: a full quick_check took 14 s on 606 MB. A
   * damaged store is then moved aside and a new one started, as one found
   * damaged at open is (if it is still the file checked).
   */
  private checkPagesLater(path: string): void {
    let ino: number;
    try {
      ino = statSync(path).ino;
    } catch {
      return;
    }
    this.pageCheck = setTimeout(() => {
      void (async () => {
        const { checkPages } = await import('../src/store/page-check.js');
        const r = await checkPages(path);
        if (!this.o.running()) return;
        if (r.result === 'ok') {
          this.o.log.debug('store: every page read back', { store: path, ms: Math.round(r.ms) });
          return;
        }
        this.o.log.error(
          'store: the page check found damage: moving it aside and starting a new one (bindings come back from the scheduler)',
          { store: path, result: r.result },
        );
        this.damaged = { reason: `page check: ${r.result}`, checkedIno: ino };
        await this.swap();
      })().catch((e: Error) => this.o.log.error('store: page check failed', { error: e.message }));
    }, PAGE_CHECK_AFTER_MS);
    this.pageCheck.unref();
  }

  /** The provider over the store another daemon owns, read-only: attribution without the job side's writes. */
  private async swapReadOnly(manifest: ReturnType<typeof resolveAttribution>['manifest']): Promise<void> {
    if (!manifest) return;
    const cfg = this.o.config();
    const { openStoreReadOnly } = await import('../src/store/open.js');
    let db: Db;
    try {
      db = openStoreReadOnly(readSection(cfg, DAEMON_SECTION).state_dir);
    } catch (e) {
      this.o.log.warn(`job attribution off beside the running daemon: ${(e as Error).message}`);
      return;
    }
    let provider: AttributionProvider;
    try {
      provider = await manifest.create({
        config: cfg,
        log: this.o.log,
        env: this.o.env,
        store: db,
        labelLength: limitsFrom(cfg).labelLength,
        budgets: this.o.budgets,
        jobLabels: jobLabelsFrom(cfg),
        readOnly: true,
      });
    } catch (e) {
      db.close();
      throw e;
    }
    this.closeProvider();
    this.o.pipeline.configure({ attribution: provider, ledger: undefined });
    this.closeProvider = () => {
      provider.close?.();
      db.close();
    };
  }

  /**
   * The store, or undefined when it cannot be used (a read-only or full disk,
   * a lock): said once, tried again later. The GPUs are still sampled and
   * exported, without job attributes, rather than no telemetry at all. A
   * store made by a newer l9gpu (a downgrade) is opened read-only and said at
   * every start: its bindings still attribute, users' questions are answered.
   */
  private async openStoreOrSay(): Promise<{ db: Db; readOnly: boolean } | undefined> {
    const { openStore, StoreUnusable, StoreNewer } = await import('../src/store/open.js');
    const dir = readSection(this.o.config(), DAEMON_SECTION).state_dir;
    const damaged = this.damaged;
    this.damaged = undefined;
    try {
      const db = openStore(dir, {
        check: true,
        busyTimeoutMs: DAEMON_BUSY_MS,
        onRecovered: (m) => this.o.log.error(m),
        onNotice: (m) => this.o.log.warn(m),
        ...(damaged ? { damaged } : {}),
      });
      if (this.storeProblem) this.o.log.info('job attribution on again: the store is usable', { store: dir });
      this.storeProblem = '';
      return { db, readOnly: false };
    } catch (e) {
      if (!(e instanceof StoreUnusable)) throw e;
      if (e instanceof StoreNewer) {
        try {
          const { openNewerStore } = await import('../src/store/open-readonly.js');
          const { db, newer } = openNewerStore(dir, DAEMON_BUSY_MS);
          this.o.log.error(newer.message);
          this.storeProblem = '';
          return { db, readOnly: true };
        } catch (err) {
          this.o.log.error(`cannot read the newer store either: ${(err as Error).message}`);
        }
      }
      if (e.message !== this.storeProblem)
        this.o.log.error(
          `job attribution off: ${e.message}; GPU metrics go out without job attributes, the store is ` +
            `tried again every ${STORE_RETRY_MS / 1000} s`,
        );
      this.storeProblem = e.message;
      this.storeRetry = setTimeout(() => {
        if (this.o.running()) this.swap().catch((err: Error) => this.o.log.error('job attribution: retry failed', { error: err.message }));
      }, STORE_RETRY_MS);
      this.storeRetry.unref();
      return undefined;
    }
  }

  /**
   * Users' `l9gpu jobs` on the store just opened. The listening socket lives
   * as long as its state folder: a reload points it at the new store rather
   * than starting another (closing a listening unix socket unlinks its path,
   * which by then is the new one's, and users would be locked out until a
   * restart).
   */
  private async serveJobs(node: () => string): Promise<void> {
    this.jobsNode = node;
    const [{ startJobsServer }, { pricesFrom }, { ViewerCache }] = await Promise.all([
      import('../src/jobs/server.js'),
      import('../src/jobs/prices.js'),
      import('../src/jobs/access.js'),
    ]);
    this.viewers ??= new ViewerCache();
    const cfg = this.o.config;
    const o = {
      stateDir: readSection(cfg(), DAEMON_SECTION).state_dir,
      node,
      prices: () => pricesFrom(cfg()),
      adminGroup: () => readSection(cfg(), JOBS_SECTION).admin_group,
      log: this.o.log.child('jobs'),
      limits: () => limitsFrom(cfg()),
      budgets: this.o.budgets,
      viewers: this.viewers,
    };
    if (this.jobsServer?.stateDir === o.stateDir) return this.jobsServer.retarget(o);
    this.stopJobsServer();
    try {
      this.jobsServer = await startJobsServer(o);
    } catch (e) {
      // attribution goes on; only users' `l9gpu jobs` cannot be answered
      this.o.log.error("jobs socket not started: users' l9gpu jobs will not be answered", { error: (e as Error).message });
    }
  }

  private stopJobsServer(): void {
    this.jobsServer?.close();
    this.jobsServer = undefined;
  }

  /** Stops retrying the store (first thing at stop: nothing may reopen it meanwhile). */
  cancelRetry(): void {
    clearTimeout(this.storeRetry);
    clearTimeout(this.pageCheck);
  }

  /** Closes the jobs socket, the provider and the store (last thing at stop, once the sinks are flushed). */
  close(): void {
    this.stopJobsServer();
    this.closeProvider();
    this.closeProvider = () => {};
  }
}
