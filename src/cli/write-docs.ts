/** `npm run docs`: regenerates docs/metrics.md, docs/l9gpu.example.ini, docs/health.md's tables, the config section of every plugin README
 * and the Ansible role's variables. */
import { readFileSync, writeFileSync } from 'node:fs';
import { ALL_SECTIONS, METRIC_EMITTERS, PLUGINS } from '../../daemon/catalog.js';
import {
  renderRoleArgumentSpecs,
  renderRoleDefaults,
  renderRoleKeys,
  withGeneratedBlock,
  withRoleVersion,
} from '../core/config/ansible.js';
import { VERSION } from '../core/resource.js';
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
const role = (f: string) => new URL(`ansible/roles/l9gpu/${f}`, root);
writeFileSync(
  role('defaults/main.yml'),
  withRoleVersion(
    withGeneratedBlock(readFileSync(role('defaults/main.yml'), 'utf8'), renderRoleDefaults(ALL_SECTIONS), 'defaults/main.yml'),
    VERSION,
  ),
);
writeFileSync(
  role('meta/argument_specs.yml'),
  withGeneratedBlock(
    readFileSync(role('meta/argument_specs.yml'), 'utf8'),
    renderRoleArgumentSpecs(ALL_SECTIONS),
    'meta/argument_specs.yml',
  ),
);
writeFileSync(
  role('vars/main.yml'),
  withGeneratedBlock(readFileSync(role('vars/main.yml'), 'utf8'), renderRoleKeys(ALL_SECTIONS), 'vars/main.yml'),
);
process.stdout.write(
  `wrote docs/metrics.md, docs/l9gpu.example.ini, docs/health.md, the config section of ${PLUGINS.length} ` +
    `plugin READMEs and the Ansible role's variables\n`,
);
