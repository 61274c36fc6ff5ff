/**
 * The typed config reader (src/core/config/read.ts). The lines marked
 * @ts-expect-error are the compile-time half: tsc builds this file, and a
 * misspelt key, or a value typed wider than the loader makes it, that compiled
 * would fail the build ("unused @ts-expect-error").
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadAgentConfig } from '../../daemon/catalog.js';
import { NVML_SECTION } from '../../plugins/nvml/config.js';
import { DCGM_SECTION } from '../../plugins/dcgm/config.js';
import { loadConfig } from '../../src/core/config/load.js';
import { readSection } from '../../src/core/config/read.js';
import { DAEMON_SECTION, readPluginCommon } from '../../src/core/config/sections.js';
import { defineSection, type SectionSpec } from '../../src/core/config/schema.js';
import { JOBS_SECTION } from '../../src/jobs/config.js';
import { OTLP_SECTION, WEBHOOK_SECTION } from '../../src/sinks/sections.js';
import { tempDir } from '../helpers/paths.js';

const NOFILE = { defaultPath: '/nonexistent/l9gpu.ini' };
const dir = tempDir();

/** Compile-time only: called where its argument's type is checked, never run. */
function typed<T>(v: T): T {
  return v;
}

test('the reader types each key from its spec, and a misspelt key does not compile', () => {
  const c = loadAgentConfig({ ...NOFILE, env: {} });
  const nvml = readSection(c, NVML_SECTION);
  // duration with a default: a number, never null; the common keys' null default: nullable
  typed<number>(nvml.state_interval);
  typed<number | null>(nvml.interval);
  // @ts-expect-error a plugin's interval may be unset (it inherits [daemon] interval)
  typed<number>(nvml.interval);
  typed<boolean>(nvml.processes);
  // @ts-expect-error a misspelt key
  void nvml.stat_interval;

  const otlp = readSection(c, OTLP_SECTION);
  typed<'http/protobuf' | 'http/json' | 'grpc'>(otlp.protocol);
  // @ts-expect-error an enum is the union of its values, not any string
  typed<'http/thrift'>(otlp.protocol);
  // keys spread from a shared declaration (tlsClientKeys, secretFileKeys) keep their literal names and types
  typed<string | null>(otlp.certificate);
  typed<string | null>(otlp.headers_file);
  // @ts-expect-error a spread key misspelt
  void otlp.client_cert;
  typed<Record<string, string>>(otlp.headers);
  // @ts-expect-error a URL written empty is unset, whatever its default
  typed<string>(otlp.endpoint);

  const daemon = readSection(c, DAEMON_SECTION);
  typed<string[]>(daemon.plugins);
  typed<string>(daemon.state_dir);
  typed<string>(daemon.attribution);
  typed<'debug' | 'info' | 'warn' | 'error'>(daemon.log_level);
  typed<number | null>(daemon.expect_gpus);
  // @ts-expect-error a string that is not required may be written empty
  typed<string>(daemon.host_name);

  const jobs = readSection(c, JOBS_SECTION);
  typed<number | null>(jobs.gpu_hour_price);
  typed<number>(jobs.pue);
  // @ts-expect-error unset by default
  typed<number>(jobs.kwh_price);

  // a section declared without defineSection (its key names widened to string) is refused
  const loose: SectionSpec = { name: 'nvml', description: '', keys: NVML_SECTION.keys };
  // @ts-expect-error the keys must stay literal
  readSection(c, loose);

  assert.equal(nvml.state_interval, 60);
  assert.equal(nvml.interval, null);
});

test("readSection answers the configuration's values: file, environment, defaults and nulls", () => {
  const f = join(dir, 'read.ini');
  writeFileSync(
    f,
    '[nvml]\nstate_interval = 2m\nprocesses = no\n[jobs]\ngpu_hour_price = 2.5\ncurrency ' +
      '=\ngpu_hour_prices = H100=3.2\n[dcgm]\ngpu_fields = never\ninterval = 5s\n',
  );
  const c = loadAgentConfig({ configPath: f, env: { L9GPU_NVML_LIBRARY: '/opt/nvml/libnvidia-ml.so.1' } });
  assert.deepEqual(readSection(c, NVML_SECTION), {
    interval: null,
    timeout: null,
    library: '/opt/nvml/libnvidia-ml.so.1',
    processes: false,
    state_interval: 120,
    events: true,
  });
  const jobs = readSection(c, JOBS_SECTION);
  assert.equal(jobs.gpu_hour_price, 2.5);
  assert.equal(jobs.kwh_price, null, 'unset by default');
  assert.equal(jobs.currency, null, 'written empty: unset, not "USD" nor ""');
  assert.deepEqual(jobs.gpu_hour_prices, { H100: '3.2' });
  assert.deepEqual(jobs.partition_gpu_hour_prices, {});
  assert.deepEqual(readSection(c, WEBHOOK_SECTION).headers, {});
  const dcgm = readSection(c, DCGM_SECTION);
  assert.equal(dcgm.gpu_fields, 'never');
  assert.deepEqual(dcgm.endpoints, ['http://127.0.0.1:9400/metrics']);
  assert.deepEqual(readPluginCommon(c, 'dcgm'), { interval: 5, timeout: null });
  assert.deepEqual(readPluginCommon(c, 'host'), { interval: null, timeout: null });
});

test('a list or map the loader left unset reads as empty', () => {
  const S = defineSection({
    name: 'probe',
    description: 'A section with no defaults.',
    keys: [
      { key: 'names', type: 'list', default: null, description: 'A list unset by default.' },
      { key: 'headers', type: 'map', default: null, description: 'A map unset by default.' },
      { key: 'count', type: 'int', default: null, description: 'A number unset by default.' },
    ],
  });
  const c = loadConfig({ sections: [S], env: {}, ...NOFILE });
  const v = readSection(c, S);
  typed<string[]>(v.names);
  typed<number | null>(v.count);
  assert.deepEqual(v, { names: [], headers: {}, count: null });
});

test('a section the configuration was not loaded with is an error naming the key, not undefined values', () => {
  const c = loadConfig({ sections: [DAEMON_SECTION], env: {}, ...NOFILE });
  assert.throws(() => readSection(c, NVML_SECTION), /config: no key nvml\.interval in the schema/);
});

test("[daemon] attribution read without the composition root's names (the hooks) is a word, never empty: as the daemon's enum", () => {
  const f = join(dir, 'attr-empty.ini');
  writeFileSync(f, '[daemon]\nattribution =\n');
  assert.throws(
    () => loadConfig({ sections: [DAEMON_SECTION], configPath: f, env: {}, partial: true }),
    /\[daemon\] attribution: empty: it needs a value/,
  );
  assert.throws(
    () => loadAgentConfig({ configPath: f, env: {} }),
    /\[daemon\] attribution: "" is not one of auto, slurm, kubernetes, none/,
  );
  assert.equal(readSection(loadConfig({ sections: [DAEMON_SECTION], env: {}, ...NOFILE }), DAEMON_SECTION).attribution, 'auto');
});
