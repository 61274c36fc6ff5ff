/**
 * `l9gpu health`: the node's GPUs as the daemon last judged them (its
 * <state_dir>/health.json, judged again here by the same rules with the
 * admin's clears), each with its state, the reasons in words and what to do.
 * Reads a small file and no GPU library: cheap enough for slurmd to run as
 * HealthCheckProgram every few minutes.
 */
import { slurmNodeName } from '../../slurm/node-name.js';
import { loadCliConfig } from './config.js';
import { CliError } from './errors.js';
import type { FlagsOf } from './flag-spec.js';
import type { HEALTH_FLAGS } from './command-flags.js';
import { alignColumns, byText, style } from '../core/text-table.js';
import { assess, MISSING, STATE_NAMES, type GpuHealth, type HealthState } from '../health/rules.js';
import { bootTime, isForgotten, healthFileAge, readClears, readHealthFile, writeClears, xidSince } from '../health/state-file.js';
import type { Config } from '../core/config/load.js';
import { readSection } from '../core/config/read.js';
import { DAEMON_SECTION } from '../core/config/sections.js';
import { HEALTH_SECTION } from '../health/config.js';
import { colorOut, writeOut } from './out.js';

export interface HealthReport {
  node: string;
  /** The worst GPU state; null: unknown (no daemon writing the file). */
  state: 'ok' | 'warning' | 'failed' | 'unknown';
  /** Why the state is unknown, or null. */
  unknown: string | null;
  written: string | null;
  gpus: (GpuHealth & { state_name: string })[];
}

/** The report from the health file at `now`. */
export function healthReport(cfg: Config, now = Date.now()): HealthReport {
  const dir = readSection(cfg, DAEMON_SECTION).state_dir;
  const health = readSection(cfg, HEALTH_SECTION);
  const node = slurmNodeName(cfg);
  let file;
  try {
    file = readHealthFile(dir);
  } catch (e) {
    return { node, state: 'unknown', unknown: (e as Error).message, written: null, gpus: [] };
  }
  if (!file)
    return {
      node,
      state: 'unknown',
      unknown: `no health file in ${dir}: is the l9gpu daemon running here, with [health] enabled and this state_dir?`,
      written: null,
      gpus: [],
    };
  const staleMs = Math.max(health.stale_after * 1000, 5 * file.interval_ms);
  const age = healthFileAge(file, now);
  const clears = readClears(dir);
  const boot = bootTime();
  const windowMs = health.xid_window * 1000;
  // a GPU cleared while missing is gone here at once (the daemon drops it from the file at its next collection)
  const kept = file.gpus.filter((f) => !isForgotten(f, clears));
  const latest = Math.max(0, ...kept.map((g) => g.seen));
  // a GPU that sat out the last three collections the others were in is missing
  const missingBefore = latest - 3 * file.interval_ms;
  const gpus = kept
    .map((f) => assess(f, { now, xidSince: xidSince(f.uuid, now, windowMs, boot, clears), missingBefore }))
    .sort((a, b) => (a.index ?? 1e9) - (b.index ?? 1e9) || byText(a.uuid, b.uuid))
    .map((h) => ({ ...h, state_name: STATE_NAMES[h.state] }));
  const worst = Math.max(0, ...gpus.map((g) => g.state)) as HealthState;
  const what = file.gpus.length ? 'GPU health' : 'health';
  const stale =
    age === Infinity
      ? `the daemon wrote ${what} at ${new Date(file.written).toISOString()}, later than now by ` +
        `this clock (it stepped back since?): not judged fresh; is it running?`
      : age > staleMs
        ? `the daemon last wrote ${what} ${Math.round(age / 1000)} s ago (stale after ${Math.round(staleMs / 1000)} s): is it running?`
        : null;
  return { node, state: stale ? 'unknown' : STATE_NAMES[worst], unknown: stale, written: new Date(file.written).toISOString(), gpus };
}

const short = (uuid: string) => uuid.slice(0, 12);
const gpuName = (g: GpuHealth) => `GPU ${g.index ?? '?'} (${short(g.uuid)})`;

/** One line for NHC and HealthCheckProgram logs: the worst GPU's first reason and what to do. */
export function nhcLine(r: HealthReport): string {
  if (r.unknown) return `l9gpu: health unknown: ${r.unknown}`;
  const bad = r.gpus.filter((g) => g.state > 0);
  if (bad.length === 0) return `l9gpu: ${r.gpus.length} GPU(s) ok`;
  const worst = bad.reduce((a, b) => (b.state > a.state ? b : a));
  const f = worst.findings.find((x) => x.severity === worst.state)!;
  const more = bad.length > 1 ? ` (+${bad.length - 1} more GPU(s) not ok)` : '';
  return `l9gpu: ${gpuName(worst)} ${STATE_NAMES[worst.state]}: ${f.text}: ${f.action}${more}`;
}

function render(r: HealthReport, color: boolean): string {
  const s = style(color);
  const mark = (st: number, t: string) => (st === 2 ? s.bold(s.warn(t)) : st === 1 ? s.warn(t) : t);
  const out: string[] = [];
  const worst = r.state === 'failed' ? 2 : r.state === 'warning' ? 1 : 0;
  out.push(`${r.node}: ${mark(worst, r.state)}${r.written ? s.dim(`   (judged by the daemon at ${r.written})`) : ''}`);
  if (r.unknown) out.push(`  ${r.unknown}`);
  if (r.gpus.length) {
    out.push('');
    const rows = alignColumns([
      ['GPU', 'UUID', 'MODEL', 'STATE', 'SCORE', 'REASONS'],
      ...r.gpus.map((g) => [
        String(g.index ?? '-'),
        short(g.uuid),
        g.model ?? '-',
        g.state_name,
        g.score.toFixed(2),
        g.findings.map((f) => f.code).join(', ') || '-',
      ]),
    ]);
    out.push(s.bold(rows[0]!), ...rows.slice(1).map((line, i) => mark(r.gpus[i]!.state, line)));
    for (const g of r.gpus) {
      if (!g.findings.length) continue;
      out.push('');
      out.push(`${gpuName(g)} ${g.uuid}:`);
      for (const f of g.findings)
        out.push(`  ${mark(f.severity, f.severity === 0 ? 'info' : STATE_NAMES[f.severity])}: ${f.text}\n      -> ${f.action}`);
    }
  }
  return out.join('\n') + '\n';
}

/** Resolves to the exit code. */
export async function health(f: FlagsOf<typeof HEALTH_FLAGS>): Promise<number> {
  const cfg = loadCliConfig(f.config);
  if (f.clear) return clear(cfg, f.clear);
  if (f.drain && !f.nhc) throw new CliError('--drain goes with --nhc (HealthCheckProgram=... l9gpu health --nhc --drain)', 2);
  const r = healthReport(cfg);
  if (f.json) {
    writeOut(JSON.stringify(r, null, 2) + '\n');
    return 0;
  }
  if (!f.nhc) {
    writeOut(render(r, colorOut()));
    return 0;
  }
  const failed = r.state === 'failed' || (r.state === 'unknown' && f['unknown-fails'] === true);
  const line = nhcLine(r);
  writeOut(line + '\n');
  if (f.drain) await drainOrResume(cfg, r.node, failed, line);
  return failed ? 1 : 0;
}

async function drainOrResume(cfg: Config, node: string, failed: boolean, line: string): Promise<void> {
  const { drainNode, resumeIfOurs, DRAIN_PREFIX } = await import('../../slurm/node-drain.js');
  try {
    if (failed) {
      const d = await drainNode(cfg, node, line.slice(DRAIN_PREFIX.length).trim());
      writeOut(
        d === 'drained' ? `l9gpu: drained ${node}\n` : `l9gpu: ${node} is already drained (${d.state}: ${d.reason ?? 'no reason'})\n`,
      );
    } else if (await resumeIfOurs(cfg, node)) writeOut(`l9gpu: resumed ${node}\n`);
  } catch (e) {
    // the verdict stands (exit status); only the drain could not be done
    process.stderr.write(`l9gpu: cannot ${failed ? 'drain' : 'check or resume'} node ${node}: ${(e as Error).message}\n`);
  }
}

/**
 * `--clear`: the Xid events so far of the GPUs named (a UUID, a UUID prefix naming one GPU, an
 * index, or all), and the GPUs among them that are missing are forgotten (removed, or no longer
 * monitored: else they fail the node for ever).
 */
function clear(cfg: Config, which: string[]): number {
  const dir = readSection(cfg, DAEMON_SECTION).state_dir;
  const names = which
    .flatMap((x) => x.split(','))
    .map((x) => x.trim())
    .filter(Boolean);
  if (!names.length) throw new CliError(`--clear: no GPU named in "${which.join(' ')}" (give a UUID, an index, or all)`, 2);
  const file = readHealthFile(dir);
  const clears = readClears(dir);
  const now = Date.now();
  const report = healthReport(cfg, now);
  const missing = new Set(report.gpus.filter((g) => g.findings.some((f) => f.code === MISSING.code)).map((g) => g.uuid));
  const known = (file?.gpus ?? []).filter((g) => !isForgotten(g, clears));
  const chosen = new Map<string, (typeof known)[number]>();
  let all = false;
  for (const w of names) {
    if (w === 'all') {
      all = true;
      clears.xids['*'] = now;
      for (const g of known) if (missing.has(g.uuid)) chosen.set(g.uuid, g);
      continue;
    }
    const g = pickGpu(known, w, `${dir}/health.json`);
    chosen.set(g.uuid, g);
    clears.xids[g.uuid] = now;
  }
  const forgot: string[] = [];
  for (const g of chosen.values()) {
    if (!missing.has(g.uuid)) continue;
    clears.forgotten[g.uuid] = g.seen;
    forgot.push(`GPU ${g.index ?? '?'} ${g.uuid} (missing since ${new Date(g.seen).toISOString()})`);
  }
  // a forgotten GPU the daemon has since dropped from its file needs no entry
  for (const uuid of Object.keys(clears.forgotten)) if (!file?.gpus.some((g) => g.uuid === uuid)) delete clears.forgotten[uuid];
  try {
    writeClears(dir, clears);
  } catch (e) {
    throw new CliError(`cannot write the clears in ${dir}: ${(e as Error).message}`, 1);
  }
  const cleared = [
    ...(all ? ['every GPU'] : []),
    ...[...chosen.values()].filter((g) => !all && !missing.has(g.uuid)).map((g) => `GPU ${g.index ?? '?'} ${g.uuid}`),
  ];
  if (cleared.length) writeOut(`cleared the Xid events so far of ${cleared.join(', ')}\n`);
  if (forgot.length)
    writeOut(`forgot ${forgot.join(', ')}: no longer collected, it no longer counts (it is judged afresh if it comes back)\n`);
  return 0;
}

/** The one GPU a --clear name means: its UUID, its index, or a prefix of one UUID only. */
function pickGpu<G extends { uuid: string; index: number | null }>(gpus: readonly G[], w: string, where: string): G {
  const exact = gpus.find((g) => g.uuid === w);
  if (exact) return exact;
  const byIndex = gpus.filter((g) => String(g.index) === w);
  const found = byIndex.length ? byIndex : gpus.filter((g) => g.uuid.startsWith(w));
  if (found.length === 1) return found[0]!;
  if (!found.length) throw new CliError(`--clear: no GPU "${w}" in ${where} (give a UUID, an index, or all)`, 2);
  const list =
    found
      .slice(0, 4)
      .map((g) => `${g.uuid} (GPU ${g.index ?? '?'})`)
      .join(', ') + (found.length > 4 ? `, ... ${found.length - 4} more` : '');
  throw new CliError(
    `--clear: "${w}" is ambiguous: ${found.length} GPUs have that ${byIndex.length ? 'index' : 'UUID prefix'} ` +
      `(${list}); give the whole UUID`,
    2,
  );
}
