/** The core [daemon] section and the keys every plugin section shares. */
import { existsSync } from 'node:fs';
import { homedir, hostname } from 'node:os';
import { join } from 'node:path';
import type { Config } from './load.js';
import { readSection, type SectionValues } from './read.js';
import { defineSection, type KeySpec, type SectionSpec } from './schema.js';

/** The node's state folder, as the packages make it. */
export const NODE_STATE_DIR = '/var/lib/l9gpu';

/**
 * root's is the node's. Another user's is the node's too where the node has
 * one (an installed package made it): their `l9gpu jobs` asks the node's
 * daemon with nothing set; their own ($XDG_STATE_HOME/l9gpu) only on a
 * machine without it (a checkout run as a user), or when they say so
 * (L9GPU_STATE_DIR, [daemon] state_dir).
 */
export function defaultStateDir(env: NodeJS.ProcessEnv = process.env, nodeDir: string = NODE_STATE_DIR): string {
  if (process.getuid?.() === 0 || existsSync(nodeDir)) return nodeDir;
  return join(env.XDG_STATE_HOME || join(env.HOME || homedir(), '.local', 'state'), 'l9gpu');
}

/** The names the composition root knows; without them (the hooks) the name keys are not checked. */
export interface KnownNames {
  readonly plugins: readonly string[];
  readonly sinks: readonly string[];
  readonly attributions: readonly string[];
}

/**
 * [daemon] attribution: with the composition root's names an enum of them,
 * without (the hooks, which read the file partially) any word but an empty
 * one, as the daemon would take. Either reads as a string.
 */
function attributionKey(names?: KnownNames) {
  return names
    ? ({
        key: 'attribution',
        type: 'enum',
        values: ['auto', ...names.attributions, 'none'],
        default: 'auto',
        description:
          `How GPU points get job attributes: auto = the first of ${names.attributions.join(', ')} ` +
          `whose scheduler is configured on this node, else none.`,
      } as const satisfies KeySpec)
    : ({
        key: 'attribution',
        type: 'string',
        required: true,
        default: 'auto',
        description: 'How GPU points get job attributes.',
      } as const satisfies KeySpec);
}

export function daemonSection(names?: KnownNames) {
  const list = (l: readonly string[] | undefined, fallback: string) => (l ? l.join(', ') : fallback);
  return defineSection({
    name: 'daemon',
    description: 'The agent: what it runs, where it sends data, how it names itself.',
    keys: [
      {
        key: 'plugins',
        type: 'list',
        default: ['auto'],
        env: [{ name: 'L9GPU_PLUGINS' }],
        description:
          `Plugins to run: auto, ${list(names?.plugins, 'see `l9gpu doctor`')}. auto = host plus ` +
          `every GPU plugin whose source answers (NVML loads and sees GPUs, amd-smi or hl-smi ` +
          `answers): one that does not at start is probed again, 1 s doubling to every 60 s, and ` +
          `started when it does (a driver loaded late); named plugins always run. --plugin replaces ` +
          `this list for one run.`,
      },
      {
        key: 'sinks',
        type: 'list',
        default: ['prometheus'],
        env: [{ name: 'L9GPU_SINKS' }],
        description:
          `Where data goes: ${list(names?.sinks, 'see `l9gpu doctor`')} (several at once). --sink ` + `replaces this list for one run.`,
      },
      {
        key: 'expect_gpus',
        type: 'int',
        default: null,
        min: 0,
        max: 4096,
        example: '8',
        unset: 'at least 1 where a GPU driver library or tool is installed or the store has seen GPUs',
        description:
          'How many GPUs this node must have: fewer found is a problem (doctor, l9gpu gpus and daemon ' +
          "--once exit 1). Unset: at least one where a GPU vendor's driver library or tool is " +
          "installed (libnvidia-ml.so.1, amd-smi, hl-smi) or the store's inventory has seen GPUs, " +
          "else none; 0: none, whatever is installed (a login node with the driver's libraries).",
      },
      {
        key: 'interval',
        type: 'duration',
        default: 10,
        min: 0.05,
        max: 3600,
        description:
          'Default collection interval of every plugin (a plugin section may set its own). --interval sets all of them for one run.',
      },
      attributionKey(names),
      { key: 'cluster', type: 'string', default: null, description: 'Cluster name, exported as the resource attribute cluster.name.' },
      {
        key: 'host_name',
        type: 'string',
        default: () => hostname(),
        example: '',
        env: [{ name: 'L9GPU_HOST_NAME' }],
        description:
          'Exported as the resource attribute host.name (default: the system host name; in a pod that ' +
          "is the pod's name, so the DaemonSet sets $L9GPU_HOST_NAME to the node's).",
      },
      {
        key: 'service_name',
        type: 'string',
        default: 'l9gpu',
        env: [{ name: 'OTEL_SERVICE_NAME' }],
        description: 'Exported as the resource attribute service.name.',
      },
      {
        key: 'resource_attributes',
        type: 'map',
        default: {},
        env: [{ name: 'OTEL_RESOURCE_ATTRIBUTES' }],
        description:
          'Extra resource attributes, key=value,key2=value2 (values percent-encoded). service.name ' +
          'and host.name here are overridden by the keys above.',
      },
      {
        key: 'state_dir',
        type: 'path',
        required: true,
        default: () => defaultStateDir(),
        example: '/var/lib/l9gpu',
        env: [{ name: 'L9GPU_STATE_DIR' }],
        description:
          "Folder of the local store, the jobs socket and the daemon's lock (root: /var/lib/l9gpu; " +
          'other users: /var/lib/l9gpu where it exists, as on an installed node, so that their l9gpu ' +
          "jobs asks the node's daemon; else $XDG_STATE_HOME/l9gpu).",
      },
      {
        key: 'log_level',
        type: 'enum',
        values: ['debug', 'info', 'warn', 'error'],
        default: 'info',
        env: [{ name: 'L9GPU_LOG_LEVEL' }],
        description: 'Least severe log level written to stderr.',
      },
      {
        key: 'engines',
        type: 'enum',
        values: ['off', 'auto'],
        default: 'off',
        description:
          'auto: also run every inference-engine plugin (vllm, sglang, tgi, triton, nim) on the ' +
          'engines found on this node: processes whose command line names the engine, and the ports ' +
          'they listen on (a Slurm job may start one on any port). A plugin whose endpoints key is ' +
          'set keeps its list (add auto to it to look as well).',
      },
      {
        key: 'emit_genai',
        type: 'bool',
        default: false,
        description:
          "Also emit the engines' latency histograms under the OpenTelemetry GenAI semantic " +
          'conventions (gen_ai.server.time_to_first_token, .time_per_output_token, .request.duration; ' +
          'attribute gen_ai.provider.name), besides their own names. The conventions are still in ' +
          'Development.',
      },
      {
        key: 'shutdown_timeout',
        type: 'duration',
        default: 5,
        min: 0,
        max: 300,
        description: 'On SIGTERM: how long to keep delivering queued data before exiting.',
      },
    ],
  });
}

/** [daemon] as every reader types it: its keys are the same with the composition root's names or without. */
export const DAEMON_SECTION = daemonSection();

/** Keys every plugin section has; null inherits from [daemon]. */
export const PLUGIN_COMMON_KEYS = [
  {
    key: 'interval',
    type: 'duration',
    default: null,
    min: 0.05,
    max: 3600,
    example: '10s',
    unset: '[daemon] interval',
    description: 'Collection interval of this plugin (default: [daemon] interval).',
  },
  {
    key: 'timeout',
    type: 'duration',
    default: null,
    min: 0.05,
    max: 3600,
    example: '10s',
    unset: 'the interval',
    description:
      'A collection running longer than this counts as an error; its next ticks are skipped until it returns (default: the interval).',
  },
] as const satisfies readonly KeySpec[];

export function pluginSection<const K extends readonly KeySpec[]>(
  name: string,
  description: string,
  keys: K,
): SectionSpec<readonly [...typeof PLUGIN_COMMON_KEYS, ...K]> {
  return { name, description, keys: [...PLUGIN_COMMON_KEYS, ...keys] };
}

/** The keys every plugin section has, of a plugin known by name only (the agent runs them all alike). */
export function readPluginCommon(cfg: Config, name: string): SectionValues<{ keys: typeof PLUGIN_COMMON_KEYS }> {
  return readSection(cfg, { name, keys: PLUGIN_COMMON_KEYS });
}
