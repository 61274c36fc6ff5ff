/** A scraped plugin's config section, apart from its code: reading a configuration loads no HTTP client. */
import { pluginSection } from '../core/config/sections.js';
import type { SectionSpec } from '../core/config/schema.js';

export interface ScrapedSpec {
  readonly name: string;
  /** The section's and the manifest's description. */
  readonly description: string;
  readonly defaultEndpoints: readonly string[];
}

/** The [name] section of a scraped plugin. */
export function scrapedSection(s: ScrapedSpec): SectionSpec {
  return pluginSection(s.name, s.description, [
    { key: 'endpoints', type: 'list', default: [...s.defaultEndpoints], description: 'Metrics pages to scrape (http or https URLs), each a separate engine.' },
    { key: 'max_page_size', type: 'bytes', default: 16 * 1024 * 1024, min: 1024, max: 256 * 1024 * 1024, description: 'Largest page read; a bigger one is that endpoint\'s error.' },
  ]);
}

