/** `npm run docs`: regenerates docs/metrics.md, docs/l9gpu.example.ini, docs/health.md's tables and the config section of every plugin README. */
import { readFileSync, writeFileSync } from 'node:fs';
import { ALL_SECTIONS, METRIC_EMITTERS, PLUGINS } from '../../daemon/catalog.js';
import { renderExampleConfig, renderMetricsDoc, withConfigSection } from '../core/docs.js';
import { withHealthTables } from '../health/docs.js';

const root = new URL('../../../', import.meta.url);
writeFileSync(new URL('docs/metrics.md', root), renderMetricsDoc(METRIC_EMITTERS));
writeFileSync(new URL('docs/l9gpu.example.ini', root), renderExampleConfig(ALL_SECTIONS));
const health = new URL('docs/health.md', root);
writeFileSync(health, withHealthTables(readFileSync(health, 'utf8')));
for (const p of PLUGINS) {
  const readme = new URL(`plugins/${p.name}/README.md`, root);
  writeFileSync(readme, withConfigSection(readFileSync(readme, 'utf8'), p.section));
}
process.stdout.write(`wrote docs/metrics.md, docs/l9gpu.example.ini, docs/health.md and the config section of ${PLUGINS.length} plugin READMEs\n`);
