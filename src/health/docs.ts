/** docs/health.md's generated tables: the rules and the Xid catalog as the code has them (npm run docs; a test fails when stale). */
import { MISSING, RULES, XID_WARNING_FACTOR } from './rules.js';
import { XID_CATALOG } from './xid-catalog.js';

export const RULES_START = '<!-- generated: health rules -->';
export const RULES_END = '<!-- end of generated health rules -->';

const cell = (s: string) => s.replace(/\|/g, '\\|');
const STATE = ['ok (listed only)', 'warning', 'failed'];

export function renderHealthTables(): string {
  const out = [RULES_START, '', '| code | when | state | score factor | what to do |', '| --- | --- | --- | --- | --- |'];
  out.push(
    `| \`xid-<code>\` | an Xid the daemon saw, until the node reboots, an admin clears it ` +
      `(\`l9gpu health --clear\`) or \`[health] xid_window\` passes | by the catalog below | ` +
      `failed: 0; warning: ${XID_WARNING_FACTOR} per code; ok: 1 | the catalog's advice |`,
  );
  out.push(`| \`${MISSING.code}\` | ${cell(MISSING.when)} | failed | 0 | ${cell(MISSING.action)} |`);
  for (const r of RULES) out.push(`| \`${r.code}\` | ${cell(r.when)} | ${STATE[r.severity]} | ${r.factor} | ${cell(r.action)} |`);
  out.push('', 'Xid catalog (src/health/xid-catalog.ts, from NVIDIA\'s Xid catalog; codes it marks "Unused" are left out here):', '');
  out.push("| Xid | NVIDIA's name | origin | state | action | advice |", '| --- | --- | --- | --- | --- | --- |');
  for (const x of [...XID_CATALOG.values()].sort((a, b) => a.code - b.code)) {
    if (/^Unused/.test(x.name)) continue;
    out.push(`| ${x.code} | ${cell(x.name)} | ${x.origin} | ${STATE[x.severity]} | ${x.action} | ${cell(x.advice)} |`);
  }
  out.push('', RULES_END);
  return out.join('\n');
}

/** The doc with its generated part replaced. */
export function withHealthTables(doc: string): string {
  const a = doc.indexOf(RULES_START);
  const b = doc.indexOf(RULES_END);
  if (a < 0 || b < a) throw new Error(`docs/health.md has no "${RULES_START}" ... "${RULES_END}" block`);
  return doc.slice(0, a) + renderHealthTables() + doc.slice(b + RULES_END.length);
}
