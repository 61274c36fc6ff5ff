import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { hostPlugin, parseLoadavg, parseMeminfo, parseProcStat } from '../../plugins/host/index.js';
import { createLogger } from '../../src/core/log.js';
import { pluginContext } from '../../src/core/plugin.js';
import { PointBuffer } from '../../src/core/metrics/model.js';
import { configFrom } from '../helpers/config.js';
import { ROOT, tempDir } from '../helpers/paths.js';

const TD = join(ROOT, 'plugins', 'host', 'testdata');

test('parsers read the recorded /proc files exactly', () => {
  const a = parseProcStat(readFileSync(join(TD, 'proc-a', 'stat'), 'utf8'));
  assert.deepEqual(a, {
    modes: { user: 10444, nice: 0, system: 2331, idle: 71702, iowait: 177, interrupt: 37, steal: 7 },
    total: 84698,
    cpus: 2,
  });
  const mem = parseMeminfo(readFileSync(join(TD, 'proc-a', 'meminfo'), 'utf8'));
  assert.equal(mem.MemTotal, 24684084 * 1024);
  assert.equal(mem.SReclaimable, 75964 * 1024);
  assert.deepEqual(parseLoadavg(readFileSync(join(TD, 'proc-a', 'loadavg'), 'utf8')), [0.43, 0.31, 0.15]);
});

test('malformed /proc input is an error naming the file', () => {
  assert.throws(() => parseProcStat('intr 1 2 3\n', '/x/stat'), { message: '/x/stat: no aggregate "cpu" line' });
  assert.throws(() => parseProcStat('cpu  1 2 x 4\n', '/x/stat'), /\/x\/stat: malformed "cpu" line/);
  assert.throws(() => parseMeminfo('MemFree: 1 kB\n', '/x/meminfo'), { message: '/x/meminfo: no MemTotal line' });
  assert.throws(() => parseLoadavg('garbage', '/x/loadavg'), /\/x\/loadavg: malformed/);
});

test('the host plugin turns two /proc snapshots into exact values and units', async () => {
  const proc = tempDir();
  mkdirSync(proc, { recursive: true });
  for (const f of ['stat', 'meminfo', 'loadavg']) copyFileSync(join(TD, 'proc-a', f), join(proc, f));
  const cfg = configFrom({ host: { proc_path: proc } });
  const plugin = await hostPlugin.create({ ...pluginContext(cfg, createLogger('error')), hostName: 'h' });

  const first = new PointBuffer();
  await plugin.collect(first, new AbortController().signal);
  assert.equal(
    first.points.find((p) => p.metric.name === 'system.cpu.utilization'),
    undefined,
    'no CPU time passed between identical snapshots: no rate',
  );

  copyFileSync(join(TD, 'proc-b', 'stat'), join(proc, 'stat'));
  const out = new PointBuffer();
  await plugin.collect(out, new AbortController().signal);
  const get = (name: string, state?: string) =>
    out.points.find((p) => p.metric.name === name && (state === undefined || p.attributes['system.memory.state'] === state))?.value;
  // proc-a -> proc-b: 1 jiffy of user, 200 of idle
  const modes = Object.fromEntries(
    out.points.filter((p) => p.metric.name === 'system.cpu.utilization').map((p) => [p.attributes['cpu.mode'], p.value]),
  );
  assert.deepEqual(modes, { user: 1 / 201, nice: 0, system: 0, idle: 200 / 201, iowait: 0, interrupt: 0, steal: 0 });
  assert.equal(get('system.cpu.logical.count'), 2);
  assert.equal(get('system.memory.limit'), 24684084 * 1024);
  assert.equal(get('system.memory.usage', 'used'), (24684084 - 23683972 - 19056 - 823688 - 75964) * 1024);
  assert.equal(get('system.memory.usage', 'free'), 23683972 * 1024);
  assert.equal(get('system.memory.usage', 'buffers'), 19056 * 1024);
  assert.equal(get('system.memory.usage', 'cached'), (823688 + 75964) * 1024);
  assert.equal(get('system.memory.utilization', 'used'), (24684084 - 23683972 - 19056 - 823688 - 75964) / 24684084);
  assert.equal(get('system.memory.utilization', 'free'), 23683972 / 24684084);
  assert.equal(get('system.memory.utilization', 'buffers'), 19056 / 24684084);
  assert.equal(get('system.memory.utilization', 'cached'), (823688 + 75964) / 24684084);
  assert.equal(get('system.cpu.load_average.1m'), 0.43);
  assert.equal(get('system.cpu.load_average.15m'), 0.15);
});

test('probe reports a missing procfs', async () => {
  const cfg = configFrom({ host: { proc_path: '/nonexistent-proc' } });
  assert.deepEqual(await hostPlugin.probe({ ...pluginContext(cfg, createLogger('error')), hostName: 'h' }), {
    ok: false,
    detail: '/nonexistent-proc/stat not found',
  });
});
