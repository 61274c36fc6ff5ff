import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadAgentConfig } from '../../daemon/catalog.js';
import { displayValue } from '../../src/core/config/load.js';
import { ConfigError } from '../../src/core/config/schema.js';
import { resourceAttributes } from '../../src/core/resource.js';
import { tempDir } from '../helpers/paths.js';
import { readSection } from '../../src/core/config/read.js';
import { DAEMON_SECTION } from '../../src/core/config/sections.js';
import { HOST_SECTION } from '../../plugins/host/config.js';
import { SIM_SECTION } from '../../plugins/sim/config.js';
import { FILE_SECTION, OTLP_SECTION, PROMETHEUS_SECTION, STDOUT_SECTION } from '../../src/sinks/sections.js';
import { jobLabelsFrom } from '../../src/core/job-labels.js';

const dir = tempDir();
function ini(name: string, text: string | Buffer): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}
const NOFILE = { defaultPath: '/nonexistent/l9gpu.ini' };

test('embedded defaults when no file exists', () => {
  const c = loadAgentConfig({ ...NOFILE, env: {} });
  assert.equal(c.file, null);
  assert.equal(c.fileOrigin, 'none');
  const daemon = readSection(c, DAEMON_SECTION);
  assert.deepEqual(daemon.plugins, ['auto']);
  assert.deepEqual(daemon.sinks, ['prometheus']);
  assert.equal(daemon.interval, 10);
  assert.equal(readSection(c, PROMETHEUS_SECTION).port, 9464);
  assert.equal(readSection(c, OTLP_SECTION).protocol, 'http/protobuf');
  assert.equal(c.sourceOf('daemon', 'interval').source, 'default');
});

test('precedence: flags > environment > file > defaults, with provenance', () => {
  const f = ini(
    'prec.ini',
    '[daemon]\ninterval = 30s\nsinks = stdout\n[otlp]\nendpoint = http://file.example:4318/v1/metrics\ntimeout = 7\n[sim]\ngpus = 3\n',
  );
  const c = loadAgentConfig({
    configPath: f,
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://env.example:4318/', OTEL_EXPORTER_OTLP_TIMEOUT: '2500', L9GPU_CONFIG: '/ignored.ini' },
    overrides: [{ section: 'daemon', key: 'interval', raw: '5', flag: '--interval' }],
  });
  assert.equal(c.file, f);
  assert.equal(c.fileOrigin, 'flag');
  assert.equal(readSection(c, DAEMON_SECTION).interval, 5);
  assert.deepEqual(c.sourceOf('daemon', 'interval'), { source: 'flag', detail: '--interval' });
  assert.deepEqual(readSection(c, DAEMON_SECTION).sinks, ['stdout']);
  assert.deepEqual(c.sourceOf('daemon', 'sinks'), { source: 'file', detail: `${f}:3` });
  // the base endpoint gets the signal path appended; env beats the file
  assert.equal(readSection(c, OTLP_SECTION).endpoint, 'http://env.example:4318/v1/metrics');
  assert.deepEqual(c.sourceOf('otlp', 'endpoint'), { source: 'env', detail: 'OTEL_EXPORTER_OTLP_ENDPOINT' });
  assert.equal(readSection(c, OTLP_SECTION).timeout, 2.5, 'OTEL_EXPORTER_OTLP_TIMEOUT is milliseconds');
  assert.equal(readSection(c, SIM_SECTION).gpus, 3);
  assert.equal(readSection(c, HOST_SECTION).interval, null, 'a plugin interval inherits from [daemon]');
});

test('L9GPU_CONFIG selects the file when --config is absent', () => {
  const f = ini('envsel.ini', '[daemon]\ncluster = alps\n');
  const c = loadAgentConfig({ ...NOFILE, env: { L9GPU_CONFIG: f } });
  assert.equal(c.fileOrigin, 'env');
  assert.equal(readSection(c, DAEMON_SECTION).cluster, 'alps');
  assert.equal(resourceAttributes(c)['cluster.name'], 'alps');
});

test('the signal-specific OTEL variables win over the generic ones', () => {
  const c = loadAgentConfig({
    ...NOFILE,
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://generic:4318',
      OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'http://specific:9999/custom/path',
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Basic%20abc,x-scope-orgid=generic',
      OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_EXPORTER_OTLP_COMPRESSION: 'none',
    },
  });
  const otlp = readSection(c, OTLP_SECTION);
  assert.equal(otlp.endpoint, 'http://specific:9999/custom/path');
  assert.deepEqual(otlp.headers, { authorization: 'Basic abc', 'x-scope-orgid': 'generic' });
  assert.equal(otlp.protocol, 'http/json');
  assert.equal(otlp.compression, 'none');
  assert.equal(displayValue(c, 'otlp', 'headers'), 'authorization=***,x-scope-orgid=***', 'doctor masks secrets');
});

test('OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME shape the resource', () => {
  const c = loadAgentConfig({
    ...NOFILE,
    env: { OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod,team=hpc%20ops', OTEL_SERVICE_NAME: 'gpu-agent' },
  });
  const r = resourceAttributes(c);
  assert.equal(r['service.name'], 'gpu-agent');
  assert.equal(r['deployment.environment'], 'prod');
  assert.equal(r.team, 'hpc ops');
  assert.equal(typeof r['host.name'], 'string');
  assert.ok(String(r['host.name']).length > 0);
});

function configError(text: string, env: NodeJS.ProcessEnv = {}): string {
  const f = ini(`bad-${Math.random().toString(36).slice(2)}.ini`, text);
  try {
    loadAgentConfig({ configPath: f, env });
  } catch (e) {
    assert.ok(e instanceof ConfigError, `expected ConfigError, got ${e}`);
    return e.message.replace(f, 'FILE');
  }
  assert.fail(`no error for ${JSON.stringify(text)}`);
}

test('unknown sections, keys and bad values name the file, line, section and key', () => {
  assert.equal(configError('[daemon]\nintervall = 5\n'), 'FILE:2 [daemon] intervall: unknown key (did you mean interval?)');
  assert.equal(configError('[deamon]\ninterval = 5\n'), 'FILE:1 [deamon]: unknown section (did you mean [daemon]?)');
  assert.equal(configError('interval = 5\n'), 'FILE: key "interval" is outside any section (put it under [daemon])');
  assert.equal(configError('[otlp]\ntimeout = abc\n'), 'FILE:2 [otlp] timeout: "abc" is not a duration (examples: 10, 10s, 500ms, 2m)');
  assert.equal(
    configError('[otlp]\n\nprotocol = thrift\n'),
    'FILE:3 [otlp] protocol: "thrift" is not one of http/protobuf, http/json, grpc',
  );
  assert.equal(configError('[otlp]\nendpoint = localhost:4318\n'), 'FILE:2 [otlp] endpoint: "localhost:4318" is not an http(s) URL');
  assert.equal(configError('[prometheus]\nport = 70000\n'), 'FILE:2 [prometheus] port: 70000 is above the maximum 65535');
  assert.equal(configError('[prometheus]\nport = 9464.5\n'), 'FILE:2 [prometheus] port: "9464.5" is not an integer');
  assert.equal(configError('[stdout]\nresource = maybe\n'), 'FILE:2 [stdout] resource: "maybe" is not a boolean (true/false)');
  assert.equal(
    configError('[file]\nmax_bytes = 12 parsecs\n'),
    'FILE:2 [file] max_bytes: "12 parsecs" is not a size (examples: 1048576, 64MiB, 100MB)',
  );
  assert.equal(
    configError('[file]\npath = relative/metrics.jsonl\n'),
    'FILE:2 [file] path: "relative/metrics.jsonl" is not an absolute path',
  );
  assert.equal(configError('[daemon]\ninterval = 0.001\n'), 'FILE:2 [daemon] interval: 0.001 is below the minimum 0.05s');
  assert.equal(configError('[otlp]\nheaders = novalue\n'), 'FILE:2 [otlp] headers: "novalue" is not key=value');
  assert.equal(
    configError('[daemon]\nplugins = host, simm\n'),
    'FILE:2 [daemon] plugins: unknown plugin "simm" (did you mean sim?); known: auto, host, ' +
      'nvml, amdsmi, hlsmi, sim, vllm, sglang, tgi, triton, nim, dcgm, nccl',
  );
  assert.equal(
    configError('[daemon]\nsinks = otlp, kafka\n'),
    'FILE:2 [daemon] sinks: unknown sink "kafka"; known: otlp, prometheus, stdout, file, webhook',
  );
  assert.equal(configError('[daemon]\n[sink.otlp]\nendpoint = http://x\n'), 'FILE:2 [sink.otlp]: unknown section');
});

test('bad environment values name the variable and the key it sets', () => {
  assert.throws(() => loadAgentConfig({ ...NOFILE, env: { OTEL_EXPORTER_OTLP_TIMEOUT: '5s' } }), {
    message: 'environment OTEL_EXPORTER_OTLP_TIMEOUT (for [otlp] timeout): "5s" is not a whole number of milliseconds',
  });
  assert.throws(() => loadAgentConfig({ ...NOFILE, env: { L9GPU_STATE_DIR: 'relative' } }), {
    message: 'environment L9GPU_STATE_DIR (for [daemon] state_dir): "relative" is not an absolute path',
  });
});

test(
  'what the ini package would take silently or misread is an error naming the line: a key set ' +
    'twice, key[] arrays, __proto__, invalid UTF-8; a byte-order mark is read past',
  () => {
    assert.equal(
      configError('[daemon]\ninterval = 5s\ninterval = 7s\n'),
      'FILE:3 [daemon] interval: set twice (first on line 2): say it once',
    );
    assert.equal(
      configError('[daemon]\ninterval = 5s\n[host]\n[daemon]\ninterval = 9s\n'),
      'FILE:5 [daemon] interval: set twice (first on line 2): say it once',
    );
    assert.equal(
      configError('[daemon]\nsinks[] = stdout\n'),
      'FILE:2 [daemon] sinks: "sinks[]" is INI array syntax: l9gpu lists are one line, comma-separated (sinks = a, b)',
    );
    assert.equal(configError('[daemon]\n__proto__ = x\n'), 'FILE:2 [daemon] __proto__: unknown key');
    assert.equal(configError('[daemon]\nconstructor = x\n'), 'FILE:2 [daemon] constructor: unknown key');
    const latin1 = ini(
      'latin1.ini',
      Buffer.concat([Buffer.from('[daemon]\n; caf'), Buffer.from([0xe9]), Buffer.from('\ninterval = 5s\n')]),
    );
    assert.throws(() => loadAgentConfig({ configPath: latin1, env: {} }), { message: `config file ${latin1}:2: not valid UTF-8` });
    const bom = ini('bom.ini', '\ufeff[daemon]\ninterval = 5s\n');
    assert.equal(readSection(loadAgentConfig({ configPath: bom, env: {} }), DAEMON_SECTION).interval, 5);
    // the same key in two sections is two keys
    assert.equal(
      readSection(loadAgentConfig({ configPath: ini('two.ini', '[host]\ninterval = 5s\n[sim]\ninterval = 5s\n'), env: {} }), SIM_SECTION)
        .interval,
      5,
    );
  },
);

test('OTLP headers an HTTP request cannot carry are refused at load (not at every export), never echoing a value', () => {
  assert.equal(
    configError('[otlp]\nheaders = my key=v\n'),
    'FILE:2 [otlp] headers: header name "my key" is not an HTTP token (letters, digits and !#$%&\'*+-.^_`|~)',
  );
  assert.equal(
    configError('[otlp]\nheaders = authorization=Bearer%ZZsecret\n'),
    'FILE:2 [otlp] headers: the value of authorization is not percent-encoded correctly (write %25 for a literal %)',
  );
  assert.equal(
    configError('[otlp]\nheaders = authorization=Bearer%0Asecret\n'),
    'FILE:2 [otlp] headers: the value of authorization has a character an HTTP header cannot ' +
      'carry (a control character, or beyond Latin-1)',
  );
  assert.throws(() => loadAgentConfig({ ...NOFILE, env: { OTEL_EXPORTER_OTLP_HEADERS: 'x-token=%E2%82%AC100' } }), {
    message:
      'environment OTEL_EXPORTER_OTLP_HEADERS (for [otlp] headers): the value of x-token has a ' +
      'character an HTTP header cannot carry (a control character, or beyond Latin-1)',
  });
  const ok = loadAgentConfig({
    ...NOFILE,
    env: { OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Basic%20dXNlcjpwYXNz, x-scope-orgid=tenant-1' },
  });
  assert.deepEqual(readSection(ok, OTLP_SECTION).headers, { authorization: 'Basic dXNlcjpwYXNz', 'x-scope-orgid': 'tenant-1' });
});

test(
  "headers the HTTP client writes itself (framing, hop-by-hop, the body's type and encoding) " +
    'are refused in every header map, from the file or a variable',
  () => {
    assert.equal(
      configError('[otlp]\nheaders = Transfer-Encoding=chunked\n'),
      'FILE:2 [otlp] headers: header Transfer-Encoding is not one to set: the HTTP client writes ' +
        'it itself (connection, content-encoding, content-length, content-type, expect, keep-alive, ' +
        'proxy-connection, te, trailer, transfer-encoding, upgrade are its own)',
    );
    assert.match(
      configError('[webhook]\nheaders = x-team=a,connection=close\n'),
      /^FILE:2 \[webhook\] headers: header connection is not one to set: the HTTP client writes it itself/,
    );
    assert.match(
      configError('[jobs]\npromql_headers = Content-Length=0\n'),
      /^FILE:2 \[jobs\] promql_headers: header Content-Length is not one to set/,
    );
    assert.throws(() => loadAgentConfig({ ...NOFILE, env: { OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20x,TE=trailers' } }), {
      message: /^environment OTEL_EXPORTER_OTLP_HEADERS \(for \[otlp\] headers\): header TE is not one to set/,
    });
    // the headers a backend wants are still taken, and resource attributes are no request headers
    assert.deepEqual(
      readSection(
        loadAgentConfig({
          configPath: ini(
            'hdr-ok.ini',
            '[otlp]\nheaders = X-Scope-OrgID=t1,authorization=Basic%20x\n[daemon]\nresource_attributes = connection=ib0\n',
          ),
          env: {},
        }),
        OTLP_SECTION,
      ).headers,
      { 'X-Scope-OrgID': 't1', authorization: 'Basic x' },
    );
  },
);

test('[prometheus] path is a URL path: without its leading / (a page no scrape asks for) it is refused at load', () => {
  assert.equal(
    configError('[prometheus]\npath = metrics\n'),
    'FILE:2 [prometheus] path: "metrics" is not a URL path: it starts with / (/metrics)',
  );
  assert.equal(
    configError('[prometheus]\npath = /metrics?x=1\n'),
    'FILE:2 [prometheus] path: "/metrics?x=1" is not a URL path: no spaces, ? or # (the query is not part of the page\'s path)',
  );
  assert.equal(
    configError('[prometheus]\npath =\n'),
    'FILE:2 [prometheus] path: empty: it needs a value; leave the key out for the default',
  );
  assert.equal(
    readSection(loadAgentConfig({ configPath: ini('prom-path.ini', '[prometheus]\npath = /l9gpu/metrics\n'), env: {} }), PROMETHEUS_SECTION)
      .path,
    '/l9gpu/metrics',
  );
});

test(
  'an empty state_dir, in the file or as L9GPU_STATE_DIR=, is a config error naming where it ' +
    'came from (not "unset": the store would be elsewhere, or nowhere)',
  () => {
    assert.equal(
      configError('[daemon]\nstate_dir =\n'),
      'FILE:2 [daemon] state_dir: empty: it needs a value (an absolute path); leave the key out for the default',
    );
    assert.throws(() => loadAgentConfig({ ...NOFILE, env: { L9GPU_STATE_DIR: '' } }), {
      message:
        'environment L9GPU_STATE_DIR (for [daemon] state_dir): empty: it needs a value (an absolute ' +
        'path); leave the key out for the default',
    });
    // an empty variable of a key that may be unset still means unset
    assert.deepEqual(
      readSection(loadAgentConfig({ ...NOFILE, env: { L9GPU_PLUGINS: '', OTEL_EXPORTER_OTLP_HEADERS: '' } }), DAEMON_SECTION).plugins,
      ['auto'],
    );
  },
);

test('a missing or oversized config file is an error, a missing default file is not', () => {
  assert.throws(() => loadAgentConfig({ configPath: join(dir, 'nope.ini'), env: {} }), {
    message: `config file ${join(dir, 'nope.ini')}: not found`,
  });
  assert.throws(() => loadAgentConfig({ ...NOFILE, env: { L9GPU_CONFIG: dir } }), { message: `config file ${dir}: not a regular file` });
  const big = ini('big.ini', '[daemon]\n' + ';'.repeat(1 << (20 + 1)));
  assert.throws(() => loadAgentConfig({ configPath: big, env: {} }), /larger than the 1 MiB limit/);
});

test('durations, sizes, lists and booleans parse in every documented spelling', () => {
  const f = ini(
    'spell.ini',
    '[daemon]\ninterval = 500ms\nplugins = host sim\n[otlp]\nmax_queue_bytes = ' +
      '2MiB\nexport_interval = 2m\n[file]\nmax_bytes = 1.5MB\n[stdout]\nresource = off\n',
  );
  const c = loadAgentConfig({ configPath: f, env: {} });
  const [daemon, otlp] = [readSection(c, DAEMON_SECTION), readSection(c, OTLP_SECTION)];
  assert.equal(daemon.interval, 0.5);
  assert.deepEqual(daemon.plugins, ['host', 'sim']);
  assert.equal(otlp.max_queue_bytes, 2 * 1024 * 1024);
  assert.equal(otlp.export_interval, 120);
  assert.equal(readSection(c, FILE_SECTION).max_bytes, 1_500_000);
  assert.equal(readSection(c, STDOUT_SECTION).resource, false);
});

test(
  "[attribution] omit_from_points: a run's id and a name attribution does not add are refused " +
    'at load, naming the key; k8s.pod.label.* is a prefix',
  () => {
    const load = (v: string) =>
      loadAgentConfig({ configPath: ini('omit.ini', `[attribution]\njob_labels = info\nomit_from_points = ${v}\n`), env: {} });
    assert.deepEqual(jobLabelsFrom(load('slurm.job.name, slurm.user, k8s.pod.label.*')), {
      mode: 'info',
      omit: ['slurm.job.name', 'slurm.user', 'k8s.pod.label.*'],
    });
    assert.deepEqual(jobLabelsFrom(load('')), { mode: 'info', omit: [] });
    assert.throws(
      () => load('slurm.user, slurm.job.id'),
      (e: Error) => e instanceof ConfigError && /omit_from_points/.test(e.message) && /slurm\.job\.id" names the run/.test(e.message),
    );
    assert.throws(
      () => load('slurm.jobname'),
      (e: Error) => e instanceof ConfigError && /"slurm\.jobname" is not a job attribute/.test(e.message),
    );
    assert.throws(
      () => load('k8s.*'),
      (e: Error) => e instanceof ConfigError && /"k8s\.\*" is not a job attribute/.test(e.message),
    );
  },
);
