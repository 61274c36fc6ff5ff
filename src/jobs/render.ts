/** Text for people: the job list, and the one-job report with meters, a per-GPU table, a plot and notes. */
import type { JobListRow } from './list.js';
import { keyedGroups, type GroupBy, type JobGroupRow } from './by.js';
import { alignColumns, thousands, type Style } from '../core/text-table.js';
import { totalsOf } from './report.js';
import type { EfficiencyMeans, EfficiencySection, JobReport } from './report-model.js';
import type { WasteRow } from './waste.js';
import { printable, printableDeep } from '../core/printable.js';

const GiB = 1024 ** 3;
/** Where a report's figures come from, as its first line says. */
const SOURCE: Record<JobReport['source'], string> = {
  store: "this node's l9gpu store",
  promql: 'PromQL backend',
  sacct: "Slurm accounting (the summary the slurmctld epilog kept in the job's AdminComment)",
};
const BARS = '▁▂▃▄▅▆▇█';

export function duration(s: number | null): string {
  if (s === null || !Number.isFinite(s)) return '-';
  s = Math.max(0, s); // never "-1--1:-58:-5": records keep durations non-negative, and a figure from elsewhere is held to it too
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = Math.floor(s % 60);
  return `${d ? `${d}-` : ''}${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}:${String(sec).padStart(2, '0')}`;
}

const pct = (x: number | null) => (x === null ? '-' : `${Math.round(x * 100)}%`);
const gib = (x: number | null) => (x === null ? '-' : (x / GiB).toFixed(1));
/** Grams as kg, to the gram. */
const kg = (g: number | null) => (g === null ? '-' : (g / 1000).toFixed(3));
/** Energy in kWh, to the Wh; "-": unknown (no counter, too few power readings), which 0.000 would misstate. */
const kwh = (x: number | null) => (x === null ? '-' : x.toFixed(3));

function table(rows: string[][], st: Style): string[] {
  return alignColumns(rows).map((line, n) => (n === 0 ? st.bold(line) : line));
}

export function renderList(raw: readonly JobListRow[], st: Style): string {
  // job, user, account and partition names come from users (sbatch -J, -A): no terminal escapes pass
  const rows = printableDeep(raw);
  const anyCost = rows.some((r) => r.cost !== null);
  const anyCo2e = rows.some((r) => r.co2e_g !== null);
  // a Kubernetes node's runs are pods: namespace and workload where a Slurm job has user, account and partition
  const pods = rows.length > 0 && rows.every((r) => r.scheduler === 'kubernetes');
  const out = table(
    [
      [
        ...(pods ? ['POD', 'NAMESPACE', 'WORKLOAD'] : ['JOBID', 'USER', 'ACCOUNT', 'PARTITION']),
        'STATE',
        'START',
        'ELAPSED',
        'GPUS',
        'GPU-H',
        'UTIL',
        'PEAK MEM GiB',
        'ENERGY kWh',
        ...(anyCost ? ['COST'] : []),
        ...(anyCo2e ? ['CO2e kg'] : []),
        'PROBLEMS',
      ],
      ...rows.map((r) => [
        ...(pods
          ? [r.id.slice(r.id.indexOf('/') + 1), r.account ?? '-', r.name ?? '-']
          : [r.id, r.user ?? '-', r.account ?? '-', r.partition ?? '-']),
        r.state,
        r.start ? r.start.slice(0, 16).replace('T', ' ') : '-',
        duration(r.elapsed_s),
        String(r.gpus),
        r.gpu_hours.toFixed(2),
        pct(r.util_mean),
        gib(r.mem_peak_bytes),
        kwh(r.energy_kwh),
        ...(anyCost ? [r.cost === null ? '-' : r.cost.toFixed(2)] : []),
        ...(anyCo2e ? [kg(r.co2e_g)] : []),
        r.problems.join(',') || '-',
      ]),
    ],
    st,
  );
  return out.map((l, i) => (i > 0 && rows[i - 1]!.problems.length ? st.warn(l) : l)).join('\n') + '\n';
}

function meter(label: string, frac: number | null, st: Style, width = 50): string {
  if (frac === null) return `  ${label.padEnd(20)} [${' '.repeat(width)}]   -`;
  const n = Math.round(Math.min(1, Math.max(0, frac)) * width);
  const bar = '|'.repeat(n) + ' '.repeat(width - n);
  const text = `  ${label.padEnd(20)} [${bar}] ${String(Math.round(frac * 100)).padStart(3)}%`;
  return frac < 0.25 ? st.warn(text) : text;
}

/** Mean utilization per minute as one line of block characters (at most width columns). */
export function sparkline(series: readonly [number, number][], width = 60): string {
  if (series.length === 0) return '';
  const per = Math.ceil(series.length / width);
  const cols: number[] = [];
  for (let i = 0; i < series.length; i += per) {
    const part = series.slice(i, i + per);
    cols.push(part.reduce((a, [, v]) => a + v, 0) / part.length);
  }
  return cols.map((v) => BARS[Math.min(BARS.length - 1, Math.round(v * (BARS.length - 1)))]).join('');
}

/** The report a user reads: its sections in order, each after a blank line (a section with nothing to say is left out). */
export function renderReport(raw: JobReport, st: Style): string {
  const r = printableDeep(raw);
  const sections = [
    headerSection(r, st),
    overallSection(r, st),
    perNodeSection(r, st),
    perGpuSection(r, st),
    r.efficiency ? renderEfficiency(r.efficiency, new Map(r.gpus.map((g) => [g.uuid, g.node])), st) : [],
    inferenceSection(r, st),
    communicationSection(r, st),
    seriesSection(r, st),
    notesSection(r, st),
  ].filter((x) => x.length > 0);
  return sections.map((x) => x.join('\n')).join('\n\n') + '\n';
}

/** The header: who ran the job, where, its state, GPUs, the jobstats header from accounting, its times. */
function headerSection(r: JobReport, st: Style): string[] {
  const out: string[] = [];
  const j = r.job;
  const pod = j.scheduler === 'kubernetes';
  out.push(st.bold(`${pod ? 'Pod' : 'Job'} ${j.id}${j.name ? ` (${j.name})` : ''}`) + st.dim(`   source: ${SOURCE[r.source]}`));
  if (pod) {
    const a = j.attrs ?? {};
    out.push(`  namespace      ${j.account ?? '-'}${a['k8s.pod.uid'] ? `   uid ${a['k8s.pod.uid']}` : ''}`);
    const labels = Object.entries(a)
      .filter(([k]) => k.startsWith('k8s.pod.label.'))
      .map(([k, v]) => `${k.slice(14)}=${v}`);
    if (labels.length) out.push(`  labels         ${labels.join(', ')}`);
  } else out.push(`  user/account   ${j.user ?? '?'}${j.uid !== null ? ` (${j.uid})` : ''} / ${j.account ?? '-'}`);
  out.push(
    `  state          ${j.state}${j.exit_code !== null ? `, exit code ${j.exit_code}` : ''}${
      j.exit_signal ? `, signal ` + `${j.exit_signal}` : ''
    }${j.earlier_runs ? ` (run ${j.run}; ${j.earlier_runs} earlier run(s): ${pod ? 'recreated under the same name' : 'requeued'})` : ''}`,
  );
  if (!pod)
    out.push(`  partition      ${j.partition ?? '-'}${j.qos ? ` / QOS ${j.qos}` : ''}${j.cluster ? `   cluster ${j.cluster}` : ''}`);
  out.push(`  node(s)        ${j.nodes.join(', ')}`);
  const models = [...new Set(r.gpus.map((g) => g.model ?? '?'))];
  out.push(
    `  GPUs           ${r.gpus.length} x ${models.join(', ')}${
      j.gpus_alloc !== null && j.gpus_alloc !== r.gpus.length ? ` ` + `(${j.gpus_alloc} allocated)` : ''
    }`,
  );
  // the jobstats header, where Slurm accounting filled it
  if (j.cpus !== null) out.push(`  CPU cores      ${j.cpus}`);
  if (j.mem_req_bytes !== null || j.mem_max_rss_bytes !== null)
    out.push(`  CPU memory     ${gib(j.mem_req_bytes)} GiB requested, max RSS ${gib(j.mem_max_rss_bytes)} GiB`);
  out.push(`  start          ${j.start ?? '-'}${j.end ? `   end ${j.end}` : ''}   run time ${duration(j.elapsed_s)}`);
  if (j.time_limit_s !== null)
    out.push(
      `  time limit     ${duration(j.time_limit_s)}${j.time_efficiency !== null ? `   time efficiency ${pct(j.time_efficiency)}` : ''}`,
    );
  return out;
}

/** Overall: the job's utilization and peak memory meters, GPU-hours, energy, cost and CO2e. */
function overallSection(r: JobReport, st: Style): string[] {
  const out: string[] = [];
  out.push(st.bold('Overall'));
  const t = r.totals;
  out.push(meter('GPU utilization', t.util_mean, st));
  const memFrac = t.mem_peak_bytes !== null ? t.mem_peak_bytes / Math.max(1, ...r.gpus.map((g) => g.figures.memTotal ?? 0)) : null;
  out.push(meter('GPU memory (peak)', memFrac, st));
  out.push(
    `  GPU-hours ${t.gpu_hours.toFixed(2)}   energy ` +
      `${
        t.energy_kwh === null || t.energy_j === null
          ? 'unknown (no energy counter or power readings)'
          : `${kwh(t.energy_kwh)} kWh ` + `(${Math.round(t.energy_j)} J)`
      }${t.cost !== null ? `   cost ${t.cost.toFixed(2)} ${t.currency}` : ''}${t.co2e_g !== null ? `   CO2e ${kg(t.co2e_g)} kg` : ''}`,
  );
  return out;
}

/** Per node, for a multi-node job: each node's totals (none for a job on one node). */
function perNodeSection(r: JobReport, st: Style): string[] {
  const out: string[] = [];
  const j = r.job;
  if (j.nodes.length > 1) {
    out.push(st.bold('Per node'));
    out.push(
      ...table(
        [
          ['NODE', 'GPUS', 'UTIL mean', 'MEM peak GiB', 'ENERGY kWh', 'GPU-H'],
          ...j.nodes.map((n) => {
            const t = totalsOf(
              r.gpus.filter((g) => g.node === n),
              null,
            );
            return [n, String(t.gpus), pct(t.util_mean), gib(t.mem_peak_bytes), kwh(t.energy_kwh), t.gpu_hours.toFixed(2)];
          }),
        ],
        st,
      ).map((l) => `  ${l}`),
    );
  }
  return out;
}

/** Per GPU: each GPU's figures. */
function perGpuSection(r: JobReport, st: Style): string[] {
  const out: string[] = [];
  out.push(st.bold('Per GPU'));
  out.push(
    ...table(
      [
        ['NODE', 'GPU', 'UUID', 'UTIL mean/max', 'MEM peak/total GiB', 'ENERGY kWh', 'POWER mean/max W', 'TEMP max', 'THROTTLED', 'XID'],
        ...r.gpus.map((g) => {
          const f = g.figures;
          const thr = Object.entries(f.throttledS)
            .filter(([, s]) => s > 0)
            .map(([c, s]) => `${c} ${Math.round(s)}s`)
            .join(',');
          return [
            g.node,
            g.index === null ? '-' : String(g.index),
            g.uuid + (g.shared ? ' (shared)' : ''),
            `${pct(f.utilMean)}/${pct(f.utilMax)}`,
            `${gib(f.memUsedMax)}/${gib(f.memTotal)}`,
            kwh(f.energySource === 'none' ? null : f.energyJ / 3.6e6),
            `${f.powerMean === null ? '-' : Math.round(f.powerMean)}/${f.powerMax === null ? '-' : Math.round(f.powerMax)}`,
            f.tempMax === null ? '-' : `${f.tempMax}C`,
            thr || '-',
            Object.entries(f.xid)
              .map(([c, n]) => `${c}x${n}`)
              .join(',') || '-',
          ];
        }),
      ],
      st,
    ).map((l) => `  ${l}`),
  );
  return out;
}

/** Inference: what the job's engines served (none for a job without). */
function inferenceSection(r: JobReport, st: Style): string[] {
  const out: string[] = [];
  const inf = r.inference;
  if (inf) {
    const s = (x: number | null) => (x === null ? '-' : x < 1 ? `${Math.round(x * 1000)} ms` : `${x.toFixed(2)} s`);
    const n = (x: number | null) => (x === null ? '-' : thousands(Math.round(x)));
    out.push(
      st.bold('Inference') + st.dim(` (${inf.engines.map((e) => `${e.engine} ${e.endpoint}${e.model ? ` ${e.model}` : ''}`).join('; ')})`),
    );
    out.push(
      `  requests ${n(inf.requests)}   tokens in ${n(inf.prompt_tokens)} / out ${n(inf.generation_tokens)} ` +
        `  over ${duration(Math.round(inf.serving_s))}`,
    );
    out.push(
      `  time to first token  p50 ${s(inf.ttft_p50_s)}  p95 ${s(inf.ttft_p95_s)}   inter-token ` +
        `latency  p50 ${s(inf.itl_p50_s)}  p95 ${s(inf.itl_p95_s)}`,
    );
    out.push(
      `  ${inf.tokens_per_s === null ? '-' : inf.tokens_per_s.toFixed(1)} tokens/s   ` +
        `${inf.tokens_per_j === null ? '-' : inf.tokens_per_j.toFixed(3)} ` +
        `tokens/J (of the job's GPU energy)`,
    );
  }
  return out;
}

/** Communication (NCCL): the job's collectives and its slowest ranks (none for a job without). */
function communicationSection(r: JobReport, st: Style): string[] {
  const out: string[] = [];
  const com = r.communication;
  if (com) {
    const gbs = (x: number | null) => (x === null ? '-' : (x / 1e9).toFixed(1));
    out.push(
      st.bold('Communication (NCCL)') +
        st.dim(
          ` ${com.time_s.toFixed(1)} s per rank in collectives${
            com.peak_bus_bw_Bps ? `; fabric peak ${gbs(com.peak_bus_bw_Bps)} ` + `GB/s` : ''
          }`,
        ),
    );
    out.push(
      ...table(
        [
          ['COMMUNICATOR', 'COLLECTIVE', 'SIZE', 'RANKS', 'OPS', 'TIME/RANK', 'SHARE', 'ALG GB/s', 'BUS GB/s', 'OF PEAK'],
          ...com.collectives
            .slice(0, 12)
            .map((k) => [
              k.comm_name ?? k.comm,
              k.collective,
              k.size,
              `${k.ranks_seen || '-'}/${k.ranks}`,
              thousands(Math.round(k.operations)),
              `${k.time_s.toFixed(2)} s`,
              pct(k.share),
              gbs(k.alg_bw_Bps),
              gbs(k.bus_bw_Bps),
              k.of_peak === null ? '-' : pct(k.of_peak),
            ]),
        ],
        st,
      ).map((l) => `  ${l}`),
    );
    if (com.collectives.length > 12) out.push(st.dim(`  ... ${com.collectives.length - 12} more (--json has them all)`));
    if (com.slowest_ranks.length) {
      out.push(
        `  slowest ranks: ${com.slowest_ranks
          .map(
            (x) => `${x.comm_name ?? x.comm} rank ${x.rank} (${x.node}) ` + `${x.slowdown.toFixed(2)}x${x.straggler ? ' STRAGGLER' : ''}`,
          )
          .join('; ')}`,
      );
    }
  }
  return out;
}

/** The utilization sparkline over the job (none for a job of one minute). */
function seriesSection(r: JobReport, st: Style): string[] {
  const out: string[] = [];
  if (r.series.length > 1) {
    out.push(st.bold('GPU utilization over the job') + st.dim(` (per minute, ${r.series.length} min)`));
    out.push(`  ${sparkline(r.series)}`);
  }
  return out;
}

/** Notes: what the report's rules found. */
function notesSection(r: JobReport, st: Style): string[] {
  const out: string[] = [];
  out.push(st.bold('Notes'));
  if (r.notes.length === 0) out.push('  none: the GPUs were well used');
  for (const n of r.notes) out.push(n.level === 'warn' ? st.warn(`  ! ${n.text}`) : `  - ${n.text}`);
  return out;
}

const gb = (x: number | null) => (x === null ? '-' : (x / 1e9).toFixed(1));

/** The Efficiency section: the GPUs' own counters per GPU and for the job, the class and its rule, imbalance and idle stretches. */
function renderEfficiency(e: EfficiencySection, nodes: ReadonlyMap<string, string>, st: Style): string[] {
  const j = e.job;
  const out = [
    st.bold('Efficiency') +
      st.dim(
        e.gpus_with_gpm
          ? ` (GPU counters, GPM: ${e.gpus_with_gpm} of ${e.gpus.length} GPUs)`
          : ' (no GPU of the job has GPM counters: utilization only)',
      ),
  ];
  out.push(`  job            ${j.class}${j.score !== null ? `   score ${j.score.toFixed(2)}` : ''}   ${st.dim(j.rule)}`);
  const cells = (m: EfficiencyMeans | null) =>
    m
      ? [
          pct(m.sm_active),
          pct(m.sm_occupancy),
          pct(m.tensor_active),
          pct(m.dram_active),
          pct(m.fp64_active),
          pct(m.fp32_active),
          pct(m.fp16_active),
          gb(m.nvlink_bytes),
          gb(m.pcie_bytes),
        ]
      : Array<string>(9).fill('-');
  out.push(
    ...table(
      [
        ['NODE', 'GPU', 'SM', 'OCC', 'TENSOR', 'DRAM', 'FP64', 'FP32', 'FP16', 'NVLINK GB', 'PCIE GB', 'IDLE', 'CLASS', 'SCORE'],
        ...e.gpus.map((g) => [
          nodes.get(g.uuid) ?? '-',
          g.index === null ? g.uuid.slice(0, 12) : String(g.index),
          ...cells(g.means),
          duration(g.idle.seconds),
          g.class,
          g.score === null ? '-' : g.score.toFixed(2),
        ]),
        ...(e.gpus.length > 1
          ? [['job', '', ...cells(j.means), duration(j.idle.seconds), j.class, j.score === null ? '-' : j.score.toFixed(2)]]
          : []),
      ],
      st,
    ).map((l) => `  ${l}`),
  );
  if (j.imbalance)
    out.push(
      `  imbalance      SM active ${pct(j.imbalance.max)} (${j.imbalance.max_gpu.slice(0, 12)}) / ` +
        `${pct(j.imbalance.min)} (${j.imbalance.min_gpu.slice(0, 12)})${
          j.imbalance.ratio === null ? '' : ` = ` + `${j.imbalance.ratio.toFixed(2)}x`
        }`,
    );
  if (j.idle.basis !== 'none') {
    out.push(
      `  idle           ${duration(j.idle.seconds)} ` +
        `GPU-time${j.idle.basis === 'util' ? ' (by utilization)' : ' (SM active < 1%)'}${
          j.idle.longest_gpu
            ? `; longest ` + `${duration(j.idle.longest_s)} on ${j.idle.longest_gpu.slice(0, 12)} from ${j.idle.longest_start}`
            : ''
        }`,
    );
  }
  return out;
}

function csvCell(v: unknown): string {
  let s = printable(v === null || v === undefined ? '' : Array.isArray(v) ? v.join(';') : String(v));
  // a text cell a spreadsheet would run as a formula (=, +, -, @, tab, CR first) starts with ' instead (OWASP)
  if (typeof v !== 'number' && /^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export function renderCsv(rows: readonly JobListRow[]): string {
  const cols = [
    'id',
    'user',
    'account',
    'partition',
    'state',
    'start',
    'elapsed_s',
    'gpus',
    'gpu_hours',
    'idle_gpu_hours',
    'util_mean',
    'mem_peak_bytes',
    'energy_kwh',
    'cost',
    'co2e_g',
    'problems',
  ] as const;
  return [cols.join(','), ...rows.map((r) => cols.map((c) => csvCell(r[c])).join(','))].join('\n') + '\n';
}

/** `l9gpu jobs --waste`: one line per job and class, most GPU-hours wasted first, and the sum per class. */
export function renderWaste(raw: readonly WasteRow[], st: Style): string {
  const rows = printableDeep(raw);
  const per = new Map<string, number>();
  for (const r of rows) per.set(r.class, (per.get(r.class) ?? 0) + r.wasted_gpu_hours);
  return (
    table(
      [
        ['JOBID', 'USER', 'ACCOUNT', 'PARTITION', 'STATE', 'GPUS', 'GPU-H', 'CLASS', 'WASTED GPU-H', 'WHY'],
        ...rows.map((r) => [
          r.id,
          r.user ?? '-',
          r.account ?? '-',
          r.partition ?? '-',
          r.state,
          String(r.gpus),
          r.gpu_hours.toFixed(2),
          r.class,
          r.wasted_gpu_hours.toFixed(2),
          r.detail,
        ]),
      ],
      st,
    ).join('\n') + `\nwasted GPU-hours by class (a job may be in several): ${[...per].map(([c, h]) => `${c} ${h.toFixed(2)}`).join(', ')}\n`
  );
}

export function renderWasteCsv(rows: readonly WasteRow[]): string {
  const cols = [
    'id',
    'user',
    'account',
    'partition',
    'state',
    'start',
    'elapsed_s',
    'gpus',
    'gpu_hours',
    'class',
    'wasted_gpu_hours',
    'detail',
  ] as const;
  return [cols.join(','), ...rows.map((r) => cols.map((c) => csvCell(r[c])).join(','))].join('\n') + '\n';
}

/** `l9gpu jobs --by`: one line per user, account or partition. */
export function renderBy(raw: readonly JobGroupRow[], by: GroupBy, st: Style): string {
  const rows = printableDeep(raw);
  const anyCost = rows.some((r) => r.cost !== null);
  const anyCo2e = rows.some((r) => r.co2e_kg !== null);
  const currency = rows.find((r) => r.currency !== null)?.currency;
  // GPU-hours by SM activity, where any job had GPM
  const anyGpm = rows.some((r) => r.gpm_gpu_hours !== null);
  const h = (x: number | null) => (x === null ? '-' : x.toFixed(2));
  return (
    table(
      [
        [
          by.toUpperCase(),
          'JOBS',
          'GPU-H',
          'IDLE GPU-H',
          'UTIL',
          ...(anyGpm ? ['GPM GPU-H', 'SM GPU-H', 'SM-IDLE GPU-H'] : []),
          'ENERGY kWh',
          ...(anyCost ? [`COST ${currency}`] : []),
          ...(anyCo2e ? ['CO2e kg'] : []),
        ],
        ...rows.map((r) => [
          r.group ?? '-',
          String(r.jobs),
          r.gpu_hours.toFixed(2),
          r.idle_gpu_hours.toFixed(2),
          pct(r.util_mean),
          ...(anyGpm ? [h(r.gpm_gpu_hours), h(r.sm_gpu_hours), h(r.sm_idle_gpu_hours)] : []),
          kwh(r.energy_kwh),
          ...(anyCost ? [r.cost === null ? '-' : r.cost.toFixed(2)] : []),
          ...(anyCo2e ? [r.co2e_kg === null ? '-' : r.co2e_kg.toFixed(3)] : []),
        ]),
      ],
      st,
    ).join('\n') + '\n'
  );
}

export function renderByCsv(rows: readonly JobGroupRow[], by: GroupBy): string {
  const keyed = keyedGroups(by, rows);
  const cols = [
    by,
    'jobs',
    'gpu_hours',
    'idle_gpu_hours',
    'util_mean',
    'gpm_gpu_hours',
    'sm_gpu_hours',
    'sm_idle_gpu_hours',
    'energy_kwh',
    'cost',
    'currency',
    'co2e_kg',
  ];
  return [cols.join(','), ...keyed.map((r) => cols.map((c) => csvCell(r[c])).join(','))].join('\n') + '\n';
}
