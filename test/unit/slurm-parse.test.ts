/** Slurm output parsers on recorded real output (22.05) and the newer data_parser formats. */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { gresConfPath, parseGresLayout } from '../../slurm/gres.js';
import { SLURM_CONF_CANDIDATES, slurmConfPath } from '../../slurm/paths.js';
import { configFrom } from '../helpers/config.js';
import { expandHostlist, expandIndexList, hostlistContains } from '../../slurm/hostlist.js';
import {
  AmbiguousJobRecord,
  jobState,
  parseGresDetail,
  parseSacct,
  parseScontrolJobs,
  parseScontrolRecords,
  parseSqueueJson,
} from '../../slurm/jobs-query.js';
import { ROOT, tempDir } from '../helpers/paths.js';
import { isNoSteps, isUnknownKeyword, parseListJobs, parseListPids } from '../../slurm/local-jobs.js';

const TD = join(ROOT, 'slurm', 'testdata');
const read = (f: string) => readFileSync(join(TD, f), 'utf8');

test('hostlist expressions, with padding, several groups and several ranges', () => {
  assert.deepEqual(expandHostlist('gpu[01-04,07],login2'), ['gpu01', 'gpu02', 'gpu03', 'gpu04', 'gpu07', 'login2']);
  assert.deepEqual(expandHostlist('a[1-2],b3'), ['a1', 'a2', 'b3']);
  assert.deepEqual(expandHostlist('rack[1-2]-n[0-1]'), ['rack1-n0', 'rack1-n1', 'rack2-n0', 'rack2-n1']);
  assert.deepEqual(expandHostlist('/dev/nvidia[0-3]'), ['/dev/nvidia0', '/dev/nvidia1', '/dev/nvidia2', '/dev/nvidia3']);
  assert.deepEqual(expandHostlist('(null)'), []);
  assert.ok(hostlistContains('gpu[010-012]', 'gpu011'));
  assert.ok(!hostlistContains('gpu[010-012]', 'gpu11'));
  assert.deepEqual(expandIndexList('0-1,3'), [0, 1, 3]);
  assert.throws(() => expandHostlist('gpu[01-04'), /unbalanced \[/);
  assert.throws(() => expandHostlist('gpu[4-1]'), /goes backwards/);
  assert.throws(() => expandHostlist('gpu[a-b]'), /bad range "a-b"/);
});

test("hostlist forms as Slurm's hostlist.c (hostlist_create) reads them, and those refused on purpose", () => {
  // each outcome read from `scontrol show hostnames` of slurm-wlm 22.05.8, 24.11.5 and 26.05.5 (Debian), but the refused forms
  // and the suffixes (24.11.5 and 26.05.5 only: 22.05 refuses a suffix)
  // separators: comma, blank, tab and newline outside brackets (hostlist_create's "\t, \n"); a comma inside brackets is the range's
  assert.deepEqual(expandHostlist('gpu1 gpu2\tgpu[3,5]\n login4 ,,'), ['gpu1', 'gpu2', 'gpu3', 'gpu5', 'login4']);
  // three groups: the last varies fastest, then the first; the middle one slowest (_push_range_list recurses on the prefix from the right)
  assert.deepEqual(expandHostlist('r[1-2]s[7-8]g[0-1]'), ['r1s7g0', 'r1s7g1', 'r2s7g0', 'r2s7g1', 'r1s8g0', 'r1s8g1', 'r2s8g0', 'r2s8g1']);
  assert.deepEqual(
    expandHostlist('a[1-2]b[1-2]c[1-2]d[1-2]').slice(0, 5),
    ['a1b1c1d1', 'a1b1c1d2', 'a2b1c1d1', 'a2b1c1d2', 'a1b2c1d1'],
    'four: c slowest, then b, a, d fastest',
  );
  // a word without "[" is a name as written, a stray "]" included; after the last group everything is its suffix (23.02.5+)
  assert.deepEqual(expandHostlist('gpu7],login1'), ['gpu7]', 'login1']);
  assert.deepEqual(expandHostlist('x[08-09]]'), ['x08]', 'x09]']);
  assert.deepEqual(expandHostlist('gpu[1-2]-ib0'), ['gpu1-ib0', 'gpu2-ib0']);
  // Slurm's MAX_RANGE: one range of 65,536 hosts is read, one more refused
  assert.equal(expandHostlist('c[1-65536]').length, 65536);
  assert.throws(() => expandHostlist('c[0-65536]'), {
    message: 'hostlist "c[0-65536]": range 0-65536 has more than 65536 names (Slurm\'s limit)',
  });
  // refused on purpose: Slurm reads these through strtoul with a width that counts the blank or sign ("c01")
  assert.throws(() => expandHostlist('c[3 - 4]'), { message: 'hostlist "c[3 - 4]": bad range "3 - 4"' });
  assert.throws(() => expandHostlist('c[ 3-4]'), { message: 'hostlist "c[ 3-4]": bad range " 3-4"' });
  assert.throws(() => expandHostlist('c[+3-4]'), { message: 'hostlist "c[+3-4]": bad range "+3-4"' });
  assert.throws(() => expandIndexList('0, 2'), { message: 'hostlist "0, 2": bad range " 2"' });
  // an unclosed "[" anywhere, last group or earlier (Slurm 23.02+ refuses the last one; an earlier one it would keep as text)
  assert.throws(() => expandHostlist('n[1-2,m3'), { message: 'hostlist "n[1-2,m3": unbalanced [' });
  assert.throws(() => expandHostlist('a[b[1-2]'), { message: 'hostlist "a[b[1-2]": unbalanced [' });
  // a "]" between two groups belongs to the earlier group's range (as in Slurm): a bad range
  assert.throws(() => expandHostlist('a[1-2]]b[3]'), { message: 'hostlist "a[1-2]]b[3]": bad range "1-2]"' });
});

test("gres.conf: the node's gpu devices in order, NodeName hostlists, comments, other GRES ignored", () => {
  const conf =
    `# generated\nAutoDetect=off\nNodeName=gpu[01-02] Name=gpu Type=h100 ` +
    `File=/dev/nvidia[0-3]\nNodeName=gpu03 Name=gpu File=/dev/nvidia[4-5]\nName=shard Count=8 ` +
    `File=/dev/nvidia[0-3]\nNodeName=gpu02 Name=gpu Type=a100 File=/dev/nvidia7 # spare\n`;
  assert.deepEqual(
    parseGresLayout(conf, 'gpu02').devices.map((d) => [d.index, d.file, d.type]),
    [
      [0, '/dev/nvidia0', 'h100'],
      [1, '/dev/nvidia1', 'h100'],
      [2, '/dev/nvidia2', 'h100'],
      [3, '/dev/nvidia3', 'h100'],
      [4, '/dev/nvidia7', 'a100'],
    ],
  );
  assert.deepEqual(
    parseGresLayout(conf, 'gpu03').devices.map((d) => d.file),
    ['/dev/nvidia4', '/dev/nvidia5'],
  );
  assert.deepEqual(
    parseGresLayout('NodeName=gpu01 Name=gpu Count=4 AutoDetect=nvml\n', 'gpu01').devices,
    [],
    'AutoDetect lines give no order',
  );
  assert.deepEqual(
    parseGresLayout('AutoDetect=nvml\nNodeName=gpu01 Name=gpu File=/dev/nvidia[0-1]\n', 'gpu01').autodetect,
    'nvml',
    'a global AutoDetect line',
  );
  assert.equal(parseGresLayout('AutoDetect=nvml\nNodeName=gpu01 AutoDetect=off\n', 'gpu01').autodetect, null, "the node's own line wins");
  assert.equal(parseGresLayout('AutoDetect=nvml\nNodeName=gpu02 AutoDetect=off\n', 'gpu01').autodetect, 'nvml');
  assert.equal(parseGresLayout('NodeName=gpu01 AutoDetect=nvidia\n', 'gpu01').autodetect, 'nvidia', '24.11+');
  assert.equal(parseGresLayout('AutoDetect=bogus\n', 'gpu01').autodetect, null);
  // MultipleFiles= is one GPU (MIG capability files, several device files): it takes an index and shifts none
  assert.deepEqual(
    parseGresLayout(
      'NodeName=gpu01 Name=gpu MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap21\nNodeName=gpu01 Name=gpu File=/dev/nvidia1\n',
      'gpu01',
    ).devices.map((d) => [d.index, d.file]),
    [
      [0, '/dev/nvidia0'],
      [1, '/dev/nvidia1'],
    ],
  );
});

test('gres.conf MultipleFiles= is one hostlist: a comma inside brackets is one GPU, not a broken layout', () => {
  // gres.c expands MultipleFiles= with hostlist_create; its first file stands for the GPU (Intel's DRI nodes: gres.conf(5))
  assert.deepEqual(
    parseGresLayout(
      'Name=gpu Type=max1550 MultipleFiles=/dev/dri/card[1,3],/dev/dri/renderD[129,131]\nName=gpu ' +
        'Type=max1550 MultipleFiles=/dev/dri/card[2,4]\n',
      'pvc1',
    ).devices.map((d) => [d.index, d.file, d.type]),
    [
      [0, '/dev/dri/card1', 'max1550'],
      [1, '/dev/dri/card2', 'max1550'],
    ],
  );
  // a bad line names the file and the line; a MultipleFiles= of separators only names no file
  assert.throws(() => parseGresLayout('AutoDetect=off\nName=gpu File=/dev/nvidia[0-1\n', 'n1', 'gpu', '/etc/slurm/gres.conf'), {
    message: '/etc/slurm/gres.conf:2: hostlist "/dev/nvidia[0-1": unbalanced [',
  });
  assert.throws(() => parseGresLayout('Name=gpu MultipleFiles=,\n', 'n1'), { message: 'gres.conf:1: MultipleFiles=, names no file' });
});

test('gres_detail / GRES= spellings', () => {
  assert.deepEqual(parseGresDetail('gpu:2(IDX:0-1)'), { idx: [0, 1], shared: [] });
  assert.deepEqual(parseGresDetail('gpu:h100:2(IDX:0,2)'), { idx: [0, 2], shared: [] });
  assert.deepEqual(parseGresDetail('shard:1(IDX:0)'), { idx: [0], shared: [0] });
  assert.deepEqual(parseGresDetail('shard:8(-/5,5/5,3/5,0/5)'), { idx: [1, 2], shared: [1, 2] });
  assert.deepEqual(parseGresDetail('gpu:1(IDX:3),shard:2(IDX:3)'), { idx: [3], shared: [3] });
  assert.deepEqual(
    parseGresDetail('gpu:1(IDX:0),shard:2(0/8,2/8)'),
    { idx: [0, 1], shared: [1] },
    'a whole GPU and a shard of another: only that one is shared',
  );
  assert.deepEqual(parseGresDetail('mps:50(IDX:2)'), { idx: [2], shared: [2] }, 'MPS shares the GPU too');
  assert.deepEqual(parseGresDetail('gpu(CNT:2)'), { idx: [], shared: [] });
});

test('squeue --json of Slurm 22.05 (openapi v0.0.38), recorded', () => {
  const jobs = parseSqueueJson(read('squeue-22.05-v0.0.38.json'));
  const j1 = jobs.find((j) => j.jobId === '1')!;
  assert.deepEqual(
    { ...j1, startTime: null, endTime: null },
    {
      jobId: '1',
      arrayJobId: null,
      arrayTaskId: null,
      hetJobId: null,
      hetJobOffset: null,
      user: 'root',
      uid: 0,
      account: 'root',
      partition: 'gpu',
      qos: 'normal',
      name: 'myjob',
      cluster: 'ci',
      state: 'RUNNING',
      startTime: null,
      endTime: null,
      restarts: 0,
      sluid: null,
      nodes: ['vm'],
      gpuIdx: { vm: [0, 1] },
      sharedIdx: {},
      exitCode: 0,
    },
  );
  assert.equal(j1.startTime, 1795250037000);
  const task = jobs.find((j) => j.jobId === '3')!;
  assert.equal(task.arrayJobId, '2');
  assert.equal(task.arrayTaskId, '0');
  const pending = jobs.find((j) => j.jobId === '2')!;
  assert.equal(pending.state, 'PENDING');
  assert.deepEqual(pending.nodes, []);
});

test('squeue --json of Slurm 24.05 (data_parser v0.0.40): {set, number} numbers, job_state lists, one gres_detail per node', () => {
  const [a, p, h] = parseSqueueJson(read('squeue-24.05-v0.0.40.json'));
  assert.equal(a!.jobId, '4249');
  assert.equal(a!.arrayJobId, '4242');
  assert.equal(a!.arrayTaskId, '7');
  assert.equal(a!.restarts, 1);
  assert.equal(a!.state, 'RUNNING');
  assert.equal(a!.startTime, 1795250000000);
  assert.deepEqual(a!.gpuIdx, { gpu016: [0, 1, 2, 3], gpu017: [1, 3] });
  assert.equal(a!.hetJobId, null, 'het_job_id 0 means none');
  assert.equal(a!.exitCode, 0);
  assert.equal(p!.arrayJobId, null);
  assert.equal(p!.arrayTaskId, null, 'array_task_id {set: false}');
  assert.equal(p!.startTime, null);
  assert.equal(h!.hetJobId, '4251');
  assert.equal(h!.hetJobOffset, '1');
  assert.deepEqual(h!.sharedIdx, { gpu016: [2] });
  assert.deepEqual(h!.gpuIdx, { gpu016: [2] });
});

test('squeue --json errors and malformed output are clear', () => {
  assert.throws(() => parseSqueueJson('squeue: error: Invalid user'), /squeue --json: not JSON/);
  assert.throws(() => parseSqueueJson('{"errors": [{"error": "Unable to contact slurm controller"}], "jobs": null}'), {
    message: 'squeue --json: Unable to contact slurm controller',
  });
  // recorded: 22.05 with slurmctld down exits 0, an error entry and NO jobs; trusting it would close every binding
  assert.throws(() => parseSqueueJson(read('squeue-22.05-controller-down.json')), {
    message: 'squeue --json: slurm_load_jobs: Failed while looking for jobs',
  });
  assert.throws(() => parseSqueueJson('{"meta": {}}'), { message: 'squeue --json: no "jobs" list' });
});

test('scontrol show job -d text: 22.05 recorded, multi-node GRES lines, het and array ids, pre-19.05 GRES_IDX', () => {
  const recorded = parseScontrolJobs(read('scontrol-show-job-d-22.05.txt'));
  const j1 = recorded.find((j) => j.jobId === '1')!;
  assert.deepEqual(j1.gpuIdx, { vm: [0, 1] });
  assert.equal(j1.user, 'root');
  assert.equal(j1.uid, 0);
  assert.equal(j1.name, 'myjob');
  assert.equal(recorded.find((j) => j.jobId === '3')!.arrayTaskId, '0');
  const [a, h, old] = parseScontrolJobs(read('scontrol-show-job-d-multinode.txt'));
  assert.deepEqual(a!.gpuIdx, { gpu016: [0, 1, 2, 3], gpu017: [1, 3] });
  assert.deepEqual(a!.nodes, ['gpu016', 'gpu017']);
  assert.equal(a!.restarts, 1);
  assert.equal(a!.user, 'alice');
  assert.equal(a!.uid, 1001);
  assert.equal(h!.hetJobId, '4251');
  assert.deepEqual(h!.sharedIdx, { gpu016: [2] });
  assert.deepEqual(old!.gpuIdx, { gpu02: [0], gpu03: [0] });
  assert.equal(old!.exitCode, 2);
  assert.equal(old!.state, 'COMPLETED');
});

test("scontrol show job -d text: a user's text posing as fields is refused, naming the job, never read as the job's", () => {
  // slurmctld takes any byte in a job name, comment, working directory or output path, and scontrol prints them raw
  const recorded = read('scontrol-show-job-d-22.05.txt');
  const first = recorded.slice(0, recorded.indexOf('\n\n') + 1);
  const named = (name: string) => first.replace('JobName=myjob\n', `JobName=${name}\n`);
  const refused = (text: string, why: RegExp) =>
    assert.throws(
      () => parseScontrolJobs(text),
      (e: Error) => e instanceof AmbiguousJobRecord && why.test(e.message) && /^scontrol show job 1: /.test(e.message),
    );
  refused(named('x UserId=mallory(0)'), /UserId= is printed 2 times/);
  refused(named('x\n   Priority=1 Nice=0 Account=other QOS=normal'), /Account= is printed 2 times/);
  refused(named('x\n     Nodes=vm CPU_IDs=0 Mem=0 GRES=gpu:8(IDX:0-7)'), /a per-node GRES line is outside the lines that hold them/);
  refused(named('x\n   JOB_GRES=gpu:8'), /JOB_GRES= is printed 2 times/);
  refused(named('x\n\nJobId=2 JobName=y'), /UserId= is printed 0 times/);
  // a blank line late in the record (an output path) and a whole record after it: one job twice
  refused(first.replace('StdOut=/dev/null', `StdOut=/tmp/a\n\n${first.trim()}`), /two records of one job/);
  // a whole record forged in the name, the real rest cut off after a blank line: a piece that starts no record
  const forged =
    'x\n   UserId=root(0) GroupId=root(0)\n   Account=root QOS=normal\n   JobState=RUNNING\n   ' +
    'StartTime=2020-01-01T00:00:00 EndTime=Unknown\n   Partition=gpu\n   NodeList=vm\n   ' +
    'JOB_GRES=gpu:8\n     Nodes=vm CPU_IDs=0 Mem=0 GRES=gpu:8(IDX:0-7)';
  refused(named(`${forged}\n\nz`), /its record goes on after a blank line/);
  // ... or the real rest as a job of an id squeue does not list: the record before it is not read
  const pushed = parseScontrolRecords(named(`${forged}\n\nJobId=4000000000 JobName=y`), { known: new Set(['1']) });
  assert.deepEqual([pushed.jobs, [...pushed.unreadable.keys()]], [[], ['1']]);
  assert.match(pushed.unreadable.get('1')!, /^scontrol show job 1: a record of job 4000000000, which squeue does not list, follows it/);
  // ... or as another job's id: that job and the records before both of its records are not read, the others are
  const two = `${recorded.trim()}\n\n`;
  const other = parseScontrolRecords(two.replace('JobName=myjob\n', `JobName=${forged}\n\nJobId=3 JobName=y\n`), {
    known: new Set(['1', '2', '3']),
  });
  assert.deepEqual([...other.unreadable.keys()].sort(), ['1', '3']);
  assert.deepEqual(
    other.jobs.map((j) => j.jobId),
    ['2'],
  );
  // without -d slurmctld prints no GRES detail: the name's lines are refused there too
  const plain = first
    .split('\n')
    .filter((l) => !/^\s*(?:JOB_GRES|Nodes)=/.test(l))
    .join('\n');
  const plainNamed = plain.replace('JobName=myjob\n', 'JobName=x\n   JOB_GRES=gpu:8\n     Nodes=vm CPU_IDs=0 Mem=0 GRES=gpu:8(IDX:0-7)\n');
  assert.deepEqual(
    [...parseScontrolRecords(plainNamed, { detail: false }).unreadable.values()],
    [
      'scontrol show job 1: a GRES detail line in a record asked for without -d (a job name, ' +
        'comment or path holding a newline or Key= text?): the record is not read',
    ],
  );
  assert.deepEqual(
    parseScontrolRecords(plain, { detail: false }).jobs.map((j) => [j.jobId, j.user, j.gpuIdx]),
    [['1', 'root', {}]],
    'an honest record without -d',
  );
  // SLUID: with -d, on the line after the first, where the release prints it (25.11+); a name's is not read
  assert.equal(parseScontrolRecords(named('x SLUID=sFORGED')).jobs[0]!.sluid, null);
  assert.equal(
    parseScontrolRecords(named('x\n   SLUID=sFORGED'), { sluid: false }).jobs[0]!.sluid,
    null,
    '22.05 prints none: a line a name put there',
  );
  // a record's own error is its own: a forged NodeList past the hostlist bound does not fail the other records
  const huge = parseScontrolRecords(`${two.replace('NodeList=vm\n', 'NodeList=gpu[1-99999999]\n')}`);
  assert.deepEqual([[...huge.unreadable.keys()], huge.jobs.map((j) => j.jobId)], [['1'], ['3', '2']]);
  assert.match(huge.unreadable.get('1')!, /^scontrol show job 1: /);
  refused(first.replace('ExitCode=0:0', 'ExitCode=0:0 Reboot=0 ExitCode=1:0'), /ExitCode= is printed 2 times/);
  // text that only looks like a key inside a word is a value: DerivedExitCode, ReqNodeList, a name "xUserId=y"
  // ids a name could add where the job has none: read only where scontrol prints them, before the name
  assert.deepEqual(
    parseScontrolJobs(named('x ArrayJobId=999 ArrayTaskId=0 HetJobId=7')).map((j) => [j.arrayJobId, j.arrayTaskId, j.hetJobId, j.name]),
    [[null, null, null, 'x']],
  );
  const fine = parseScontrolJobs(named('xUserId=y'));
  assert.deepEqual([fine[0]!.user, fine[0]!.name, fine[0]!.gpuIdx], ['root', 'xUserId=y', { vm: [0, 1] }]);
});

test('sacct -P, recorded: states with reasons, exit codes, unknown end', () => {
  const recs = parseSacct(read('sacct-22.05.psv'));
  const by = Object.fromEntries(recs.map((r) => [r.jobIdRaw, r]));
  assert.equal(by['4']!.state, 'FAILED');
  assert.equal(by['4']!.exitCode, 3);
  assert.equal(by['5']!.state, 'CANCELLED', '"CANCELLED by 0"');
  assert.equal(by['1']!.end, Date.parse('2026-11-21T08:34:27'));
  assert.equal(parseSacct('9|9|RUNNING|0:0|2026-11-21T08:34:27|Unknown\n')[0]!.end, null, 'End=Unknown');
  assert.equal(by['3']!.jobId, '2_0');
  assert.throws(() => parseSacct('1|2|3\n'), /sacct: expected 6 fields, got 3/);
});

test('squeue --json of Slurm 26.05 (data_parser v0.0.45), recorded: SLUIDs, per-GPU shard counts', () => {
  const [gpu, shard] = parseSqueueJson(read('squeue-26.05-v0.0.45.json')).sort((a, b) => Number(a.jobId) - Number(b.jobId));
  assert.equal(gpu!.sluid, 'sF5NM82Z83CR00', 'step_id.sluid: the run key the prolog sees as SLURM_JOB_SLUID');
  assert.equal(gpu!.state, 'RUNNING');
  assert.deepEqual(gpu!.gpuIdx, { vm: [0, 1] });
  assert.deepEqual(gpu!.sharedIdx, {});
  assert.equal(shard!.sluid, 'sF5NM82Z83D400');
  assert.deepEqual(shard!.sharedIdx, { vm: [2] });
  assert.deepEqual(shard!.gpuIdx, { vm: [2] }, 'shard:1(0/2,0/2,1/2,0/2): the GPU at position 2');
  const [text] = parseScontrolJobs(read('scontrol-show-job-d-26.05.txt'));
  assert.equal(text!.sluid, 'sF5NM82Z83CR00');
});

test('job_state flag lists (v0.0.40+): a completing job is COMPLETING whatever its base state', () => {
  assert.equal(jobState(['COMPLETED', 'COMPLETING']), 'COMPLETING');
  assert.equal(jobState(['RUNNING', 'COMPLETING']), 'COMPLETING');
  assert.equal(jobState(['RUNNING', 'CONFIGURING']), 'RUNNING');
  assert.equal(jobState(['CANCELLED']), 'CANCELLED');
  assert.equal(jobState('COMPLETING'), 'COMPLETING');
  assert.equal(jobState(undefined), '');
});

test("slurm.conf is found where Slurm's clients look, configless Slurm's cache last; gres.conf beside it", () => {
  const d = tempDir('l9gpu-conf-');
  const etc = join(d, 'etc', 'slurm.conf');
  const cache = join(d, 'run', 'slurm', 'conf', 'slurm.conf');
  const candidates = [etc, cache];
  mkdirSync(join(d, 'run', 'slurm', 'conf'), { recursive: true });
  writeFileSync(cache, 'ClusterName=c\n');
  const cfg = configFrom({});
  assert.equal(slurmConfPath(cfg, {}, candidates), cache, 'configless: only the cache exists');
  assert.equal(gresConfPath(slurmConfPath(cfg, {}, candidates) ?? undefined), join(d, 'run', 'slurm', 'conf', 'gres.conf'));
  mkdirSync(join(d, 'etc'));
  writeFileSync(etc, 'ClusterName=c\n');
  assert.equal(slurmConfPath(cfg, {}, candidates), etc, 'a local slurm.conf wins over the cache');
  assert.equal(slurmConfPath(cfg, { SLURM_CONF: cache }, candidates), cache, '$SLURM_CONF wins over both');
  assert.equal(slurmConfPath(configFrom({ slurm: { slurm_conf: '/x/slurm.conf' } }), {}, candidates), '/x/slurm.conf');
  assert.deepEqual(SLURM_CONF_CANDIDATES.at(-1), '/run/slurm/conf/slurm.conf');
});

test(
  'node-local job lists: scontrol listpids (22.05+) and listjobs (24.05+), recorded; their ' +
    '"nothing here" and "no such command" answers',
  () => {
    assert.deepEqual([...parseListPids(read('scontrol-listpids-22.05.txt'))], ['1']);
    assert.deepEqual([...parseListJobs(read('scontrol-listjobs-24.11.txt'))], ['1']);
    assert.deepEqual([...parseListJobs('')], []);
    assert.throws(() => parseListJobs('JobId=1 JobName=x\n'), /scontrol listjobs: expected a JOBID header, got "JobId=1 JobName=x"/);
    assert.throws(() => parseListPids('JOBID\n1\n'), /scontrol listpids: expected a "PID JOBID \.\.\." header/);
    assert.ok(isNoSteps('No job steps exist on this node.') && isNoSteps("No slurmstepd's found on this node"));
    assert.ok(isUnknownKeyword('invalid keyword: listjobs'));
    assert.ok(!isNoSteps('Unable to contact slurm controller (connect failure)'));
  },
);
