/**
 * What every scraped plugin (vllm, sglang, tgi, triton, nim, dcgm) shares:
 * its config section (endpoints, page size), and a plugin that fetches each
 * endpoint, parses it and converts it by the engine's table. One endpoint
 * down, slow or serving garbage is that endpoint's error (said once, the
 * others go on); all of them failing is the collection's error.
 */
import type { SectionSpec } from '../core/config/schema.js';
import { PointBuffer, type Attributes, type Emitter } from '../core/metrics/model.js';
import type { Plugin, PluginContext, PluginManifest } from '../core/plugin.js';
import { redactUrl } from '../core/redact.js';
import { ConvertState, convertPage, type EngineTable } from './convert.js';
import { formatOf, parseExposition } from './exposition.js';
import { createPageFetcher, type PageFetcher } from './fetch-page.js';
import type { ScrapedSpec } from './section.js';

/** Identity of the points of one endpoint: OpenTelemetry's server.address and server.port. */
export function endpointAttributes(url: string): Attributes {
  const u = new URL(url);
  const port = u.port ? Number(u.port) : u.protocol === 'https:' ? 443 : 80;
  return { 'server.address': u.hostname.replace(/^\[|\]$/g, ''), 'server.port': port };
}

/** Reads the endpoints key, each checked to be an http(s) URL (an error names the key). */
export function endpointsOf(ctx: PluginContext, section: string): string[] {
  const list = ctx.config.list(section, 'endpoints') ?? [];
  for (const e of list) {
    let u: URL;
    try {
      u = new URL(e);
    } catch {
      throw new Error(`[${section}] endpoints: "${e}" is not a URL`);
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`[${section}] endpoints: "${redactUrl(e)}" is not an http(s) URL`);
  }
  return list;
}

interface Target {
  readonly url: string;
  readonly fetcher: PageFetcher;
  readonly state: ConvertState;
  readonly base: Attributes;
}

export interface ScrapedOptions {
  readonly table: EngineTable;
  readonly endpoints: readonly string[];
  readonly timeoutMs: number;
  readonly maxBytes: number;
  /** Emit the table's gen_ai.* metrics too ([daemon] emit_genai). */
  readonly genai?: boolean;
  readonly genaiAttributes?: Attributes;
}

export class ScrapedPlugin implements Plugin {
  private readonly targets: Target[];
  constructor(private readonly o: ScrapedOptions) {
    this.targets = o.endpoints.map((url) => ({ url, fetcher: createPageFetcher(url, o.timeoutMs, o.maxBytes), state: new ConvertState(), base: endpointAttributes(url) }));
  }

  async collect(out: Emitter, signal?: AbortSignal): Promise<void> {
    const failed: string[] = [];
    await Promise.all(
      this.targets.map(async (t) => {
        try {
          const page = await t.fetcher.get(signal);
          const families = parseExposition(page.text, { format: formatOf(page.contentType), maxBytes: this.o.maxBytes, source: redactUrl(t.url) });
          t.state.begin();
          convertPage(this.o.table, families, { out, state: t.state, base: t.base, now: Date.now(), also: this.o.genai, alsoAttributes: this.o.genaiAttributes });
          t.state.end();
        } catch (e) {
          failed.push((e as Error).message);
          out.unreadable(redactUrl(t.url), (e as Error).message);
        }
      }),
    );
    if (failed.length === this.targets.length && failed.length) throw new Error(failed.length === 1 ? failed[0]! : `every endpoint failed: ${failed.join('; ')}`);
  }

  close(): void {
    for (const t of this.targets) t.fetcher.close();
  }
}

/** A scraped plugin's manifest from its spec, section and table. */
export function scrapedPlugin(spec: ScrapedSpec, section: SectionSpec, table: EngineTable, metrics: readonly string[]): PluginManifest {
  const options = (ctx: PluginContext): ScrapedOptions => {
    const interval = ctx.config.num(spec.name, 'interval') ?? ctx.config.num('daemon', 'interval')!;
    const timeout = ctx.config.num(spec.name, 'timeout') ?? interval;
    return {
      table,
      endpoints: endpointsOf(ctx, spec.name),
      // the fetch ends before the collection's own timeout, so that its error is the endpoint's, not a hung collection's
      timeoutMs: Math.max(50, timeout * 1000 * 0.9),
      maxBytes: ctx.config.num(spec.name, 'max_page_size')!,
      genai: ctx.config.bool('daemon', 'emit_genai') ?? false,
      genaiAttributes: { 'gen_ai.provider.name': spec.name },
    };
  };
  return {
    name: spec.name,
    description: spec.description,
    section,
    metrics,
    reportsGpus: false,
    create: (ctx) => new ScrapedPlugin(options(ctx)),
    probe: async (ctx) => {
      let o: ScrapedOptions;
      try {
        o = options(ctx);
      } catch (e) {
        return { ok: false, detail: (e as Error).message };
      }
      const p = new ScrapedPlugin({ ...o, timeoutMs: Math.min(o.timeoutMs, 2000) });
      const out = new PointBuffer();
      try {
        await p.collect(out);
        const seen = [...out.unread.values()];
        return seen.length ? { ok: true, detail: `${o.endpoints.length - seen.length} of ${o.endpoints.length} endpoints answer; ${seen[0]}` } : { ok: true, detail: `${o.endpoints.length} endpoint(s) answer: ${o.endpoints.map(redactUrl).join(', ')}` };
      } catch (e) {
        return { ok: false, detail: (e as Error).message };
      } finally {
        p.close();
      }
    },
  };
}
