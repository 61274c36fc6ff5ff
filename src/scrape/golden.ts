/**
 * One conversion of a recorded page, for the scraped plugins' golden cases.
 * Every field must read, except those the case's unreadable.txt lists (one
 * "field: why" a line): a recorded page with a series no GPU can be keyed
 * by (Datadog's unlabelled dummies) says so there, and the test holds the
 * plugin to exactly that.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PointBuffer, type Point } from '../core/metrics/model.js';
import { ConvertState, convertPage, providerAttributes, type EngineTable } from './convert.js';
import { parseExposition } from './exposition.js';

/** The points page.prom of a case folder gives on a first scrape, at a fixed time, from the endpoint 127.0.0.1:8000. */
export function goldenPagePoints(table: EngineTable, dir: string): Point[] {
  const out = new PointBuffer();
  const state = new ConvertState();
  state.begin();
  convertPage(table, parseExposition(readFileSync(join(dir, 'page.prom'), 'utf8')), {
    out,
    state,
    base: { 'server.address': '127.0.0.1', 'server.port': 8000, ...providerAttributes(table) },
    now: Date.UTC(2026, 10, 23),
  });
  state.end();
  const unread = [...out.unread].map(([f, why]) => `${f}: ${why}`).join('\n');
  const file = join(dir, 'unreadable.txt');
  const expected = existsSync(file) ? readFileSync(file, 'utf8').trimEnd() : '';
  if (unread !== expected) throw new Error(`unreadable fields: got\n${unread || '(none)'}\nexpected (${file})\n${expected || '(none)'}`);
  return out.points;
}
