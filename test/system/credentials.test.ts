/**
 * Credentials stay where they were configured for. PromQL queries (`l9gpu
 * jobs show --source promql`, the slurmctld epilog) carry promql_headers:
 * a backend that redirects to another origin must not get them (two real
 * servers on 127.0.0.1, different ports: different origins). And a backend
 * that echoes the request's Authorization in its error (http://user:pass@
 * becomes `Basic <base64>`) must not put it into an error or a log line.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { reportFromPromql } from '../../src/jobs/promql.js';
import { createLogger } from '../../src/core/log.js';
import { redactText } from '../../src/core/redact.js';
import { DaemonProcess, ownStateDir } from '../helpers/daemon.js';
import { tempDir } from '../helpers/paths.js';

// beside the other files of the system lane: state in a folder of this file's own, not the node's /var/lib/l9gpu
ownStateDir();

interface Seen {
  path: string;
  headers: http.IncomingHttpHeaders;
}

async function server(
  handler: (req: http.IncomingMessage, res: http.ServerResponse) => void,
): Promise<{ origin: string; seen: Seen[]; close: () => void }> {
  const seen: Seen[] = [];
  const s = http.createServer((req, res) => {
    seen.push({ path: req.url ?? '', headers: req.headers });
    req.resume();
    handler(req, res);
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  return { origin: `http://127.0.0.1:${(s.address() as AddressInfo).port}`, seen, close: () => (s.closeAllConnections(), s.close()) };
}

const EMPTY = JSON.stringify({ status: 'success', data: { resultType: 'matrix', result: [] } });
const HEADERS = { Authorization: 'Bearer tok-0123456789abcdef', 'X-Scope-OrgID': 'tenant-a' };

test(
  'PromQL: a redirect to another origin is not followed (the other server sees nothing, no ' +
    'header reaches it), the error names the configured URL and the target origin',
  async () => {
    const other = await server((_req, res) => res.end(EMPTY));
    const api = await server((req, res) => {
      res.writeHead(302, { location: `${other.origin}${req.url}` });
      res.end();
    });
    try {
      await assert.rejects(reportFromPromql({ url: `${api.origin}/prom`, window: '1h', headers: HEADERS }, '42', null), (e: Error) => {
        assert.match(
          e.message,
          new RegExp(`^PromQL ${api.origin}/prom: HTTP 302 redirects to another origin \\(${other.origin}\\): not followed`),
        );
        return true;
      });
      assert.equal(api.seen.length, 1);
      assert.equal(api.seen[0]!.headers['x-scope-orgid'], 'tenant-a');
      assert.deepEqual(other.seen, [], 'the other origin got no request, so none of the headers');
      // another port of the same host is another origin too; so is another scheme or host name for the same socket
      const byName = await server((req, res) => {
        res.writeHead(307, { location: `http://localhost:${new URL(api.origin).port}${req.url}` });
        res.end();
      });
      try {
        await assert.rejects(
          reportFromPromql({ url: byName.origin, window: '1h', headers: HEADERS }, '42', null),
          /redirects to another origin \(http:\/\/localhost:\d+\)/,
        );
        assert.equal(api.seen.length, 1, 'not followed to localhost either');
      } finally {
        byName.close();
      }
    } finally {
      api.close();
      other.close();
    }
  },
);

test('PromQL: a redirect within the origin is followed with the headers, a bounded number of times', async () => {
  const api = await server((req, res) => {
    if (req.url!.startsWith('/api/')) {
      res.writeHead(301, { location: `/prefix${req.url}` });
      return res.end();
    }
    if (req.url!.startsWith('/loop')) {
      res.writeHead(302, { location: '/loop' });
      return res.end();
    }
    res.end(EMPTY);
  });
  try {
    assert.equal(
      await reportFromPromql({ url: api.origin, window: '1h', headers: HEADERS }, '42', null),
      undefined,
      'no such job: an answer, not an error',
    );
    const followed = api.seen.filter((s) => s.path.startsWith('/prefix/api/v1/query'));
    assert.ok(followed.length >= 1);
    assert.ok(followed.every((s) => s.headers['x-scope-orgid'] === 'tenant-a' && s.headers.authorization === HEADERS.Authorization));
    const before = api.seen.length;
    await assert.rejects(
      reportFromPromql({ url: `${api.origin}/loop`, window: '1h', headers: HEADERS }, '42', null),
      /more than 5 redirects/,
    );
    // the first request and five redirects
    assert.equal(api.seen.length - before, 6);
  } finally {
    api.close();
  }
});

/** A backend that refuses every request and echoes the Authorization it got, as some proxies' error pages do. */
const echo =
  (status: number, json = false) =>
  (req: http.IncomingMessage, res: http.ServerResponse): void => {
    res.writeHead(status, { 'content-type': json ? 'application/json' : 'text/plain' });
    res.end(
      json
        ? JSON.stringify({ status: 'error', errorType: 'auth', error: `denied: authorization=${req.headers.authorization}` })
        : `denied: authorization=${req.headers.authorization}`,
    );
  };
const B64 = Buffer.from('hpc:pa55-w0rd').toString('base64');

test(
  'PromQL with http://user:pass@: sent as a Basic credential, and neither the password nor ' +
    'its base64 in the error when the backend echoes it',
  async () => {
    for (const json of [true, false]) {
      const api = await server(echo(401, json));
      try {
        const url = `http://hpc:pa55-w0rd@${api.origin.slice('http://'.length)}`;
        await assert.rejects(reportFromPromql({ url, window: '1h' }, '42', null), (e: Error) => {
          assert.equal(api.seen[0]?.headers.authorization, `Basic ${B64}`, 'the credential went to the backend');
          assert.match(e.message, /denied: authorization=Basic \*\*\*/);
          assert.doesNotMatch(e.message, new RegExp(`${B64}|pa55-w0rd`));
          assert.match(e.message, /^PromQL http:\/\/\*\*\*:\*\*\*@127\.0\.0\.1/);
          return true;
        });
      } finally {
        api.close();
      }
    }
  },
);

test(
  'the OTLP sink to http://user:pass@: a backend echoing the Basic credential in its refusal ' +
    'puts neither it nor the password in the log',
  async () => {
    const api = await server(echo(400));
    const dir = tempDir('l9gpu-credentials-otlp-');
    const cfg = join(dir, 'l9gpu.ini');
    writeFileSync(
      cfg,
      `[daemon]\nplugins = host\nsinks = otlp\ninterval = 300ms\n[otlp]\nendpoint = ` +
        `http://hpc:pa55-w0rd@${api.origin.slice('http://'.length)}\nexport_interval = ` +
        `300ms\nprotocol = http/protobuf\n`,
    );
    const d = new DaemonProcess(['--config', cfg]);
    try {
      await d.waitStderr(/denied: authorization=/, 20_000);
    } finally {
      await d.stop();
      api.close();
    }
    assert.ok(
      api.seen.some((s) => s.headers.authorization === `Basic ${B64}`),
      'the credential went to the backend',
    );
    assert.match(d.stderr, /denied: authorization=Basic \*\*\*/);
    assert.doesNotMatch(d.stderr, new RegExp(`${B64}|pa55-w0rd`), d.stderr);
  },
);

test(
  'redactText: user information in any URL, a Basic credential and a Bearer token, wherever ' +
    'they stand; words that only look alike are kept',
  () => {
    assert.equal(redactText('GET https://alice:s3cret@vm.example:8428/api failed'), 'GET https://***@vm.example:8428/api failed');
    assert.equal(
      redactText('proxy http://token@host/x and mailto user@example.org'),
      'proxy http://***@host/x and mailto user@example.org',
    );
    assert.equal(redactText(`{"authorization":"Basic ${B64}"}`), '{"authorization":"Basic ***"}');
    assert.equal(redactText('Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.abc'), 'Authorization: Bearer ***');
    assert.equal(redactText('POST to http://h/ with a bearer token'), 'POST to http://h/ with a bearer token');
    assert.equal(redactText('Basic settings are fine'), 'Basic settings are fine');
    // every log line goes through it
    const lines: string[] = [];
    createLogger('info', (l) => lines.push(l)).error('export failed', { url: 'http://u:p4ss@h:1/v1', error: `HTTP 401: Basic ${B64}` });
    assert.doesNotMatch(lines[0]!, new RegExp(`p4ss|${B64}`));
  },
);
