/**
 * `l9gpu doctor`: its flags as data and its body, shared by the oclif command
 * and the light entry (light-main.ts).
 */
import { join } from 'node:path';
import { ALL_SECTIONS, loadPlugins, loadSinks, resolveAgentAttribution, selectAgentPlugins } from '../../daemon/schema.js';
import { expectGpus, gpuShortfall } from '../../daemon/gpu-expectation.js';
import { AUTO } from '../../daemon/selection.js';
import { DEFAULT_CONFIG_PATH, displayValue } from '../core/config/load.js';
import { createLogger } from '../core/log.js';
import { pluginContext } from '../core/plugin.js';
import { dirWritable } from '../core/probe.js';
import { VERSION, resourceAttributes } from '../core/resource.js';
import { loadCliConfig } from './config.js';
import type { FlagsOf } from './flag-spec.js';
import type { DOCTOR_FLAGS } from './command-flags.js';
import { askJobsDaemon } from '../jobs/client.js';
import { jobsSocketPath } from '../jobs/server.js';
import { healthFileAge, readHealthFile } from '../health/state-file.js';
import { lockHeld } from '../core/state-lock.js';
import { readSection } from '../core/config/read.js';
import { DAEMON_SECTION } from '../core/config/sections.js';
import { writeOut } from './out.js';
import { securityFindings } from './doctor-security.js';
import { JOBS_SECTION } from '../jobs/config.js';
import { tlsFilesOf } from '../core/config/client-keys.js';
import { endpointReachable } from '../core/probe.js';
import { redactUrl } from '../core/redact.js';

interface Check {
  name: string;
  enabled: boolean;
  ok: boolean;
  detail: string;
  describe?: string;
  /** A GPU plugin's: GPUs its source sees. */
  gpus?: number;
  /** Not enabled, but its vendor's GPUs belong here and none were found. */
  problem?: boolean;
}

/** Prints the report; resolves to the exit code (1: a problem was found). */
export async function doctor(flags: FlagsOf<typeof DOCTOR_FLAGS>): Promise<number> {
  const cfg = loadCliConfig(flags.config);
  const enabledSinks = new Set(readSection(cfg, DAEMON_SECTION).sinks);
  const ctx = pluginContext(cfg, createLogger('error'));
  const selection = await selectAgentPlugins(cfg, ctx);
  const [pluginManifests, sinkManifests] = await Promise.all([loadPlugins(), loadSinks()]);
  const enabledPlugins = new Set(selection.names);

  const plugins: Check[] = await Promise.all(
    pluginManifests.map(async (p) => ({
      name: p.name,
      enabled: enabledPlugins.has(p.name),
      ...(selection.detected[p.name] ?? (await p.probe(ctx).catch((e: Error) => ({ ok: false, detail: e.message })))),
    })),
  );
  const sinks: Check[] = await Promise.all(
    sinkManifests.map(async (s) => {
      const enabled = enabledSinks.has(s.name);
      const r = enabled ? await s.probe(cfg).catch((e: Error) => ({ ok: false, detail: e.message })) : { ok: true, detail: '' };
      return { name: s.name, enabled, ...r, describe: s.describe(cfg) };
    }),
  );
  const attribution = resolveAgentAttribution(cfg);
  const provider = attribution.manifest ? await attribution.manifest.doctor(cfg, process.env) : undefined;
  const stateDir = readSection(cfg, DAEMON_SECTION).state_dir;
  const store = { path: join(stateDir, 'l9gpu.db'), ...dirWritable(stateDir) };
  // a downgrade: the store is read, never written (the daemon says it at every start too)
  const newer = await import('../store/open-readonly.js').then((m) => m.newerStore(stateDir)).catch(() => undefined);
  if (newer) Object.assign(store, { ok: false, detail: newer.message });
  const jobsSocket = attribution.manifest ? await jobsSocketCheck(stateDir) : null;
  const jobs = readSection(cfg, JOBS_SECTION);
  // where the slurmctld epilog and jobs show --source promql read: its TLS files and reachability
  const promql = jobs.promql_url
    ? {
        url: redactUrl(jobs.promql_url),
        ...(await endpointReachable(jobs.promql_url, tlsFilesOf('jobs', 'promql_', jobs), {
          ca: '[jobs] promql_certificate',
          cert: '[jobs] promql_client_certificate',
          endpoint: '[jobs] promql_url',
        })),
      }
    : null;
  const security = securityFindings(cfg, enabledSinks);

  const shown = ALL_SECTIONS.filter((s) => flags.all || s.name === 'daemon' || enabledPlugins.has(s.name) || enabledSinks.has(s.name));
  const settings = shown.flatMap((s) =>
    s.keys.map((k) => {
      const p = cfg.sourceOf(s.name, k.key);
      const value = displayValue(cfg, s.name, k.key);
      // an unset key that inherits says from where (the JSON keeps the value itself: empty)
      return {
        section: s.name,
        key: k.key,
        value,
        source: p.source,
        detail: p.detail,
        ...(value === '' && k.unset ? { means: k.unset } : {}),
      };
    }),
  );
  // a driver that did not load reads no GPU, like a node without GPUs: what is installed tells them apart
  const expected = await expectGpus(pluginManifests, ctx);
  const found = plugins.filter((c) => c.enabled && c.ok).reduce((n, c) => n + (c.gpus ?? 0), 0);
  const shortfall = gpuShortfall(expected, found);
  const problems =
    [...plugins, ...sinks].filter((c) => c.enabled && !c.ok).length +
    (store.ok ? 0 : 1) +
    (provider?.problems ?? 0) +
    (jobsSocket && !jobsSocket.ok ? 1 : 0) +
    (shortfall ? 1 : 0) +
    (promql && !promql.ok ? 1 : 0) +
    security.filter((f) => f.level === 'problem').length;
  for (const c of plugins) {
    if (!c.enabled && selection.detected[c.name]) c.detail = `not enabled by auto: ${c.detail}`;
    if (shortfall && !c.enabled && expected.plugins.includes(c.name)) c.problem = true;
  }
  // the plugins of the vendors expected here that read no GPU: the cause, said with the problem
  const causes = shortfall ? plugins.filter((c) => expected.plugins.includes(c.name) && !(c.enabled && c.ok && c.gpus)) : [];
  const report = {
    version: VERSION,
    node: process.version,
    plugins_enabled: selection.names,
    config: { file: cfg.file, origin: cfg.fileOrigin, default_path: DEFAULT_CONFIG_PATH },
    resource: resourceAttributes(cfg),
    settings,
    plugins,
    sinks,
    attribution: { mode: attribution.mode, resolved: attribution.resolved, detail: attribution.detail, provider: provider?.json ?? null },
    store,
    jobs_socket: jobsSocket,
    promql,
    security,
    gpus: { found, expected: expected.count, why: expected.why, problem: shortfall ?? null },
    problems,
  };

  if (flags.json) {
    writeOut(JSON.stringify(report, null, 2) + '\n');
  } else {
    const out: string[] = [];
    const mark = (c: { enabled: boolean; ok: boolean; problem?: boolean }): string =>
      c.problem ? ' FAIL' : !c.enabled ? '  -  ' : c.ok ? ' ok  ' : ' FAIL';
    out.push(`l9gpu ${VERSION} (node ${process.version}) on ${report.resource['host.name']}`);
    // the node's worst news first, before the settings
    const cause = (c: Check): string =>
      c.enabled || selection.detected[c.name] ? c.detail : `not enabled ([daemon] plugins does not name it): ${c.detail}`;
    if (shortfall) out.push(`PROBLEM: ${shortfall}`, ...causes.map((c) => `  ${c.name}: ${cause(c)}`));
    const origin = { flag: '--config', env: '$L9GPU_CONFIG', default: 'default path', none: '' }[cfg.fileOrigin];
    out.push(`config file: ${cfg.file ? `${cfg.file} (${origin})` : `none: embedded defaults (${DEFAULT_CONFIG_PATH} not found)`}`);
    out.push('', 'settings (source in brackets):');
    let section = '';
    for (const s of settings) {
      if (s.section !== section) out.push(`  [${(section = s.section)}]`);
      const shown = 'means' in s ? `(${s.means})` : s.value;
      out.push(
        `    ${s.key} = ${shown}${' '.repeat(Math.max(1, 28 - s.key.length - shown.length))}(${s.source}${
          s.detail ? `: ` + `${s.detail}` : ''
        })`,
      );
    }
    out.push('', `plugins${readSection(cfg, DAEMON_SECTION).plugins.includes(AUTO) ? ` (auto: ${selection.names.join(', ')})` : ''}:`);
    for (const c of plugins) out.push(`  ${mark(c)} ${c.name.padEnd(12)} ${c.enabled ? 'enabled ' : 'disabled'}  ${c.detail}`);
    out.push('', 'sinks:');
    for (const c of sinks)
      out.push(
        `  ${mark(c)} ${c.name.padEnd(12)} ${c.enabled ? 'enabled ' : 'disabled'}  ${c.describe}${c.enabled ? ` - ${c.detail}` : ''}`,
      );
    out.push('', `attribution: ${attribution.resolved}${attribution.mode === AUTO ? ` (auto: ${attribution.detail})` : ''}`);
    for (const l of provider?.lines ?? []) out.push(`  ${l}`);
    out.push(`store: ${store.path} - ${store.detail}`);
    if (jobsSocket) out.push(`jobs socket: ${jobsSocket.path} - ${jobsSocket.ok ? '' : 'FAIL: '}${jobsSocket.detail}`);
    if (promql) out.push(`promql: ${promql.url} - ${promql.ok ? '' : 'FAIL: '}${promql.detail}`);
    out.push('', 'security (docs/security.md):');
    if (security.length === 0) out.push('  ok    nothing served or stored for other users or the network to read');
    for (const f of security) out.push(`  ${f.level === 'problem' ? 'FAIL ' : 'WARN '} ${f.what}`, `        fix: ${f.fix}`);
    const warnings = security.filter((f) => f.level === 'warn').length;
    out.push('', problems === 0 ? 'no problems found' : `${problems} problem(s) found`);
    if (warnings) out.push(`${warnings} warning(s): security, above`);
    writeOut(out.join('\n') + '\n');
  }
  return problems > 0 ? 1 : 0;
}

/**
 * Users' `l9gpu jobs` needs the daemon's socket: when the daemon runs (its
 * health file is fresh) the socket must be there and answer, or every user
 * is told "not answering" while the daemon looks well.
 */
async function jobsSocketCheck(stateDir: string): Promise<{ path: string; ok: boolean; detail: string }> {
  const path = jobsSocketPath(stateDir);
  let health;
  try {
    health = readHealthFile(stateDir);
  } catch {
    health = undefined;
  }
  const lock = lockHeld(stateDir);
  const running =
    lock?.held === true || (health !== undefined && healthFileAge(health, Date.now()) < Math.max(60_000, 5 * health.interval_ms));
  try {
    const a = await askJobsDaemon(
      path,
      { op: 'list', user: null, account: null, partition: null, state: 'running', since: null, limit: 1 },
      5000,
    );
    return { path, ok: true, detail: a.ok ? 'answers' : `answers (${a.error})` };
  } catch (e) {
    if (!running)
      return {
        path,
        ok: true,
        detail:
          `not answering; the daemon does not seem to run here (it holds no lock on the state folder, ` +
          `and no fresh health file): ${(e as Error).message}`,
      };
    return {
      path,
      ok: false,
      detail:
        `the daemon runs (${lock?.held ? `pid ${lock.pid ?? '?'} holds the state folder's lock` : 'its health file is fresh'}) ` +
        `but ${(e as Error).message}: users' l9gpu jobs gets no answer; restart the daemon`,
    };
  }
}
