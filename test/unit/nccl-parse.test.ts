/**
 * NCCL Inspector JSON lines (plugins/nccl/parse.ts): the record, the
 * bandwidths recomputed from size, time and ranks against the file's own
 * figures, and an error naming the place for what is not the format.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseInspectorLine } from '../../plugins/nccl/parse.js';
import { bandwidth } from '../../src/nccl/bandwidth.js';

// the example line shared/reference/amd-gaudi-nccl.md quotes from the Inspector's README (NVIDIA/nccl); its
// comm_name places it at 2.30.3 or later
const README_LINE =
  '{"header":{"id":"0x7f8c496ae9f661","comm_name":"unknown","rank":2,"n_ranks":8,"nnodes":1},' +
  '"metadata":{"inspector_output_format_version":"v4.0","git_rev":"",' +
  '"rec_mechanism":"nccl_profiler_interface","dump_timestamp_us":1748030377748202,' +
  '"hostname":"node01","pid":1639453},"coll_perf":{"coll":"AllReduce","coll_sn":1407,' +
  '"coll_msg_size_bytes":17179869184,"coll_exec_time_us":61974,' +
  '"coll_timing_source":"kernel_gpu","coll_algobw_gbs":277.210914,' +
  '"coll_busbw_gbs":485.119099}}';

test("the README's AllReduce line: the record in bytes and seconds, and its bandwidths recomputed as the Inspector computes them", () => {
  const r = parseInspectorLine(README_LINE, 'node01-pid1639453.log:1');
  assert.deepEqual(
    { ...r },
    {
      commId: '0x7f8c496ae9f661',
      commName: 'unknown',
      rank: 2,
      nRanks: 8,
      nNodes: 1,
      hostname: 'node01',
      pid: 1639453,
      dumpUs: 1748030377748202,
      kind: 'coll',
      op: 'AllReduce',
      sn: 1407,
      bytes: 17179869184,
      execS: 0.061974,
      timingSource: 'kernel_gpu',
      algBw: 277.210914e9,
      busBw: 485.119099e9,
    },
  );
  // by hand: 17179869184 B / 0.061974 s = 277.2109142 GB/s; x 2 x 7/8 = 485.1190999 GB/s (the file rounds to 6 decimals)
  const bw = bandwidth(r.op, r.bytes, r.execS, r.nRanks)!;
  assert.ok(Math.abs(bw.algBw - r.algBw!) < 1e3 && Math.abs(bw.busBw - r.busBw!) < 1e3, JSON.stringify(bw));
});

test("the factors of nccl-tests' PERFORMANCE.md: AllGather and ReduceScatter move the message times the ranks", () => {
  assert.deepEqual(bandwidth('AllGather', 1e9, 1, 4), { algBw: 4e9, busBw: 3e9 });
  assert.deepEqual(bandwidth('ReduceScatter', 1e9, 2, 4), { algBw: 2e9, busBw: 1.5e9 });
  assert.deepEqual(bandwidth('AllReduce', 1e9, 1, 4), { algBw: 1e9, busBw: 1.5e9 });
  assert.deepEqual(bandwidth('Broadcast', 1e9, 1, 4), { algBw: 1e9, busBw: 1e9 });
  assert.deepEqual(bandwidth('Send', 5e8, 0.5, 2), { algBw: 1e9, busBw: 1e9 });
  assert.equal(bandwidth('AllReduce', 1e9, 0, 4), null);
  // found by the fuzz suite: an overflow is no bandwidth, not Infinity
  assert.equal(bandwidth('AllGather', 2 ** 52, 1e-300, 2 ** 20), null);
});

test('releases: no comm_name before 2.30.3; p2p_perf lines; "nan" bandwidths', () => {
  const old = JSON.parse(README_LINE) as { header: Record<string, unknown> };
  delete old.header.comm_name;
  assert.equal('commName' in parseInspectorLine(JSON.stringify(old), 'x'), false);
  const p2p =
    '{"header":{"id":"0x1a","comm_name":"pp","rank":0,"n_ranks":2,"nnodes":2},' +
    '"metadata":{"inspector_output_format_version":"v4.0","git_rev":"",' +
    '"rec_mechanism":"nccl_profiler_interface","dump_timestamp_us":1,"hostname":"n1","pid":7},' +
    '"p2p_perf":{"p2p":"Send","p2p_sn":3,"p2p_peer":1,"p2p_msg_size_bytes":1048576,' +
    '"p2p_exec_time_us":20,"p2p_timing_source":"kernel_gpu","p2p_algobw_gbs":"nan",' +
    '"p2p_busbw_gbs":"nan"}}';
  const r = parseInspectorLine(p2p, 'x');
  assert.deepEqual([r.kind, r.op, r.peer, r.bytes, r.execS, r.algBw, r.busBw], ['p2p', 'Send', 1, 1048576, 0.00002, null, null]);
});

test('what is not the format: an error naming the place and the field', () => {
  const bad = (edit: (d: Record<string, Record<string, unknown>>) => void) => {
    const d = JSON.parse(README_LINE) as Record<string, Record<string, unknown>>;
    edit(d);
    return JSON.stringify(d);
  };
  assert.throws(() => parseInspectorLine('{"header":', 'f.log:3'), { message: /^f\.log:3: not JSON/ });
  assert.throws(() => parseInspectorLine('[]', 'f.log:3'), { message: /^f\.log:3: no header or metadata object$/ });
  assert.throws(
    () =>
      parseInspectorLine(
        bad((d) => delete d.coll_perf),
        'f.log:3',
      ),
    { message: /neither coll_perf nor p2p_perf/ },
  );
  assert.throws(
    () =>
      parseInspectorLine(
        bad((d) => (d.header!.rank = 8)),
        'f.log:3',
      ),
    { message: /rank 8 of 8 ranks/ },
  );
  assert.throws(
    () =>
      parseInspectorLine(
        bad((d) => (d.coll_perf!.coll_msg_size_bytes = -1)),
        'f.log:3',
      ),
    { message: /coll_msg_size_bytes is -1, not a whole number >= 0/ },
  );
  assert.throws(
    () =>
      parseInspectorLine(
        bad((d) => (d.coll_perf!.coll_exec_time_us = 'x')),
        'f.log:3',
      ),
    { message: /coll_exec_time_us is "x"/ },
  );
  assert.throws(
    () =>
      parseInspectorLine(
        bad((d) => (d.header!.id = 'zz')),
        'f.log:3',
      ),
    { message: /"zz" is not a communicator id/ },
  );
  assert.throws(
    () =>
      parseInspectorLine(
        bad((d) => (d.coll_perf!.coll_busbw_gbs = -3)),
        'f.log:3',
      ),
    { message: /coll_busbw_gbs is -3/ },
  );
  // found by the fuzz suite: 1e308 GB/s overflowed to Infinity bytes/s
  assert.throws(
    () =>
      parseInspectorLine(
        bad((d) => (d.coll_perf!.coll_busbw_gbs = 1e308)),
        'f.log:3',
      ),
    { message: /coll_busbw_gbs is 1e\+308/ },
  );
});
