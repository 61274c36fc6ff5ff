import { Command } from '@oclif/core';
import { DAEMON_FLAGS, type DaemonFlags } from '../cli/daemon-flags.js';
import { oclifFlags } from '../cli/oclif-flags.js';
import { runDaemon } from '../cli/run-daemon.js';

export default class Daemon extends Command {
  static override summary = 'Run the telemetry agent: sample GPUs and the host, attribute to jobs, export.';
  static override description = `Runs every enabled plugin on its interval and sends the points to every enabled sink.
Configuration: /etc/l9gpu/l9gpu.ini (or --config / L9GPU_CONFIG), then environment, then these flags.
Signals: SIGTERM/SIGINT flush every sink and exit 0; SIGHUP reloads the configuration (a bad file is logged and the running configuration kept).
Exit codes: 0 normal, 1 --once found a problem (nothing delivered, a plugin named failed, GPUs the node must have not read), 2 bad configuration (one line on stderr naming file, section and key).`;

  static override examples = [
    '<%= config.bin %> daemon',
    '<%= config.bin %> daemon --once --sink stdout',
    '<%= config.bin %> daemon --plugin host --plugin sim --sink stdout --sink prometheus --interval 5',
    'OTEL_EXPORTER_OTLP_ENDPOINT=http://vm:8428/opentelemetry <%= config.bin %> daemon --sink otlp',
  ];

  static override flags = oclifFlags(DAEMON_FLAGS);

  async run(): Promise<void> {
    const { flags } = await this.parse(Daemon);
    await runDaemon(flags as DaemonFlags);
  }
}
