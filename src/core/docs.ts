/** Renders docs/metrics.md, docs/l9gpu.example.ini and the plugin READMEs' config tables from the registry, the config schema and the
 * manifests. */
import { formatValue, defaultOf, type KeySpec, type SectionSpec } from './config/schema.js';
import {
  ATTRIBUTION_ATTRIBUTES,
  ATTRIBUTION_ATTRIBUTE_PREFIXES,
  METRICS,
  SCOPE_ATTRIBUTES,
  RENAMED,
  prometheusName,
  type MetricDef,
} from './metrics/registry.js';
import { CONVENTION_ROWS, SAME_IN_CONVENTIONS, conventionRowOf } from './metrics/conventions.js';

const KIND: Record<MetricDef['kind'], string> = { gauge: 'gauge', sum: 'monotonic sum', updown: 'up-down sum', histogram: 'histogram' };
const SCOPE_TITLE: Record<MetricDef['scope'], string> = {
  gpu: 'GPU',
  engine: 'Inference engines',
  nccl: 'NCCL communication',
  host: 'Host',
  agent: 'Agent self-metrics',
};

/** emitters: metric name -> who emits it (plugin, sink, provider or agent stage names), from the manifests. */
export function renderMetricsDoc(emitters: ReadonlyMap<string, readonly string[]>): string {
  const out: string[] = [
    '# l9gpu metrics',
    '',
    '<!-- Generated from src/core/metrics/registry.ts and the manifests by `npm run docs`. Do ' +
      'not edit: a test fails when this file is stale. -->',
    '',
    'Units are [UCUM](https://ucum.org/) as OpenTelemetry uses them, and are the same for every vendor:',
    'ratios are 0..1 with unit `1` (never percent), power `W`, energy `J`, memory `By`, temperature `Cel`, clocks `Hz`.',
    'A *monotonic sum* is a cumulative counter (OTLP Sum, cumulative temporality, monotonic); a backend computes rates from it.',
    'A *histogram* is cumulative explicit buckets (OTLP Histogram, cumulative temporality); under its Prometheus name it is the series',
    '`<name>_bucket{le="..."}` (cumulative counts, `le="+Inf"` the count), `<name>_sum` and `<name>_count`, on the pull endpoint as in a',
    'backend fed over OTLP; the JSON lines carry its count as `value` and `sum`, `bounds`, `counts` (per bucket).',
    '',
    'A metric with no unit (`-`) is a 0/1 state or an info metric (always 1): no ratio.',
    '',
    'Two names per metric. The **OTLP name** (`name`) is what OTLP carries and what a backend that keeps OpenTelemetry names',
    'stores (VictoriaMetrics by default, the stdout and file sinks). The **Prometheus name** follows the OpenTelemetry',
    '"Prometheus and OpenMetrics compatibility" rules: dots become underscores, the unit is spelled out (`W` -> `_watts`,',
    '`By` -> `_bytes`, `By/s` -> `_bytes_per_second`, `Cel` -> `_celsius`; annotations like `{error}` add nothing),',
    'monotonic sums end in `_total`, gauges of unit `1` in `_ratio`. The pull endpoint (`[prometheus]`) serves these names,',
    'and they are the names Prometheus, Mimir or VictoriaMetrics (`-opentelemetry.usePrometheusNaming`) give the same',
    'metrics received over OTLP, so one dashboard or alert works on both paths. Attribute keys become labels the same way',
    '(`gpu.uuid` -> `gpu_uuid`).',
    '',
    '## Identity attributes',
    '',
    `Every GPU point carries ${SCOPE_ATTRIBUTES.gpu.required.map((a) => `\`${a}\``).join(', ')}; ` +
      `a MIG instance adds ${SCOPE_ATTRIBUTES.gpu.optional.map((a) => `\`${a}\``).join(', ')}.`,
    `Job attribution adds ${ATTRIBUTION_ATTRIBUTES.map((a) => `\`${a}\``).join(', ')} to GPU ` +
      `points when a job holds the GPU (the slurm.* ones under Slurm, the k8s.* ones under ` +
      `Kubernetes; see docs/kubernetes.md), and ${ATTRIBUTION_ATTRIBUTE_PREFIXES.map((a) => `\`${a}<name>\``).join(', ')} ` +
      `for the pod labels \`[kubernetes] labels\` promotes.`,
    `Every engine point carries ${SCOPE_ATTRIBUTES.engine.required.map((a) => `\`${a}\``).join(', ')} ` +
      `(the endpoint and the engine) and, where known, ${SCOPE_ATTRIBUTES.engine.optional.map((a) => `\`${a}\``).join(', ')}: ` +
      `\`process.pid\` and \`process.owner\` are the process listening on a local endpoint's port ` +
      `and its user (OpenTelemetry's process owner: the name, or the uid where the user database ` +
      `has none), whose \`[limits] series_per_user\` the page counts against; attribution adds ` +
      `that process's job.`,
    `Every NCCL point carries ${SCOPE_ATTRIBUTES.nccl.required.map((a) => `\`${a}\``).join(', ')} ` +
      `and, where its source says, ${SCOPE_ATTRIBUTES.nccl.optional.map((a) => `\`${a}\``).join(', ')}; ` +
      `attribution adds the job of the process that wrote it.`,
    'Resource attributes (OTLP resource, Prometheus `target_info`): `service.name`, ' +
      '`service.version`, `host.name`, `cluster.name` when configured, and `[daemon] ' +
      'resource_attributes`.',
    '',
  ];
  out.push(...renamedSection(), ...conventionsSection());
  for (const scope of ['gpu', 'engine', 'nccl', 'host', 'agent'] as const) {
    out.push(
      `## ${SCOPE_TITLE[scope]}`,
      '',
      '| OTLP name | unit | kind | attributes | Prometheus name | semantic conventions | emitted by | description |',
      '| --- | --- | --- | --- | --- | --- | --- | --- |',
    );
    for (const d of METRICS.filter((x) => x.scope === scope)) {
      const by = (emitters.get(d.name) ?? []).join(', ') || '-';
      out.push(
        `| \`${d.name}\` | ${d.unit ? `\`${d.unit}\`` : '-'} | ${KIND[d.kind]} | ${d.attributes.map((a) => `\`${a}\``).join(', ')} ` +
          `| \`${prometheusName(d)}\` | ${conventionsCell(d)} | ${by} | ${d.description.replace(/\|/g, '\\|')} |`,
      );
    }
    out.push('');
  }
  return out.join('\n');
}

/** A metric's name under the OpenTelemetry conventions: the hw.* it is sent as, the same name, or none defined. */
function conventionsCell(d: MetricDef): string {
  const r = conventionRowOf(d.name);
  if (r) return `\`${r.to.name}\` (hw)`;
  return SAME_IN_CONVENTIONS.has(d.name) ? 'the same' : '-';
}

function renamedSection(): string[] {
  const out: string[] = [];
  for (const release of new Set(RENAMED.map((r) => r.release))) {
    out.push(`## Renamed in ${release}`, '', '| old name | new name | why |', '| --- | --- | --- |');
    for (const r of RENAMED.filter((x) => x.release === release)) out.push(`| ${r.from} | ${r.to} | ${r.why} |`);
    out.push('');
  }
  return out;
}

function conventionsSection(): string[] {
  return [
    '## The OpenTelemetry semantic conventions (`semantic_conventions = hw`)',
    '',
    'The conventions (1.44, hardware metrics, Development stability) define some GPU metrics. `[otlp]` and `[prometheus]`',
    "`semantic_conventions = hw` send those under the conventions' names instead of the l9gpu ones, each point with the",
    "conventions' identity besides the product's own attributes (which stay: attribution, `l9gpu jobs --source promql` and",
    "the dashboards join on them): `hw.id` (the GPU UUID), `hw.type`, `hw.model`, `hw.vendor` and, from the GPU's",
    '`gpu.info`, `hw.driver_version`, `hw.serial_number`, `hw.firmware_version` (VBIOS). The other metrics keep their',
    'l9gpu names (the conventions define none for them). The dashboards and alert rules read both namings.',
    '',
    '| l9gpu | sent as (hw) | Prometheus name (hw) | what else |',
    '| --- | --- | --- | --- |',
    ...CONVENTION_ROWS.map((r) => `| \`${r.from.name}\` | \`${r.to.name}\` | \`${prometheusName(r.to)}\` | ${r.note} |`),
    '',
  ];
}

/** Words of text in lines of at most width characters, each starting with prefix (counted in the width). */
export function wrap(text: string, prefix: string, width = 88): string[] {
  const lines: string[] = [];
  let cur = prefix;
  for (const w of text.split(/\s+/)) {
    if (cur.length + w.length + 1 > width && cur !== prefix) {
      lines.push(cur.trimEnd());
      cur = prefix;
    }
    cur += w + ' ';
  }
  lines.push(cur.trimEnd());
  return lines;
}

/** A key's default as the docs show it. */
export function defaultText(k: KeySpec): string {
  return typeof k.default === 'function' ? '(computed)' : formatValue(k, defaultOf(k)) || '(unset)';
}

export function renderExampleConfig(sections: readonly SectionSpec[]): string {
  const out: string[] = [
    '; l9gpu configuration: /etc/l9gpu/l9gpu.ini (or --config FILE, or $L9GPU_CONFIG).',
    '; Generated from the schema by `npm run docs`; every key is listed with its default, commented out.',
    '; Precedence: command-line flags > environment variables > this file > defaults.',
    '; Durations: 10, 10s, 500ms, 2m. Sizes: 1048576, 64MiB, 100MB. Lists: comma-separated.',
    '; An unknown section or key, or a bad value, stops the daemon with exit code 2 and names the file, line, section and key.',
    '',
  ];
  for (const s of sections) {
    out.push(...wrap(s.description, '; '), `[${s.name}]`);
    for (const k of s.keys) {
      out.push(...wrap(k.description, ';; '));
      if (k.type === 'enum') out.push(`;; one of: ${k.values!.join(', ')}`);
      if (k.env?.length) out.push(`;; environment: ${k.env.map((e) => e.name).join(', ')}`);
      const shown = k.example ?? formatValue(k, typeof k.default === 'function' ? null : defaultOf(k));
      out.push(`;${k.key} = ${shown}`, '');
    }
  }
  return out.join('\n');
}

const cell = (t: string) => t.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** A plugin README's "## Config" section: every key of its section, as the loader takes it. */
export function renderConfigSection(section: SectionSpec): string {
  const out = [
    `## Config (\`[${section.name}]\`)`,
    "<!-- Generated from the plugin's manifest by `npm run docs`; a test fails when it is stale. -->",
    '',
    '| key | type | default | environment | description |',
    '| --- | --- | --- | --- | --- |',
  ];
  for (const k of section.keys) {
    const def = defaultText(k);
    const type = k.type === 'enum' ? `one of ${k.values!.join(', ')}` : k.type;
    out.push(`| \`${k.key}\` | ${type} | ${cell(def)} | ${k.env?.map((e) => `\`${e.name}\``).join(', ') ?? ''} | ${cell(k.description)} |`);
  }
  return out.join('\n') + '\n';
}

/** The README with its "## Config" section (up to the next "## " heading) replaced by the generated one. */
export function withConfigSection(readme: string, section: SectionSpec): string {
  const start = readme.search(/^## Config\b/m);
  if (start < 0) throw new Error(`no "## Config" section for [${section.name}]`);
  const rest = readme.slice(start + 1);
  const next = rest.search(/^## /m);
  const end = next < 0 ? readme.length : start + 1 + next;
  return readme.slice(0, start) + renderConfigSection(section) + (next < 0 ? '' : '\n') + readme.slice(end);
}
