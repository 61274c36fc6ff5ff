/** Runs the daemon for `l9gpu daemon`, whichever entry parsed the flags. */
import { Agent } from '../../daemon/agent.js';
import { MANIFESTS } from '../../daemon/catalog.js';
import { loadCliConfig } from './config.js';
import { asCliError, printCliError } from './errors.js';
import { exitProcess } from '../core/hard-exit.js';
import { createLogger } from '../core/log.js';
import { flagOverrides, type DaemonFlags } from './daemon-flags.js';
import { readSection } from '../core/config/read.js';
import { DAEMON_SECTION } from '../core/config/sections.js';
import { ConfigError } from '../core/config/schema.js';

/** Never returns: the process ends with 0, 2 on a bad configuration, 1 when --once delivered nothing, a plugin it was asked for failed or GPUs the node must have were not read. */
export async function runDaemon(flags: DaemonFlags): Promise<never> {
  const load = () => loadCliConfig(flags.config, flagOverrides(flags));
  try {
    const cfg = load();
    const daemon = readSection(cfg, DAEMON_SECTION);
    const log = createLogger(daemon.log_level);
    const agent = new Agent(cfg, log, MANIFESTS);
    if (flags.once) {
      const { blocked, undelivered, failed, shortfall } = await agent.once();
      if (undelivered.length) log.error('nothing was delivered: every export failed', { sinks: undelivered.join(',') });
      if (failed.length) log.error('plugins asked for failed (their errors above)', { plugins: failed.join(',') });
      if (shortfall) log.error(shortfall);
      return exitProcess(undelivered.length || failed.length || shortfall ? 1 : 0, blocked.length > 0);
    }
    await agent.start();
    log.info('l9gpu daemon started', {
      config: cfg.file ?? '(embedded defaults)',
      plugins: agent.pluginNames.join(','),
      sinks: daemon.sinks.join(','),
      attribution: daemon.attribution,
    });
    let stopping = false;
    const stop = (sig: string): void => {
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
    process.on('SIGHUP', () => {
      if (stopping) return;
      let next;
      try {
        next = load();
      } catch (e) {
        log.error('reload failed: keeping the running configuration', { error: (e as Error).message });
        return;
      }
      agent.reload(next).catch((e: Error) => log.error(e instanceof ConfigError ? 'reload failed: keeping the running configuration' : 'reload failed', { error: e.message }));
    });
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
