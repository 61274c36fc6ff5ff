/**
 * The Ansible role's view of the schema: one variable per INI key
 * (l9gpu_<section>_<key>), its argument spec, and the table the INI template
 * walks. Generated like docs/l9gpu.example.ini, so a key added to the schema is a
 * role variable the same day, and a test fails when the role is stale.
 *
 * Every variable defaults to null: the key is left out of the rendered file and
 * the daemon's own default applies (and follows upgrades). The comment above each
 * variable says what that default is.
 */
import { defaultText, wrap } from '../docs.js';
import type { KeySpec, SectionSpec } from './schema.js';

export const roleVariable = (section: string, key: string): string => `l9gpu_${section}_${key}`;

const ARG_TYPES: Record<KeySpec['type'], string> = {
  string: 'str',
  path: 'path',
  int: 'int',
  number: 'float',
  duration: 'raw',
  bytes: 'raw',
  bool: 'bool',
  list: 'list',
  enum: 'str',
  url: 'str',
  map: 'dict',
};

/** defaults/main.yml's generated block: every key, null, with its description and the daemon's default. */
export function renderRoleDefaults(sections: readonly SectionSpec[]): string {
  const out: string[] = [];
  for (const s of sections) {
    out.push(...wrap(`[${s.name}] ${s.description}`, '# ', 98));
    for (const k of s.keys) {
      out.push(...wrap(k.description, '#   ', 96));
      const type = k.type === 'enum' ? `one of ${k.values!.join(', ')}` : k.type === 'map' ? 'mapping' : k.type;
      out.push(`#   ${type}; daemon default: ${defaultText(k)}${k.secret ? '; a secret: keep it in a vault' : ''}`);
      out.push(`${roleVariable(s.name, k.key)}: null`);
    }
    out.push('');
  }
  return out.join('\n');
}

/** meta/argument_specs.yml's generated options (indented for options: of the main entry point). */
export function renderRoleArgumentSpecs(sections: readonly SectionSpec[]): string {
  const out: string[] = [];
  for (const s of sections) {
    for (const k of s.keys) {
      out.push(`      ${roleVariable(s.name, k.key)}:`);
      out.push(`        type: ${ARG_TYPES[k.type]}`);
      if (k.type === 'list') out.push('        elements: str');
      if (k.secret) out.push('        no_log: true');
      // a folded scalar: the text as written, wrapped for yamllint's line length
      out.push(
        '        description: >-',
        ...wrap(
          `[${s.name}] ${k.key}: ${k.description} ${
            k.type === 'enum'
              ? `One of ${k.values!.join(', ')} (checked with the file: the ` +
                `daemon's loader validates it ` +
                `before it is installed). `
              : ''
          }Daemon ` + `default: ${defaultText(k)}. Null leaves the key out of the file.`,
          '          ',
          110,
        ),
      );
    }
  }
  return out.join('\n') + '\n';
}

/** vars/main.yml's generated block: the sections and keys the INI template walks, in the schema's order. */
export function renderRoleKeys(sections: readonly SectionSpec[]): string {
  const out = ['# the sections and keys templates/l9gpu.ini.j2 renders, each from the variable l9gpu_<section>_<key>', 'l9gpu_ini_keys:'];
  for (const s of sections) out.push(`  ${s.name}:`, ...s.keys.map((k) => `    - ${k.key}`));
  return out.join('\n') + '\n';
}

/** A file with the text between its BEGIN/END generated markers replaced. */
export function withGeneratedBlock(file: string, block: string, what: string): string {
  const begin = file.indexOf('# BEGIN generated');
  const end = file.indexOf('# END generated');
  if (begin < 0 || end < begin) throw new Error(`${what}: no "# BEGIN generated" ... "# END generated" markers`);
  const afterBegin = file.indexOf('\n', begin) + 1;
  return file.slice(0, afterBegin) + block + file.slice(end);
}

/** defaults/main.yml with l9gpu_version set to the package's version (the .deb the role installs by default). */
export function withRoleVersion(defaults: string, version: string): string {
  if (!/^l9gpu_version: .*$/m.test(defaults)) throw new Error('defaults/main.yml: no l9gpu_version line');
  return defaults.replace(/^l9gpu_version: .*$/m, `l9gpu_version: "${version}"`);
}
