/** The sinks' configuration sections, apart from the sinks' code: reading a configuration loads no sink. */
import { checkRequestHeaders, defineSection, type ConfigValue } from '../core/config/schema.js';
import { secretFileKeys, tlsClientKeys } from '../core/config/client-keys.js';
import { NAMINGS } from '../core/metrics/conventions.js';

const SIGNAL_PATH = '/v1/metrics';
/** OTEL_EXPORTER_OTLP_ENDPOINT is a base URL: the spec appends the signal path. */
const basePlusSignal = (raw: string): string => raw.replace(/\/+$/, '') + SIGNAL_PATH;
const msToDuration = (raw: string): string => {
  if (!/^\d+$/.test(raw.trim())) throw new Error(`"${raw}" is not a whole number of milliseconds`);
  return `${raw.trim()}ms`;
};

const OTLP_ENV = (what: string) => [`OTEL_EXPORTER_OTLP_METRICS_${what}`, `OTEL_EXPORTER_OTLP_${what}`];

/** Which names the sink sends: the product's gpu.* (the default) or the OpenTelemetry hardware conventions' hw.*. */
const conventionsKey = (what: string) =>
  ({
    key: 'semantic_conventions',
    type: 'enum',
    values: NAMINGS,
    default: 'l9gpu',
    description:
      `Metric names ${what}: l9gpu (gpu.*, the default) or hw, the OpenTelemetry semantic conventions' hardware ` +
      'names (hw.gpu.utilization, hw.power with hw.type = gpu, hw.status, ...) and identity attributes (hw.id, ' +
      'hw.model, hw.vendor, hw.driver_version, hw.serial_number, hw.firmware_version) for every metric they ' +
      "define, beside the product's own attributes; the others keep their l9gpu names (docs/metrics.md: the mapping).",
  }) as const;

export const OTLP_SECTION = defineSection({
  name: 'otlp',
  description: 'OTLP/HTTP export (VictoriaMetrics, Prometheus 3 OTLP receiver, Mimir, an OpenTelemetry Collector, Last9...).',
  keys: [
    {
      key: 'endpoint',
      type: 'url',
      default: 'http://localhost:4318/v1/metrics',
      env: [{ name: 'OTEL_EXPORTER_OTLP_METRICS_ENDPOINT' }, { name: 'OTEL_EXPORTER_OTLP_ENDPOINT', map: basePlusSignal }],
      description:
        'Full URL metrics are POSTed to (OTEL_EXPORTER_OTLP_ENDPOINT is a base URL: /v1/metrics is ' +
        'appended). With protocol = grpc only its scheme, host and port count (http:// plaintext, ' +
        'https:// TLS; unset: http://localhost:4317).',
    },
    {
      key: 'protocol',
      type: 'enum',
      values: ['http/protobuf', 'http/json', 'grpc'],
      default: 'http/protobuf',
      env: [{ name: 'OTEL_EXPORTER_OTLP_METRICS_PROTOCOL' }, { name: 'OTEL_EXPORTER_OTLP_PROTOCOL' }],
      description:
        'Wire encoding: OTLP/HTTP with protobuf (port 4318) or JSON, or OTLP/gRPC (port 4317: ' +
        'opentelemetry.proto.collector.metrics.v1.MetricsService/Export).',
    },
    {
      key: 'compression',
      type: 'enum',
      values: ['gzip', 'none'],
      default: 'gzip',
      env: [{ name: 'OTEL_EXPORTER_OTLP_METRICS_COMPRESSION' }, { name: 'OTEL_EXPORTER_OTLP_COMPRESSION' }],
      description: 'Request body compression.',
    },
    conventionsKey('sent'),
    {
      key: 'headers',
      type: 'map',
      default: {},
      secret: true,
      example: 'authorization=Basic%20dXNlcjpwYXNz',
      check: checkRequestHeaders,
      env: [{ name: 'OTEL_EXPORTER_OTLP_METRICS_HEADERS' }, { name: 'OTEL_EXPORTER_OTLP_HEADERS' }],
      description:
        'Extra request headers (gRPC: metadata), key=value,key2=value2 (values percent-encoded), ' +
        "e.g. an Authorization header. Prefer headers_file: l9gpu.ini is read by every user's " +
        'l9gpu.',
    },
    ...secretFileKeys('', 'the OTLP endpoint'),
    ...tlsClientKeys('', 'the OTLP endpoint', {
      ca: OTLP_ENV('CERTIFICATE'),
      cert: OTLP_ENV('CLIENT_CERTIFICATE'),
      key: OTLP_ENV('CLIENT_KEY'),
    }),
    {
      key: 'insecure',
      type: 'bool',
      default: false,
      env: OTLP_ENV('INSECURE').map((name) => ({ name })),
      description:
        'protocol = grpc with an https:// endpoint: send in plaintext (h2c) all the same, as ' +
        'OTEL_EXPORTER_OTLP_INSECURE asks. An http:// endpoint is always plaintext.',
    },
    {
      key: 'timeout',
      type: 'duration',
      default: 10,
      min: 0.1,
      max: 300,
      env: [
        { name: 'OTEL_EXPORTER_OTLP_METRICS_TIMEOUT', map: msToDuration },
        { name: 'OTEL_EXPORTER_OTLP_TIMEOUT', map: msToDuration },
      ],
      description: 'Per-request timeout (the OTEL_* variables are in milliseconds).',
    },
    {
      key: 'export_interval',
      type: 'duration',
      default: 10,
      min: 0.05,
      max: 3600,
      description: 'How often buffered points are sent in one request.',
    },
    {
      key: 'max_queue_bytes',
      type: 'bytes',
      default: 16 * 1024 * 1024,
      min: 1024,
      description: 'Encoded data kept for retry while the endpoint is down; past it the oldest is dropped (l9gpu.sink.dropped).',
    },
  ],
});

/** A request's path is matched as written: "metrics" would be a page no scrape asks for (every request would be 404). */
function urlPath(v: ConfigValue): void {
  const p = v as string;
  if (!p.startsWith('/')) throw new Error(`"${p.slice(0, 80)}" is not a URL path: it starts with / (/${p.slice(0, 80)})`);
  if (/[\s?#]/.test(p))
    throw new Error(`"${p.slice(0, 80)}" is not a URL path: no spaces, ? or # (the query is not part of the page's path)`);
}

export const PROMETHEUS_SECTION = defineSection({
  name: 'prometheus',
  description: 'Prometheus pull endpoint (text exposition format 0.0.4).',
  keys: [
    { key: 'host', type: 'string', default: '0.0.0.0', description: 'Address to listen on (127.0.0.1 to keep it local).' },
    { key: 'port', type: 'int', default: 9464, min: 0, max: 65535, description: 'TCP port (0 picks a free one, logged at start).' },
    {
      key: 'path',
      type: 'string',
      required: true,
      default: '/metrics',
      check: urlPath,
      description: 'URL path of the metrics page: starts with /.',
    },
    conventionsKey('on the page'),
    {
      key: 'resource_labels',
      type: 'list',
      default: ['cluster.name', 'host.name'],
      description:
        'Resource attributes added as labels to every series (target_info always carries all of ' +
        'them). The default puts cluster_name and host_name on every series, as an OTLP backend ' +
        'puts every resource attribute, so that one dashboard (dashboards/) selects a node the same ' +
        'way on both paths; empty: target_info alone.',
    },
    {
      key: 'web_config',
      type: 'path',
      default: null,
      example: '/etc/l9gpu/web-config.yml',
      description:
        "A web configuration file in the format of Prometheus' exporter-toolkit (node_exporter's " +
        '--web.config.file): TLS (cert, key, client CA, client_auth_type, versions, cipher suites, ' +
        'curves), basic_auth_users with bcrypt hashes, response headers, rate_limit. The file a ' +
        'site gives node_exporter works unchanged (docs/security.md). It and the certificates it ' +
        'names are read again when they change; a change that breaks them keeps the one in use.',
    },
    {
      key: 'personal_labels',
      type: 'enum',
      values: ['auto', 'show', 'hide'],
      default: 'auto',
      description:
        'The labels that name people or carry their text (slurm_user, slurm_account, ' +
        'slurm_job_name, process_owner). auto: left off the page when it is served beyond loopback ' +
        'without authentication (no basic_auth_users and no required client certificate in ' +
        "web_config), so that a fresh install does not hand every user's names to the network; " +
        'show: always; hide: never (docs/security.md).',
    },
    {
      key: 'max_connections',
      type: 'int',
      default: 256,
      min: 1,
      max: 65536,
      description:
        'Connections the endpoint holds in all; past it the one idle longest is closed for a new ' +
        'one, or the new one when every connection is busy (counted in l9gpu.listener.refused).',
    },
    {
      key: 'max_connections_per_peer',
      type: 'int',
      default: 16,
      min: 1,
      max: 65536,
      description: 'Connections one peer address may hold at once (a Prometheus uses one, an HA pair two).',
    },
    {
      key: 'header_timeout',
      type: 'duration',
      default: 10,
      min: 0.5,
      max: 600,
      description: 'Time a connection has to finish its TLS handshake and send a whole request head.',
    },
    {
      key: 'request_timeout',
      type: 'duration',
      default: 30,
      min: 1,
      max: 3600,
      description:
        'Time one exchange may take, the page written to the client included (a client that does not read its answer is closed).',
    },
    {
      key: 'idle_timeout',
      type: 'duration',
      default: 125,
      min: 1,
      max: 3600,
      description:
        'Time a keep-alive connection may sit between requests (above the usual scrape intervals, ' +
        'so that a scraper keeps its connection and its TLS session).',
    },
    {
      key: 'max_header_bytes',
      type: 'bytes',
      default: 16 * 1024,
      min: 1024,
      max: 1024 * 1024,
      description: 'Largest request head (request line and headers); a larger one is answered 431.',
    },
  ],
});

export const STDOUT_SECTION = defineSection({
  name: 'stdout',
  description: 'One JSON object per data point per line on standard output.',
  keys: [
    { key: 'resource', type: 'bool', default: true, description: 'Include the resource attributes under "resource" on every line.' },
    {
      key: 'max_buffer_bytes',
      type: 'bytes',
      default: 8 * 1024 * 1024,
      min: 1024,
      description: 'Output waiting for a slow reader beyond which batches are dropped (counted).',
    },
  ],
});

export const FILE_SECTION = defineSection({
  name: 'file',
  description: 'JSON lines (the stdout format) appended to a file with size-based rotation.',
  keys: [
    {
      key: 'path',
      type: 'path',
      default: null,
      example: '/var/log/l9gpu/metrics.jsonl',
      description:
        'File to append to (required when the file sink is enabled): a regular file, never reached ' +
        'through a link; under root, one owned by root, with one link, in a folder no other user ' +
        'can write to (a sticky one, such as /tmp, only with max_files = 0: any user could take the ' +
        'names it rotates to first), below no folder others can write without the sticky bit. ' +
        'Anything else is refused, and retried.',
    },
    { key: 'max_bytes', type: 'bytes', default: 64 * 1024 * 1024, min: 4096, description: 'Size at which the file is rotated.' },
    {
      key: 'max_files',
      type: 'int',
      default: 5,
      min: 0,
      max: 100,
      description: 'Rotated files kept (path.1 is the newest); 0 truncates instead.',
    },
    { key: 'resource', type: 'bool', default: true, description: 'Include the resource attributes under "resource" on every line.' },
  ],
});

export const WEBHOOK_SECTION = defineSection({
  name: 'webhook',
  description: 'POST JSON batches to an HTTP endpoint.',
  keys: [
    {
      key: 'url',
      type: 'url',
      default: null,
      example: 'https://hooks.example.com/l9gpu',
      description: 'Endpoint (required when the webhook sink is enabled).',
    },
    {
      key: 'token',
      type: 'string',
      default: null,
      secret: true,
      env: [{ name: 'L9GPU_WEBHOOK_TOKEN' }],
      description: 'Sent as "Authorization: Bearer <token>". Prefer token_file.',
    },
    {
      key: 'headers',
      type: 'map',
      default: {},
      secret: true,
      check: checkRequestHeaders,
      description: 'Extra request headers, key=value,key2=value2. Prefer headers_file.',
    },
    ...secretFileKeys('', 'the webhook'),
    ...tlsClientKeys('', 'the webhook'),
    { key: 'timeout', type: 'duration', default: 10, min: 0.1, max: 300, description: 'Per-request timeout.' },
    { key: 'max_batch_points', type: 'int', default: 5000, min: 1, description: 'Points per request; larger batches are split.' },
    {
      key: 'max_queue_bytes',
      type: 'bytes',
      default: 16 * 1024 * 1024,
      min: 1024,
      description: 'Data kept for retry while the endpoint is down; past it the oldest is dropped.',
    },
  ],
});
