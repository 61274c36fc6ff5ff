/** A scraped plugin's config section, apart from its code: reading a configuration loads no HTTP client. */
import { pluginSection } from '../core/config/sections.js';

const DISCOVER_TEXT =
  ' auto (alone or among URLs): also every engine running on this node, found by its process ' +
  '(command line) and the ports it listens on, looked for every 30 s; [daemon] engines = auto ' +
  'runs this plugin with endpoints = auto unless this key is set.';

export interface ScrapedSpec {
  readonly name: string;
  /** The section's and the manifest's description. */
  readonly description: string;
  readonly defaultEndpoints: readonly string[];
  /** How `endpoints = auto` finds the engine: its processes' command line, the paths to ask, the family names that are its own. */
  readonly discover?: Discovery;
}

export interface Discovery {
  readonly cmdline: RegExp;
  readonly paths: readonly string[];
  readonly recognize: RegExp;
}

/** The [name] section of a scraped plugin. */
export function scrapedSection(s: ScrapedSpec) {
  return pluginSection(s.name, s.description, [
    {
      key: 'endpoints',
      type: 'list',
      default: [...s.defaultEndpoints],
      description: `Metrics pages to scrape (http or https URLs), each a separate ` + `engine.${s.discover ? DISCOVER_TEXT : ''}`,
    },
    {
      key: 'max_page_size',
      type: 'bytes',
      default: 16 * 1024 * 1024,
      min: 1024,
      max: 256 * 1024 * 1024,
      description: "Largest page read; a bigger one is that endpoint's error.",
    },
  ]);
}

export type ScrapedSection = ReturnType<typeof scrapedSection>;
