import { Command, Flags } from '@oclif/core';
import { Agent } from '../../daemon/agent.js';
import { loadAgentConfig } from '../../daemon/catalog.js';
import { PLUGINS } from '../../plugins/index.js';
import type { Override } from '../config/load.js';
import { ConfigError } from '../config/schema.js';
import { exitProcess } from '../hard-exit.js';
import { createLogger, type LogLevel } from '../log.js';

export default class Daemon extends Command {
  static override summary = 'Run the telemetry agent: sample GPUs and the host, attribute to jobs, export.';
  static override description = `Runs every enabled plugin on its interval and sends the points to every enabled sink.
Configuration: /etc/l9gpu/l9gpu.ini (or --config / L9GPU_CONFIG), then environment, then these flags.
Signals: SIGTERM/SIGINT flush every sink and exit 0; SIGHUP reloads the configuration (a bad file is logged and the running configuration kept).
Exit codes: 0 normal, 2 bad configuration (one line on stderr naming file, section and key).`;

  static override examples = [
    '<%= config.bin %> daemon',
    '<%= config.bin %> daemon --once --sink stdout',
    '<%= config.bin %> daemon --plugin host --plugin sim --sink stdout --sink prometheus --interval 5',
    'OTEL_EXPORTER_OTLP_ENDPOINT=http://vm:8428/opentelemetry <%= config.bin %> daemon --sink otlp',
  ];

  static override flags = {
    config: Flags.string({ char: 'c', helpValue: 'FILE', description: 'INI configuration file (default /etc/l9gpu/l9gpu.ini, or $L9GPU_CONFIG).' }),
    once: Flags.boolean({ description: 'Run every enabled plugin once, flush every sink, exit 0.' }),
    interval: Flags.string({ helpValue: 'SECONDS', description: 'Collection interval of every plugin for this run (10, 10s, 500ms, 1m).' }),
    sink: Flags.string({ multiple: true, delimiter: ',', helpValue: 'NAME', description: 'Sink to enable (otlp, prometheus, stdout, file, webhook); repeat for several. Replaces [daemon] sinks for this run.' }),
    plugin: Flags.string({ multiple: true, delimiter: ',', helpValue: 'NAME', description: 'Plugin to run; repeat for several. Replaces [daemon] plugins for this run.' }),
    attribution: Flags.string({ options: ['auto', 'slurm', 'kubernetes', 'none'], description: 'Job attribution of GPU points (default: slurm when Slurm is configured on this node, else none).' }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Daemon);
    const overrides: Override[] = [];
    if (flags.interval !== undefined) {
      overrides.push({ section: 'daemon', key: 'interval', raw: flags.interval, flag: '--interval' });
      for (const p of PLUGINS) overrides.push({ section: p.name, key: 'interval', raw: flags.interval, flag: '--interval' });
    }
    if (flags.sink) overrides.push({ section: 'daemon', key: 'sinks', raw: flags.sink.join(','), flag: '--sink' });
    if (flags.plugin) overrides.push({ section: 'daemon', key: 'plugins', raw: flags.plugin.join(','), flag: '--plugin' });
    if (flags.attribution) overrides.push({ section: 'daemon', key: 'attribution', raw: flags.attribution, flag: '--attribution' });
    const load = () => loadAgentConfig({ configPath: flags.config, overrides });

    let agent: Agent;
    try {
      const cfg = load();
      const log = createLogger(cfg.str('daemon', 'log_level') as LogLevel);
      agent = new Agent(cfg, log);
      if (flags.once) {
        const blocked = await agent.once();
        await exitProcess(0, blocked.length > 0);
      }
      await agent.start();
      log.info('l9gpu daemon started', {
        config: cfg.file ?? '(embedded defaults)',
        plugins: cfg.list('daemon', 'plugins').join(','),
        sinks: cfg.list('daemon', 'sinks').join(','),
        attribution: cfg.str('daemon', 'attribution'),
      });
      // runs until a signal: stop() ends the process
      await new Promise<never>(() => {
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
          agent.reload(next).catch((e: Error) => log.error('reload failed', { error: e.message }));
        });
      });
    } catch (e) {
      if (e instanceof ConfigError) {
        process.stderr.write(`l9gpu: ${e.message}\n`);
        this.exit(2);
      }
      throw e;
    }
  }
}
