/**
 * What every scraped plugin (vllm, sglang, tgi, triton, nim, dcgm) shares:
 * its config section (endpoints, page size), and a plugin that fetches each
 * endpoint, parses it and converts it by the engine's table. One endpoint
 * down, slow or serving garbage is that endpoint's error (said once, the
 * others go on); all of them failing is the collection's error.
 */
import { readSection } from '../core/config/read.js';
import type { SectionSpec } from '../core/config/schema.js';
import { DAEMON_SECTION } from '../core/config/sections.js';
import { PointBuffer, type Attributes, type Emitter } from '../core/metrics/model.js';
import type { Plugin, PluginContext, PluginManifest } from '../core/plugin.js';
import { redactUrl } from '../core/redact.js';
import { clip, printable } from '../core/printable.js';
import { ConvertState, convertPage, familiesWithoutSamples, providerAttributes, type EngineTable } from './convert.js';
import { formatOf, LabelSets, parseExposition, parsePage, type Family } from './exposition.js';
import { createPageFetcher, type PageFetcher } from './fetch-page.js';
import { scrapedSection, type Discovery, type ScrapedSpec } from './section.js';
import { discoverListeners, type Listener } from './discover.js';
import type { Logger } from '../core/log.js';
import { isLocalHost, PortOwner } from './socket-owner.js';
import { metric } from '../core/metrics/registry.js';
import { BudgetLedger, DEFAULT_LIMITS, type Limits } from '../core/limits.js';
import { processUid, userName } from '../core/proc-owner.js';
import { ownerSeriesOf, type OwnerSeries } from './owner-series.js';
import { monoNow } from '../core/clock.js';

const SCRAPE_ERRORS = metric('l9gpu.scrape.errors');
const SCRAPE_EMPTY = metric('l9gpu.scrape.empty');

/** Identity of the points of one endpoint: OpenTelemetry's server.address and server.port. */
export function endpointAttributes(url: string): Attributes {
  const u = new URL(url);
  const port = u.port ? Number(u.port) : u.protocol === 'https:' ? 443 : 80;
  return { 'server.address': u.hostname.replace(/^\[|\]$/g, ''), 'server.port': port };
}

/** The endpoints key's value, each checked to be an http(s) URL (an error names the key). */
export function endpointsOf(section: string, list: string[]): string[] {
  for (const e of list) {
    if (e === 'auto') continue;
    let u: URL;
    try {
      u = new URL(e);
    } catch {
      throw new Error(`[${section}] endpoints: "${e}" is not a URL`);
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:')
      throw new Error(`[${section}] endpoints: "${redactUrl(e)}" is not an http(s) URL`);
  }
  return list;
}

interface Target {
  readonly url: string;
  /** A discovered engine's "pid:start:port" (undefined: a configured endpoint). */
  readonly found?: string;
  readonly fetcher: PageFetcher;
  readonly state: ConvertState;
  /** Its last page's label sets: a series on every page is read once (exposition.ts). */
  readonly labels: LabelSets;
  readonly base: Attributes;
  /** The process listening on a local endpoint's port: its pid goes on the points, for attribution to find its job. */
  readonly owner: PortOwner | undefined;
  /** Its key among the agent's endpoints for series_per_user. */
  readonly key: string;
  /** The last failure while it lasts (undefined: answering), and every failure so far. */
  failing?: string;
  errors: number;
  /** Scrapes whose page declared the engine's families and held no sample of them; whether the log has said so. */
  empty: number;
  saidEmpty?: boolean;
  readonly since: number;
}

export interface ScrapedOptions {
  readonly table: EngineTable;
  readonly endpoints: readonly string[];
  readonly timeoutMs: number;
  readonly maxBytes: number;
  /** Emit the table's gen_ai.* metrics too ([daemon] emit_genai). */
  readonly genai?: boolean;
  readonly genaiAttributes?: Attributes;
  /** This machine's names: an endpoint on one of them (or loopback) has a local process to find. */
  readonly hostNames?: readonly string[];
  /** Where procfs is (tests). */
  readonly proc?: string;
  /** How `auto` among the endpoints finds the engines on this node. */
  readonly discover?: Discovery;
  readonly log?: Logger;
  /** [limits]: series per endpoint and per user, label length (default: the defaults). */
  readonly limits?: Limits;
  /** Where hits of the limits are counted (the agent's; default: one of its own). */
  readonly budgets?: BudgetLedger;
}

/** How often `auto` looks for engines: a process walk reads every command line. */
export const DISCOVERY_MS = 30_000;

/**
 * Lines of a page read at most for a series bound: a page within the bound
 * has a line per sample and at most three (# HELP, # TYPE, # UNIT) per family,
 * and its families count toward the bound. Past it the connection is closed:
 * a page of a quarter of a million series costs what the bound can use.
 */
export const pageLines = (maxSeries: number): number => 4 * maxSeries + 16;

/** Whether an endpoint's identity is that listener: its port, and its address or both on this machine's loopback. */
function sameEndpoint(a: Attributes, l: Listener): boolean {
  if (a['server.port'] !== l.port) return false;
  const host = String(a['server.address']);
  return host === l.host.replace(/^\[|\]$/g, '') || (isLocalHost(host, []) && isLocalHost(l.host, []));
}

const foundKey = (l: Listener) => `${l.pid}:${l.start ?? ''}:${l.port}`;

export class ScrapedPlugin implements Plugin {
  private targets: Target[];
  private readonly auto: boolean;
  private nextDiscovery = 0;
  /** Discovered ports that answered with a page that is not this engine's: not asked again while the process lives. */
  private readonly notOurs = new Set<string>();
  /** Discovered ports that took a request and never answered, and until when they are left alone. */
  private readonly silent = new Map<string, { until: number; wait: number }>();
  private readonly limits: Limits;
  private readonly budgets: BudgetLedger;
  private readonly owners: OwnerSeries;
  /** providerAttributes: the points' gen_ai.provider.name. */
  private readonly provider: Attributes;
  constructor(private readonly o: ScrapedOptions) {
    this.provider = providerAttributes(o.table);
    this.auto = o.endpoints.includes('auto') && !!o.discover;
    this.limits = o.limits ?? DEFAULT_LIMITS;
    this.budgets = o.budgets ?? new BudgetLedger(o.log);
    this.owners = ownerSeriesOf(this.budgets);
    this.targets = o.endpoints
      .filter((u) => u !== 'auto')
      .map((url) => {
        const base = { ...endpointAttributes(url), ...this.provider };
        const local = isLocalHost(String(base['server.address']), o.hostNames ?? []);
        return {
          url,
          key: this.keyOf(url),
          fetcher: createPageFetcher(url, o.timeoutMs, o.maxBytes),
          state: new ConvertState(),
          labels: new LabelSets(),
          base,
          owner: local ? new PortOwner(Number(base['server.port']), o.proc) : undefined,
          errors: 0,
          empty: 0,
          since: Date.now(),
        };
      });
  }

  private keyOf(url: string): string {
    return `${this.o.table.engine} ${url}`;
  }

  private drop(t: Target): void {
    t.fetcher.close();
    this.owners.forget(t.key);
  }

  /** Looks for the engine's processes and the ports that serve its page; forgets the engines that are gone. */
  private async rediscover(signal?: AbortSignal): Promise<void> {
    const d = this.o.discover!;
    const found = this.perUser(discoverListeners(d.cmdline, this.o.proc));
    const alive = new Set(found.map(foundKey));
    for (const t of this.targets) {
      if (t.found && !alive.has(t.found)) {
        this.drop(t);
        this.o.log?.info('engine gone', { url: t.url });
      }
    }
    this.targets = this.targets.filter((t) => !t.found || alive.has(t.found));
    for (const k of this.notOurs) if (!alive.has(k)) this.notOurs.delete(k);
    for (const k of this.silent.keys()) if (!alive.has(k)) this.silent.delete(k);
    // every candidate port at once: a port that takes the request and never answers costs its timeout once, not once per port
    await Promise.all(found.map((l) => this.probe(l, signal)));
  }

  /**
   * At most [limits] engine_ports_per_user listeners of one user's processes
   * (lowest pids first, as found): a process named like an engine that listens
   * on thousands of ports would otherwise cost a probe, a connection and a
   * target each. Root's are the admin's.
   */
  private perUser(ls: Listener[]): Listener[] {
    const cap = this.limits.enginePortsPerUser;
    const seen = new Map<number, number>();
    return ls.filter((l) => {
      const uid = processUid(l.pid, this.o.proc);
      if (uid === undefined || uid === 0) return true;
      const n = (seen.get(uid) ?? 0) + 1;
      seen.set(uid, n);
      if (n <= cap) return true;
      this.budgets.hit(
        'engine_ports_per_user',
        userName(uid),
        `engines = auto: the processes of ${userName(uid)} named like ${this.o.table.engine} listen ` +
          `on more than ${cap} ports: port ${l.port} (pid ${l.pid}) and the rest not asked`,
      );
      return false;
    });
  }

  /** Asks one discovered port for the engine's page; a page with the engine's families makes it an endpoint. */
  private async probe(l: Listener, signal?: AbortSignal): Promise<void> {
    const d = this.o.discover!;
    const key = foundKey(l);
    // a configured endpoint already scrapes it: once is enough
    if (this.notOurs.has(key) || this.targets.some((t) => t.found === key || sameEndpoint(t.base, l))) return;
    const quiet = this.silent.get(key);
    if (quiet && monoNow() < quiet.until) return;
    let answered = 0;
    let silent = 0;
    for (const path of d.paths) {
      const url = `http://${l.host}:${l.port}${path}`;
      const fetcher = createPageFetcher(url, Math.min(this.o.timeoutMs, 2000), this.o.maxBytes);
      let ours = false;
      try {
        const page = await fetcher.get(signal, undefined, pageLines(this.limits.seriesPerEndpoint));
        answered++;
        ours = parseExposition(page.text, {
          format: formatOf(page.contentType),
          maxBytes: this.o.maxBytes,
          maxSamples: this.limits.seriesPerEndpoint,
          ...(page.cut ? { cut: true } : {}),
        }).some((f) => d.recognize.test(f.name));
      } catch (e) {
        // not a metrics page, or not yet (an engine loading its model): asked again at a later look
        if (/no whole answer/.test((e as Error).message)) silent++;
      }
      if (ours) {
        const base = { ...endpointAttributes(url), ...this.provider, 'process.pid': l.pid };
        this.targets.push({
          url,
          key: this.keyOf(url),
          found: key,
          fetcher,
          state: new ConvertState(),
          labels: new LabelSets(),
          base,
          owner: undefined,
          errors: 0,
          empty: 0,
          since: Date.now(),
        });
        this.o.log?.info('engine found', { url, pid: l.pid });
        return;
      }
      fetcher.close();
    }
    // every path answered with a page that is not this engine's: another server of the process (Triton's HTTP
    // port beside its metrics port)
    if (answered === d.paths.length) this.notOurs.add(key);
    // a port that takes the request and never answers (not HTTP: a collective's or a debugger's), or an engine
    // still loading: asked again after a wait that doubles, up to 10 minutes
    else if (silent) {
      const wait = Math.min(600_000, (quiet?.wait ?? DISCOVERY_MS / 2) * 2);
      this.silent.set(key, { until: monoNow() + wait, wait });
    }
  }

  async collect(out: Emitter, signal?: AbortSignal): Promise<void> {
    if (this.auto && monoNow() >= this.nextDiscovery) {
      this.nextDiscovery = monoNow() + DISCOVERY_MS;
      await this.rediscover(signal);
    }
    await Promise.all(
      this.targets.map(async (t) => {
        // the page's owner answers for it: a user's process counts against their budget, root's and a remote
        // endpoint's (configured by the admin) against the endpoint's alone. Found once the page's first bytes came
        // (the request does not wait for a walk of /proc), or after it failed
        let id: { pid?: number; owner?: string; user: boolean } | undefined;
        const identify = () => {
          if (id) return id;
          const pid = t.owner ? t.owner.pid() : (t.base['process.pid'] as number | undefined);
          const uid = pid === undefined ? undefined : processUid(pid, this.o.proc);
          return (id = { pid, owner: uid === undefined ? undefined : userName(uid), user: uid !== undefined && uid !== 0 });
        };
        const whoOf = () => identify().owner ?? `${t.base['server.address']}:${t.base['server.port']}`;
        const where = redactUrl(t.url);
        const hold = this.owners.hold(() => (identify().user ? identify().owner : undefined), this.limits.pageBytesPerUser);
        try {
          const perEndpoint = this.limits.seriesPerEndpoint;
          const page = await t.fetcher.get(signal, hold, pageLines(perEndpoint));
          const { pid, owner, user: isUser } = identify();
          const who = whoOf();
          const userLeft = isUser ? this.owners.left(t.key, owner!, this.limits.seriesPerUser) : Infinity;
          const parsed = parsePage(page.text, {
            format: formatOf(page.contentType),
            maxBytes: this.o.maxBytes,
            source: where,
            maxSamples: Math.min(perEndpoint, userLeft),
            labelSets: t.labels,
            ...(page.cut ? { cut: true } : {}),
          });
          if (isUser) this.owners.took(t.key, owner!, parsed.samples);
          if (parsed.dropped) {
            const user = userLeft < perEndpoint;
            this.budgets.hit(
              user ? 'series_per_user' : 'series_per_endpoint',
              who,
              `${where}: ${parsed.dropped}${page.cut ? '+ (the rest of the page unread)' : ''} series ` +
                `past ${user ? `what is left of ${owner}'s ${this.limits.seriesPerUser}` : `the ${perEndpoint} of one endpoint`} ` +
                `dropped`,
              parsed.dropped,
            );
          }
          const base =
            pid === undefined ? t.base : { ...t.base, 'process.pid': pid, ...(owner !== undefined ? { 'process.owner': owner } : {}) };
          t.state.begin();
          const series = convertPage(this.o.table, parsed.families, {
            out,
            state: t.state,
            base,
            now: out.time ?? Date.now(),
            also: this.o.genai,
            alsoAttributes: this.o.genaiAttributes,
            labelLength: this.limits.labelLength,
            onCut: (label) =>
              this.budgets.hit(
                'label_length',
                who,
                `${where}: label ${printable(clip(label, 60))} longer than ${this.limits.labelLength}: cut`,
              ),
          });
          t.state.end();
          if (series === 0) this.noSamples(t, parsed.families);
          if (t.failing !== undefined) this.o.log?.info('endpoint answering again', { url: redactUrl(t.url) });
          t.failing = undefined;
        } catch (e) {
          const msg = (e as Error).message;
          if (hold.refused) this.budgets.hit('page_bytes_per_user', whoOf(), `${where}: ${msg}`);
          t.errors++;
          // one line when it starts failing or fails otherwise, one when it answers again: not one per tick
          if (msg !== t.failing) this.o.log?.error('endpoint failed', { url: redactUrl(t.url), error: msg });
          t.failing = msg;
        } finally {
          hold.release();
        }
        const endpoint = {
          'l9gpu.plugin': this.o.table.engine,
          'server.address': t.base['server.address']!,
          'server.port': t.base['server.port']!,
        };
        out.add(SCRAPE_ERRORS, t.errors, endpoint, t.since);
        out.add(SCRAPE_EMPTY, t.empty, endpoint, t.since);
      }),
    );
  }

  /**
   * A page that declares the engine's families and holds no sample of them
   * gives no points and no error: counted, and said once per endpoint, so that
   * zero points is never silent.
   */
  private noSamples(t: Target, families: readonly Family[]): void {
    const why = familiesWithoutSamples(this.o.table, families);
    if (!why) return;
    t.empty++;
    if (t.saidEmpty) return;
    t.saidEmpty = true;
    const shown = why.names.slice(0, 3).join(', ') + (why.names.length > 3 ? ` and ${why.names.length - 3} more` : '');
    this.o.log?.warn('endpoint page has no samples of the engine', {
      url: redactUrl(t.url),
      families: shown,
      why: why.renamed
        ? `its samples are named like ${printable(clip(why.renamed, 80))}: the server escaped the ` +
          `sample names and not their # TYPE lines (prometheus_client's escaping=underscores, ` +
          `client_python#1177)`
        : 'the engine has not filled them yet (before its first request), or it serves them under other names',
    });
  }

  close(): void {
    for (const t of this.targets) this.drop(t);
  }

  /** The endpoints scraped now (configured and discovered). */
  get endpoints(): string[] {
    return this.targets.map((t) => t.url);
  }
}

/** A scraped plugin's manifest from its spec, section and table. */
export function scrapedPlugin(spec: ScrapedSpec, section: SectionSpec, table: EngineTable, metrics: readonly string[]): PluginManifest {
  const options = (ctx: PluginContext): ScrapedOptions => {
    // the keys every scraped section has (dcgm's adds its own), typed from the spec's declaration
    const own = readSection(ctx.config, scrapedSection(spec));
    const daemon = readSection(ctx.config, DAEMON_SECTION);
    const interval = own.interval ?? daemon.interval;
    const timeout = own.timeout ?? interval;
    // [daemon] engines = auto: look for this engine unless its endpoints were set
    const set = ctx.config.sourceOf(spec.name, 'endpoints').source !== 'default';
    const endpoints = !set && spec.discover && daemon.engines === 'auto' ? ['auto'] : endpointsOf(spec.name, own.endpoints);
    return {
      table,
      endpoints,
      // the fetch ends before the collection's own timeout, so that its error is the endpoint's, not a hung collection's
      timeoutMs: Math.max(50, timeout * 1000 * 0.9),
      maxBytes: own.max_page_size,
      genai: daemon.emit_genai,
      genaiAttributes: { 'gen_ai.provider.name': spec.name },
      hostNames: [ctx.hostName],
      ...(spec.discover ? { discover: spec.discover } : {}),
      log: ctx.log,
      limits: ctx.limits,
      budgets: ctx.budgets,
    };
  };
  return {
    name: spec.name,
    description: spec.description,
    section,
    metrics: [...metrics, SCRAPE_ERRORS.name, SCRAPE_EMPTY.name],
    reportsGpus: false,
    ...(spec.discover ? { engine: true } : {}),
    create: (ctx) => new ScrapedPlugin(options(ctx)),
    probe: async (ctx) => {
      let o: ScrapedOptions;
      try {
        o = options(ctx);
      } catch (e) {
        return { ok: false, detail: (e as Error).message };
      }
      // quiet: doctor's line says it, not the log
      const p = new ScrapedPlugin({ ...o, timeoutMs: Math.min(o.timeoutMs, 2000), log: undefined });
      const out = new PointBuffer();
      try {
        await p.collect(out);
        const failed = out.points.filter((x) => x.metric === SCRAPE_ERRORS && x.value > 0).length;
        const n = p.endpoints.length;
        if (n === 0)
          return { ok: false, detail: o.endpoints.includes('auto') ? 'no engine found on this node' : 'no endpoints configured' };
        const empty = out.points.filter((x) => x.metric === SCRAPE_EMPTY && x.value > 0).length;
        return failed === n
          ? {
              ok: false,
              detail: `${n === 1 ? 'the endpoint does' : `none of ${n} endpoints do`} not answer: ${p.endpoints.map(redactUrl).join(', ')}`,
            }
          : {
              ok: true,
              detail: `${n - failed} of ${n} endpoint(s) answer: ${p.endpoints.map(redactUrl).join(', ')}${
                empty ? `; ${empty} with ` + `the engine's families and no sample of them (no points)` : ''
              }`,
            };
      } catch (e) {
        return { ok: false, detail: (e as Error).message };
      } finally {
        p.close();
      }
    },
  };
}
