/** `npm run docs`: regenerates docs/metrics.md, docs/l9gpu.example.ini and the config section of every plugin README. */
import { readFileSync, writeFileSync } from 'node:fs';
import { ALL_SECTIONS, METRIC_EMITTERS, PLUGINS } from '../../daemon/catalog.js';
import { renderExampleConfig, renderMetricsDoc, withConfigSection } from '../core/docs.js';

const root = new URL('../../../', import.meta.url);
writeFileSync(new URL('docs/metrics.md', root), renderMetricsDoc(METRIC_EMITTERS));
writeFileSync(new URL('docs/l9gpu.example.ini', root), renderExampleConfig(ALL_SECTIONS));
for (const p of PLUGINS) {
  const readme = new URL(`plugins/${p.name}/README.md`, root);
  writeFileSync(readme, withConfigSection(readFileSync(readme, 'utf8'), p.section));
}
process.stdout.write(`wrote docs/metrics.md, docs/l9gpu.example.ini and the config section of ${PLUGINS.length} plugin READMEs\n`);
