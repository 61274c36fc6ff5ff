/**
 * Where a run's attributes go ([attribution]): on every point of its GPUs
 * (points), or only on one series per GPU and run, gpu.job.share, that
 * queries join on (info); and which of them ride on points at all.
 *
 * Every attribute on a GPU series makes each job a new copy of each series of
 * each of its GPUs (40-50 per GPU): millions of new series a day at 10,000
 * nodes, whatever the jobs do. In info mode a GPU's series keep its identity
 * alone and a job adds one series per GPU it holds, the share, which lives
 * while the binding does (jobstats' and soperator's answer). docs/scale.md
 * says when to pick which.
 */
import type { Config } from './config/load.js';
import { readSection, sectionDefaults } from './config/read.js';
import { defineSection, type ConfigValue } from './config/schema.js';
import { ATTRIBUTION_ATTRIBUTE_PREFIXES, ATTRIBUTION_ATTRIBUTES } from './metrics/registry.js';
import type { Attributes } from './metrics/model.js';

export type JobLabelMode = 'points' | 'info';

/**
 * The attributes that name a run (Slurm's job id; a pod's namespace and
 * name): the job ledger finds an engine's or NCCL rank's job by them, and
 * the reports a job's series, so they cannot be left off points.
 */
export const RUN_ID_ATTRIBUTES: readonly string[] = ['slurm.job.id', 'k8s.namespace.name', 'k8s.pod.name'];

/** An omit_from_points entry: a known attribution attribute, or a prefix one (k8s.pod.label.*), and never a run's id. */
function checkOmit(v: ConfigValue): void {
  for (const name of v as string[]) {
    if (RUN_ID_ATTRIBUTES.includes(name))
      throw new Error(`"${name}" names the run: the job ledger and the reports find a job's series by it, so it stays on points`);
    const prefix = name.endsWith('*') ? name.slice(0, -1) : undefined;
    const known =
      prefix !== undefined
        ? ATTRIBUTION_ATTRIBUTE_PREFIXES.some((p) => prefix.startsWith(p))
        : (ATTRIBUTION_ATTRIBUTES as readonly string[]).includes(name) ||
          ATTRIBUTION_ATTRIBUTE_PREFIXES.some((p) => name.startsWith(p) && name.length > p.length);
    if (!known)
      throw new Error(
        `"${name}" is not a job attribute attribution adds ` +
          `(${[
            ...ATTRIBUTION_ATTRIBUTES.filter((a) => !RUN_ID_ATTRIBUTES.includes(a)),
            ...ATTRIBUTION_ATTRIBUTE_PREFIXES.map((p) => `${p}*`),
          ].join(', ')})`,
      );
  }
}

export const ATTRIBUTION_SECTION = defineSection({
  name: 'attribution',
  description:
    'Where the job attributes that attribution ([daemon] attribution) adds go: on every point ' +
    "of a job's GPUs, or on one series per GPU and job (gpu.job.share) that queries join on. " +
    'docs/scale.md says which to pick.',
  keys: [
    {
      key: 'job_labels',
      type: 'enum',
      values: ['points', 'info'],
      default: 'points',
      description:
        "points: every point of a job's GPUs carries the job's attributes " +
        '(gpu.utilization{slurm.job.id="42"}), and a shared GPU\'s points come once per job. info: ' +
        "a GPU's own series carry its identity alone, and the job's attributes ride only on " +
        'gpu.job.share, one series per GPU and job that lives while the job holds the GPU; a query ' +
        'joins on it by host.name and gpu.uuid (the dashboards, alert rules and `l9gpu jobs ' +
        '--source promql` do, in both modes). Each job then adds one series per GPU instead of a ' +
        "copy of every series of the GPU (40-50). Series of a job's processes (process memory, an " +
        "engine's page, NCCL ranks) keep the job's attributes in both modes, and job-end summaries " +
        '(gpu.job.*) and gpu.cost.rate are per job in both.',
    },
    {
      key: 'omit_from_points',
      type: 'list',
      default: [],
      example: 'slurm.job.name, slurm.user',
      check: checkOmit,
      description:
        'Job attributes left off points (a trailing * names a prefix: k8s.pod.label.*); ' +
        "gpu.job.share, gpu.cost.rate and the job-end summaries still carry every one. The run's id " +
        "(slurm.job.id; k8s.namespace.name and k8s.pod.name) always stays. User-set values (a job's " +
        "name, pod labels) are cut to the limits section's label_length either way.",
    },
  ],
});

export interface JobLabels {
  readonly mode: JobLabelMode;
  /** Attribute names, or prefixes ending in *, that points do not carry. */
  readonly omit: readonly string[];
}

function jobLabelsOf(v: { job_labels: JobLabelMode; omit_from_points: string[] }): JobLabels {
  return { mode: v.job_labels, omit: v.omit_from_points };
}

/** The job-end summaries' grain a mode writes (src/figures/node-summary.ts): per GPU with points, per node with info. */
export const summaryGrainOf = (l: JobLabels): 'gpu' | 'node' => (l.mode === 'info' ? 'node' : 'gpu');

export function jobLabelsFrom(c: Config): JobLabels {
  return jobLabelsOf(readSection(c, ATTRIBUTION_SECTION));
}

/** The schema's defaults (every attribute on every point), for code run without a configuration. */
export const DEFAULT_JOB_LABELS: JobLabels = jobLabelsOf(sectionDefaults(ATTRIBUTION_SECTION));

/** A filter of a run's attributes to those points carry: the attributes themselves when nothing is omitted. */
export function pointAttributes(omit: readonly string[]): (a: Attributes) => Attributes {
  if (omit.length === 0) return (a) => a;
  const exact = new Set(omit.filter((n) => !n.endsWith('*')));
  const prefixes = omit.filter((n) => n.endsWith('*')).map((n) => n.slice(0, -1));
  const dropped = (k: string) => exact.has(k) || prefixes.some((p) => k.startsWith(p));
  return (a) => {
    const out: Attributes = {};
    for (const k in a) if (!dropped(k)) out[k] = a[k]!;
    return out;
  };
}
