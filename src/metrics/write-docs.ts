/** `npm run docs`: regenerates docs/metrics.md and docs/l9gpu.example.ini. */
import { writeFileSync } from 'node:fs';
import { ALL_SECTIONS } from '../../daemon/catalog.js';
import { renderExampleConfig, renderMetricsDoc } from './docs.js';

const root = new URL('../../../', import.meta.url);
writeFileSync(new URL('docs/metrics.md', root), renderMetricsDoc());
writeFileSync(new URL('docs/l9gpu.example.ini', root), renderExampleConfig(ALL_SECTIONS));
process.stdout.write('wrote docs/metrics.md and docs/l9gpu.example.ini\n');
