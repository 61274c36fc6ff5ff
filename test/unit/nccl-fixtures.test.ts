/**
 * The NCCL Inspector pages built from the NCCL sources of each release
 * (plugins/nccl/testdata, README there): every JSON line reads, its
 * bandwidths recomputed from size, time and ranks equal the file's own, and
 * the straggler case's slow rank is found with its factor.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseInspectorLine, type InspectorRecord } from '../../plugins/nccl/parse.js';
import { bandwidth } from '../../src/nccl/bandwidth.js';
import { stragglers, type RankTime } from '../../src/nccl/straggler.js';
import { ROOT } from '../helpers/paths.js';

const TD = join(ROOT, 'plugins', 'nccl', 'testdata');

function records(c: string): InspectorRecord[] {
  const out: InspectorRecord[] = [];
  for (const f of readdirSync(join(TD, c)).filter((x) => x.endsWith('.log'))) {
    readFileSync(join(TD, c, f), 'utf8')
      .split('\n')
      .forEach((l, i) => l && out.push(parseInspectorLine(l, `${c}/${f}:${i + 1}`)));
  }
  return out;
}

test(
  'every JSON line of every release reads, and its bandwidths are the size over the time with ' +
    "nccl-tests' factors, to the 6 decimals the file prints",
  () => {
    let n = 0;
    for (const c of readdirSync(TD, { withFileTypes: true })
      .filter((d) => d.isDirectory() && d.name.includes('json'))
      .map((d) => d.name)) {
      for (const r of records(c)) {
        n++;
        const bw = bandwidth(r.op, r.bytes, r.execS, r.nRanks);
        // the Inspector prints 0 for an operation it could not time or name (0 µs, "Invalid"); "nan" is null here
        if (!bw || r.op === 'Invalid' || r.algBw === null) continue;
        assert.ok(
          Math.abs(bw.algBw - r.algBw) <= 1e3 && Math.abs(bw.busBw - r.busBw!) <= 1e3,
          `${c} ${r.op} sn ${r.sn}: ${bw.algBw / 1e9} / ${bw.busBw / 1e9} against ${r.algBw / 1e9} / ${r.busBw! / 1e9}`,
        );
      }
    }
    assert.ok(n > 300, `${n} lines`);
  },
);

test('releases: no comm_name before 2.30.3, p2p lines from 2.30.3', () => {
  assert.ok(records('v2.28.3-json-8rank').every((r) => r.commName === undefined && r.kind === 'coll'));
  assert.ok(records('v2.29.7-json-8rank').every((r) => r.commName === undefined));
  const p = records('v2.30.3-json-8rank-p2p');
  assert.ok(p.every((r) => r.commName !== undefined) && p.some((r) => r.kind === 'p2p' && r.op === 'Send'));
});

test('the straggler case (4 ranks, 24 AllReduce of 256 MiB, rank 2 at 1.8x): rank 2 flagged at 1.8x, alone', () => {
  const rs = records('v2.30.3-straggler-4rank');
  // aligned by communicator, collective and its own sequence (each collective type counts apart), and size
  const ops = new Map<string, RankTime[]>();
  for (const r of rs) {
    const k = `${r.commId}/${r.op}/${r.sn}/${r.bytes}`;
    let l = ops.get(k);
    if (!l) ops.set(k, (l = []));
    l.push({ rank: r.rank, seconds: r.execS });
  }
  const s = stragglers(ops.values());
  assert.deepEqual(
    s.map((x) => [x.rank, x.operations]),
    [[2, 24]],
  );
  assert.ok(s[0]!.factor >= 1.79 && s[0]!.factor <= 1.81, `factor ${s[0]!.factor}`);
});
