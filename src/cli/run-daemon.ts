/** Runs the daemon for `l9gpu daemon`, whichever entry parsed the flags. */
import { createHash } from 'node:crypto';
import { Agent } from '../../daemon/agent.js';
import { MANIFESTS } from '../../daemon/catalog.js';
import { loadCliConfig } from './config.js';
import { asCliError, CliError, printCliError } from './errors.js';
import { exitProcess } from '../core/hard-exit.js';
import { createLogger, type Logger } from '../core/log.js';
import type { Config } from '../core/config/load.js';
import { TokenBuckets } from '../core/token-buckets.js';
import { flagOverrides, type DaemonFlags } from './daemon-flags.js';
import { readSection } from '../core/config/read.js';
import { DAEMON_SECTION } from '../core/config/sections.js';
import { ConfigError } from '../core/config/schema.js';
import { lockStateDir, StateLocked, type StateLock } from '../core/state-lock.js';
import { assertSafeStateDir } from '../store/state-dir.js';

/**
 * The reload's log lines, rate-limited like every other log path: a reload
 * that changed the configuration is always said; the same configuration
 * reloaded again (a SIGHUP loop, a config manager's every run) is said at
 * most 5 times, then once a minute with how many were not said; failures the
 * same way, by their message.
 */
class ReloadLog {
  private last = '';
  private lastFailure = '';
  private readonly budget = new TokenBuckets(5, 60_000, 16);
  private unsaid = 0;

  constructor(private readonly log: Logger) {}

  private say(key: string, changed: boolean, line: () => void): void {
    if (!changed && !this.budget.take(key)) {
      this.unsaid++;
      return;
    }
    line();
    this.unsaid = 0;
  }

  done(cfg: Config, plugins: readonly string[]): void {
    const text = JSON.stringify([cfg.file, ...cfg.sections.map((s) => cfg.section(s.name))]);
    const changed = text !== this.last;
    this.last = text;
    this.lastFailure = '';
    const unsaid = this.unsaid;
    // the digest tells which configuration is in use (a config manager checks its run took), not the file's bytes
    const digest = createHash('sha256').update(text).digest('hex').slice(0, 12);
    this.say('done', changed, () =>
      this.log.info('configuration reloaded', {
        file: cfg.file ?? '(none)',
        config: digest,
        plugins: plugins.join(','),
        sinks: readSection(cfg, DAEMON_SECTION).sinks.join(','),
        ...(unsaid ? { reloads_not_said: unsaid } : {}),
      }),
    );
  }

  failed(message: string): void {
    const changed = message !== this.lastFailure;
    this.lastFailure = message;
    const unsaid = this.unsaid;
    this.say(`failed:${message}`, changed, () =>
      this.log.error('reload failed: keeping the running configuration', {
        error: message,
        ...(unsaid ? { reloads_not_said: unsaid } : {}),
      }),
    );
  }
}

/**
 * The state folder's lock, the folder made (and checked: no planted link)
 * first. A folder the daemon cannot or must not write (a read-only
 * filesystem, a planted link) holds no lock: the daemon samples and exports
 * all the same (its store is off there too), and says it runs unguarded.
 */
function takeLock(dir: string, log: Logger): StateLock | undefined {
  try {
    // a planted link or a folder open to others: no lock through it (the store is refused there too, and says why)
    assertSafeStateDir(dir);
  } catch (e) {
    log.warn(`cannot take the state folder's lock (${(e as Error).message}): running without the one-daemon-per-folder guard`);
    return undefined;
  }
  try {
    return lockStateDir(dir);
  } catch (e) {
    if (e instanceof StateLocked) throw e;
    log.warn(`cannot take the state folder's lock (${(e as Error).message}): running without the one-daemon-per-folder guard`);
    return undefined;
  }
}

/** `daemon --compact-store`: the one-off VACUUM of a store made before auto_vacuum, with the state folder's lock held. */
async function compact(dir: string, lock: StateLock | undefined, beside: StateLocked | undefined): Promise<never> {
  if (beside) throw new CliError(`l9gpu daemon --compact-store: ${beside.message}: stop it first (systemctl stop l9gpu)`, 1);
  if (!lock) throw new CliError(`l9gpu daemon --compact-store: cannot hold ${dir}'s lock (above): nothing done`, 1);
  const { compactStore } = await import('../store/open.js');
  const t0 = performance.now();
  const r = compactStore(dir);
  const mb = (b: number) => `${(b / 1048576).toFixed(1)} MB`;
  process.stdout.write(
    `l9gpu: store compacted in ${((performance.now() - t0) / 1000).toFixed(1)} s: ${mb(r.before)} ` +
      `-> ${mb(r.after)}; it gives pruned space back from now on (auto_vacuum = incremental)\n`,
  );
  lock.release();
  return exitProcess(0, false);
}

/** Never returns: the process ends with 0, 2 on a bad configuration, 1 when --once delivered nothing, a plugin it was asked for failed or
 * GPUs the node must have were not read. */
export async function runDaemon(flags: DaemonFlags): Promise<never> {
  const load = () => loadCliConfig(flags.config, flagOverrides(flags));
  try {
    const cfg = load();
    const daemon = readSection(cfg, DAEMON_SECTION);
    const log = createLogger(daemon.log_level);
    // one daemon per state folder; --once beside a running one reads without taking over what that one owns
    let lock: StateLock | undefined;
    let beside: StateLocked | undefined;
    try {
      lock = takeLock(daemon.state_dir, log);
    } catch (e) {
      if (!(e instanceof StateLocked)) throw e;
      if (!flags.once)
        throw new CliError(
          `${e.message}: stop it first (systemctl stop l9gpu), or look with l9gpu gpus, l9gpu doctor ` +
            `or l9gpu daemon --once, which read beside it`,
          1,
        );
      beside = e;
      log.info(`${e.message}: --once samples and exports beside it, without its store's writes, its jobs socket or its health file`);
    }
    if (flags['compact-store']) return compact(daemon.state_dir, lock, beside);
    const agent = new Agent(cfg, log, MANIFESTS, process.env, { readOnlyJobs: beside !== undefined });
    if (flags.once) {
      const { blocked, undelivered, failed, shortfall } = await agent.once();
      if (undelivered.length) log.error('nothing was delivered: every export failed', { sinks: undelivered.join(',') });
      if (failed.length) log.error('plugins asked for failed (their errors above)', { plugins: failed.join(',') });
      if (shortfall) log.error(shortfall);
      lock?.release();
      return exitProcess(undelivered.length || failed.length || shortfall ? 1 : 0, blocked.length > 0);
    }
    // SIGHUPs coalesce: one reload at a time, and one more after it if more came meanwhile (1,000 in a burst
    // are a few reloads, not 1,000). Taken from before the start: a `systemctl reload` while the daemon starts
    // is a reload once it has started, not the default action of SIGHUP (the end of the process)
    let started = false;
    let stopping = false;
    let reloading = false;
    let again = false;
    const reloadLog = new ReloadLog(log);
    const reload = async (): Promise<void> => {
      if (reloading || !started) {
        again = true;
        return;
      }
      reloading = true;
      try {
        do {
          again = false;
          let next;
          try {
            next = load();
          } catch (e) {
            reloadLog.failed((e as Error).message);
            continue;
          }
          try {
            await agent.reload(next);
            reloadLog.done(next, agent.pluginNames);
          } catch (e) {
            if (e instanceof ConfigError) reloadLog.failed((e as Error).message);
            else log.error('reload failed', { error: (e as Error).message });
          }
        } while (again && !stopping);
      } finally {
        reloading = false;
      }
    };
    process.on('SIGHUP', () => {
      if (!stopping) void reload();
    });
    // a stop asked while the agent starts (systemd's stop during a slow start) is kept and done once it has: the signal's
    // default action would end the process mid-start, sinks unflushed, with no exit status
    let asked: string | undefined;
    let startHangs: NodeJS.Timeout | undefined;
    const stop = (sig: string): void => {
      if (!started) {
        if (asked) return;
        asked = sig;
        // a start that hangs (a driver call that never returns) must not make the daemon unstoppable: nothing was
        // collected yet, so nothing is lost by leaving without it
        startHangs = setTimeout(() => {
          log.warn('stopping: the start did not end within 5 s of the signal; exiting without waiting for it', { signal: sig });
          void exitProcess(0, true);
        }, 5000).unref();
        return;
      }
      if (stopping) return;
      stopping = true;
      log.info('stopping: flushing sinks', { signal: sig });
      agent.stop().then(
        (blocked) => exitProcess(0, blocked.length > 0),
        (e: Error) => {
          log.error('error while stopping', { error: e.message });
          return exitProcess(0, true);
        },
      );
    };
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
    await agent.start();
    started = true;
    log.info('l9gpu daemon started', {
      config: cfg.file ?? '(embedded defaults)',
      plugins: agent.pluginNames.join(','),
      sinks: daemon.sinks.join(','),
      attribution: daemon.attribution,
    });
    clearTimeout(startHangs);
    if (asked) stop(asked);
    else if (again) void reload();
    // runs until a signal: stop() ends the process
    return await new Promise<never>(() => {});
  } catch (e) {
    const c = asCliError(e);
    if (c) {
      printCliError(c);
      return exitProcess(c.exitCode, false);
    }
    throw e;
  }
}
