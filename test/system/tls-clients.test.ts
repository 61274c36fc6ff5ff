/**
 * The wire from the daemon and the CLI outwards, against real peers: a
 * VictoriaMetrics with its own TLS (a private CA) and basic auth as the OTLP
 * receiver and the PromQL backend, a webhook that asks for a client
 * certificate; credentials that go only to the origin they were configured
 * for; doctor on a page open to the network and on secrets others can read;
 * and the pull page's personal labels by how it is served.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { makePki, type Pki } from '../helpers/certs.js';
import { DaemonProcess, runCli } from '../helpers/daemon.js';
import { HttpCapture } from '../helpers/http-capture.js';
import { freePort } from '../helpers/net.js';
import { PRODUCT, tempDir } from '../helpers/paths.js';
import { slurmControllerDown } from '../helpers/slurm-down.js';
import { VictoriaMetrics } from '../helpers/victoriametrics.js';
import { waitFor } from '../helpers/wait.js';
import { openStore } from '../../src/store/open.js';
import { recordEnd, recordStart } from '../../src/store/jobs.js';
import { simUuid } from '../../plugins/sim/index.js';

const dir = tempDir('l9gpu-tls-clients-');
// users other than root read the configuration and the state folder (the CLI as nobody)
chmodSync(dir, 0o755);
let pki: Pki;
let vm: VictoriaMetrics;
const AUTH = { username: 'l9gpu', password: 'vm-s3cret-pass' };
const basic = `Basic ${Buffer.from(`${AUTH.username}:${AUTH.password}`).toString('base64')}`;

before(async () => {
  pki = makePki(dir);
  vm = await new VictoriaMetrics().start({ tls: { cert: pki.server, key: pki.serverKey, ca: pki.ca }, auth: AUTH });
});
after(async () => {
  await vm?.stop();
});

/** A file of root's alone (0600), as a secret must be. */
function secret(name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text, { mode: 0o600 });
  chmodSync(p, 0o600);
  return p;
}

test(
  'OTLP over https to a VictoriaMetrics with its own TLS and basic auth: a wrong CA is a ' +
    'configuration problem said once and named by doctor; the CA file mended on disk is taken ' +
    'without a restart; then a job from PromQL over https with a token file, and a --url ' +
    'elsewhere gets none of the configured credentials',
  async () => {
    const d0 = join(dir, 'otlp');
    const slurm = slurmControllerDown(tempDir('l9gpu-tls-otlp-'), 'tlsnode');
    const inUse = join(dir, 'ca-in-use.pem');
    copyFileSync(pki.ca2, inUse);
    const headers = secret('otlp-headers', `# the receiver's basic auth\nAuthorization: ${basic}\n`);
    const token = secret('promql-token', 'not-a-bearer-vm-takes\n');
    const promqlHeaders = secret('promql-headers', `Authorization: ${basic}\nX-Scope-OrgID: hpc\n`);
    const config = `${d0}.ini`;
    writeFileSync(
      config,
      `[daemon]\n${slurm.daemon}plugins = sim\nsinks = otlp\ninterval = 300ms\nhost_name = tlsnode\n[sim]\ngpus = 1\n` +
        `[otlp]\nendpoint = ${vm.url}/opentelemetry/v1/metrics\nexport_interval = ` +
        `300ms\ncertificate = ${inUse}\nheaders_file = ${headers}\n` +
        `[jobs]\npromql_url = ${vm.url}\npromql_certificate = ${pki.ca}\npromql_headers_file = ${promqlHeaders}\n${slurm.slurm}`,
    );
    chmodSync(config, 0o644);
    const db = openStore(slurm.state);
    const uuid = simUuid('tlsnode', 0);
    recordStart(
      db,
      { jobId: '4242', runKey: 'r0', user: 'alice', uid: 1001, partition: 'gpu', name: 'train' },
      [{ uuid, shared: false }],
      'prolog',
      Date.now(),
    );
    const d = new DaemonProcess(['--config', config]);
    try {
      await d.waitStderr(/configuration problem, not an outage: fix \[otlp\] certificate/);
      const doctor = await runCli(['doctor', '--config', config]);
      assert.equal(doctor.status, 1, doctor.stdout);
      assert.match(doctor.stdout, /FAIL otlp .*fix \[otlp\] certificate/);
      assert.equal((await vm.series('{__name__="gpu.utilization"}')).length, 0, 'nothing reached the receiver');
      // the right CA written over the one in use: taken at the next try, no restart, no reload
      copyFileSync(pki.ca, inUse);
      await waitFor(
        'the GPU series in VictoriaMetrics',
        async () => {
          await vm.flush();
          return (await vm.series('{__name__="gpu.utilization","slurm.job.id"="4242"}')).length > 0 || undefined;
        },
        30_000,
      );
      await d.waitStderr(/the configuration problem is mended: delivering queued data/);
      assert.equal(d.stderr.match(/configuration problem, not an outage/g)?.length, 1, 'said once');
      const ok = await runCli(['doctor', '--config', config]);
      assert.match(ok.stdout, /ok {3}otlp .*private CA.* accepts TLS/);
      await waitFor(
        'six samples of the job',
        async () => {
          await vm.flush();
          return ((await vm.exportRaw('{__name__="gpu.job.share","slurm.job.id"="4242"}'))[0]?.values.length ?? 0) >= 6 || undefined;
        },
        30_000,
      );
      // the epilog while the daemon runs: its job-end summary reaches the backend too
      recordEnd(db, { jobId: '4242', runKey: 'r0' }, { endTime: Date.now(), state: 'COMPLETED', exitCode: 0 }, [], 'epilog');
      await waitFor(
        'the job-end summary',
        async () => {
          await vm.flush();
          return (await vm.exportRaw('{__name__="gpu.job.energy","slurm.job.id"="4242"}')).length === 1 || undefined;
        },
        30_000,
      );
    } finally {
      db.close();
      assert.equal(await d.stop(), 0, d.stderr);
    }

    // PromQL over https: the private CA, the credentials from the headers file
    const show = await runCli(['jobs', 'show', '4242', '--json', '--source', 'promql', '--config', config]);
    assert.equal(show.status, 0, show.stderr);
    assert.deepEqual(
      (JSON.parse(show.stdout) as { gpus: { uuid: string }[] }).gpus.map((g) => g.uuid),
      [uuid],
    );
    // a token file over the headers file's Authorization: VictoriaMetrics refuses a bearer token, and says so
    writeFileSync(config, readFileSync(config, 'utf8').replace('[jobs]\n', `[jobs]\npromql_token_file = ${token}\n`));
    const refused = await runCli(['jobs', 'show', '4242', '--source', 'promql', '--config', config]);
    assert.equal(refused.status, 1);
    assert.match(refused.stderr, /HTTP 401/);
    assert.doesNotMatch(refused.stderr, /not-a-bearer/, 'the token is never printed');

    // a URL given on the command line at another origin: no configured credential goes there, --header values do
    const elsewhere = await new HttpCapture().start();
    try {
      const r = await runCli([
        'jobs',
        'show',
        '4242',
        '--source',
        'promql',
        '--url',
        elsewhere.url,
        '--header',
        'X-Mine=given',
        '--config',
        config,
      ]);
      assert.equal(r.status, 1);
      assert.ok(elsewhere.requests.length > 0, 'the other origin was asked');
      for (const q of elsewhere.requests) {
        assert.equal(q.headers.authorization, undefined, 'no Authorization from promql_headers_file or promql_token_file');
        assert.equal(q.headers['x-scope-orgid'], undefined);
        assert.equal(q.headers['x-mine'], 'given');
      }
    } finally {
      await elsewhere.stop();
    }

    // a user who cannot read root's secret files: the query goes without them, and the refusal says why
    const asNobody = await new Promise<{ status: number | null; stderr: string }>((resolve) => {
      const c = spawn(
        'runuser',
        ['-u', 'nobody', '--', PRODUCT.node, PRODUCT.cli, 'jobs', 'show', '4242', '--source', 'promql', '--config', config],
        { stdio: ['ignore', 'ignore', 'pipe'] },
      );
      let stderr = '';
      c.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
      c.on('close', (status) => resolve({ status, stderr }));
    });
    assert.equal(asNobody.status, 1, asNobody.stderr);
    assert.match(asNobody.stderr, /HTTP 401 \(no credential from .*promql-headers, .*promql-token: not readable by this user\)/);
  },
);

test(
  'the webhook over https with a client certificate and a token file: the receiver verifies ' +
    'the certificate against its CA and gets the bearer token',
  async () => {
    const got: { authorized: boolean; cn: string; auth: string | undefined }[] = [];
    const server = https.createServer(
      {
        cert: readFileSync(pki.server),
        key: readFileSync(pki.serverKey),
        ca: readFileSync(pki.ca),
        requestCert: true,
        rejectUnauthorized: true,
      },
      (req, res) => {
        const sock = req.socket as import('node:tls').TLSSocket;
        got.push({ authorized: sock.authorized, cn: String(sock.getPeerCertificate().subject?.CN), auth: req.headers.authorization });
        req.resume();
        req.on('end', () => res.writeHead(200).end());
      },
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as AddressInfo).port;
    const token = secret('webhook-token', 'hook-token-123456\n');
    const config = join(dir, 'webhook.ini');
    writeFileSync(
      config,
      `[daemon]\nplugins = sim\nsinks = webhook\ninterval = 200ms\nstate_dir = ${join(dir, 'webhook-state')}\n[webhook]\nurl ` +
        `= https://127.0.0.1:${port}/hook\ncertificate = ${pki.ca}\nclient_certificate = ${pki.client}\nclient_key ` +
        `= ${pki.clientKey}\ntoken_file = ${token}\n`,
    );
    const d = new DaemonProcess(['--config', config]);
    try {
      await waitFor('two webhook POSTs', () => got.length >= 2 || undefined);
      assert.deepEqual(got[0], { authorized: true, cn: 'l9gpu test client', auth: 'Bearer hook-token-123456' });
    } finally {
      assert.equal(await d.stop(), 0, d.stderr);
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
    // without the client certificate the receiver refuses the handshake: a configuration problem naming the key
    writeFileSync(config, readFileSync(config, 'utf8').replace(/client_certificate = .*\nclient_key = .*\n/, ''));
    const server2 = https.createServer(
      {
        cert: readFileSync(pki.server),
        key: readFileSync(pki.serverKey),
        ca: readFileSync(pki.ca),
        requestCert: true,
        rejectUnauthorized: true,
      },
      (_req, res) => res.writeHead(200).end(),
    );
    await new Promise<void>((r) => server2.listen(port, '127.0.0.1', () => r()));
    const d2 = new DaemonProcess(['--config', config]);
    try {
      await d2.waitStderr(/configuration problem, not an outage: fix \[webhook\] client_certificate/);
    } finally {
      assert.equal(await d2.stop(), 0, d2.stderr);
      server2.closeAllConnections();
      await new Promise((r) => server2.close(r));
    }
  },
);

test('a secret file that cannot be read is a configuration error naming its key, before anything starts', async () => {
  const config = join(dir, 'missing-secret.ini');
  writeFileSync(
    config,
    `[daemon]\nplugins = sim\nsinks = otlp\nstate_dir = ${join(dir, 'missing-state')}\n[otlp]\nheaders_file ` +
      `= ${join(dir, 'no-such-file')}\n`,
  );
  const r = await runCli(['daemon', '--once', '--config', config]);
  assert.equal(r.status, 2, r.stderr);
  assert.equal(r.stderr, `l9gpu: [otlp] headers_file: cannot read ${join(dir, 'no-such-file')}: not found\n`);
  const bad = secret('bad-headers', 'Authorization Bearer x\n');
  writeFileSync(
    config,
    `[daemon]\nplugins = sim\nsinks = otlp\nstate_dir = ${join(dir, 'missing-state')}\n[otlp]\nheaders_file = ${bad}\n`,
  );
  const r2 = await runCli(['daemon', '--once', '--config', config]);
  assert.equal(r2.status, 2, r2.stderr);
  assert.equal(r2.stderr, `l9gpu: [otlp] headers_file: ${bad}:1: not "Name: value"\n`);
});

test(
  'doctor: a pull page beyond loopback without authentication and a secret in a file others ' +
    'can read are warnings; a page with basic auth over TLS is not',
  async () => {
    const config = join(dir, 'doctor.ini');
    const port = await freePort();
    writeFileSync(
      config,
      `[daemon]\nplugins = sim\nsinks = prometheus, otlp\nstate_dir = ${join(dir, 'doctor-state')}\n[prometheus]\nhost ` +
        `= 0.0.0.0\nport = ${port}\n[otlp]\nendpoint = http://127.0.0.1:1/v1/metrics\nheaders = ` +
        `authorization=Bearer%20abcdefgh12345\n`,
    );
    chmodSync(config, 0o644);
    const open = await runCli(['doctor', '--config', config, '--json']);
    const sec = (JSON.parse(open.stdout) as { security: { level: string; what: string }[] }).security;
    assert.ok(
      sec.some((f) => f.level === 'warn' && /answers anyone who reaches the port, without authentication or TLS/.test(f.what)),
      JSON.stringify(sec),
    );
    assert.ok(
      sec.some((f) => f.level === 'warn' && f.what === `${config} is readable by every user and holds [otlp] headers`),
      JSON.stringify(sec),
    );
    assert.doesNotMatch(open.stdout, /abcdefgh12345/, 'the secret is not printed');
    const text = await runCli(['doctor', '--config', config]);
    assert.match(text.stdout, /^ {2}WARN {2}the pull page on 0\.0\.0\.0:\d+ answers anyone/m);
    assert.match(text.stdout, /^\d+ warning\(s\): security, above$/m);

    const hash = await htpasswd('scrape-pass');
    const web = join(dir, 'web.yml');
    writeFileSync(
      web,
      `tls_server_config:\n  cert_file: ${pki.server}\n  key_file: ${pki.serverKey}\nbasic_auth_users:\n  prometheus: ${hash}\n`,
    );
    const safe = join(dir, 'doctor-safe.ini');
    writeFileSync(
      safe,
      `[daemon]\nplugins = sim\nsinks = prometheus\nstate_dir = ${join(dir, 'doctor-state')}\n[prometheus]\nhost ` +
        `= 0.0.0.0\nport = ${port}\nweb_config = ${web}\n`,
      { mode: 0o600 },
    );
    const ok = await runCli(['doctor', '--config', safe, '--json']);
    const okSec = (JSON.parse(ok.stdout) as { security: unknown[] }).security;
    assert.deepEqual(okSec, []);
    assert.match(
      (await runCli(['doctor', '--config', safe])).stdout,
      /prometheus +enabled +listening on https:\/\/0\.0\.0\.0:\d+\/metrics \(web_config .*: TLS, basic auth \(1 user\)\)/,
    );
  },
);

function htpasswd(password: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = spawn('htpasswd', ['-nbBC', '10', '', password], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    c.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
    c.on('close', (status) => (status === 0 ? resolve(out.replace(/^:/, '').trim()) : reject(new Error(`htpasswd exited ${status}`))));
  });
}

/** GETs the page over http (or https with the test CA and a password). */
function page(url: string, auth?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const mod = u.protocol === 'https:' ? https : http;
    const req = mod.get(url, { ...(u.protocol === 'https:' ? { ca: readFileSync(pki.ca) } : {}), ...(auth ? { auth } : {}) }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (s: string) => (text += s));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
  });
}

for (const how of ['beyond loopback, no authentication', 'on loopback', 'beyond loopback with basic auth', 'hide, on loopback'] as const) {
  test(
    `personal_labels = ${how.includes('hide') ? 'hide' : 'auto'}, ${how.replace('hide, ', '')}: ` +
      `slurm_user, slurm_account and slurm_job_name are ` +
      `${how === 'beyond loopback, no authentication' || how.includes('hide') ? 'left off' : 'on'} ` +
      `the pull page, the job id always`,
    async () => {
      const slurm = slurmControllerDown(tempDir('l9gpu-tls-privacy-'), 'privnode');
      const port = await freePort();
      const host = how.includes('beyond') ? '0.0.0.0' : '127.0.0.1';
      let extra = how.includes('hide') ? 'personal_labels = hide\n' : '';
      let auth: string | undefined;
      if (how.includes('basic auth')) {
        const web = join(dir, `privacy-web-${port}.yml`);
        writeFileSync(web, `basic_auth_users:\n  prometheus: ${await htpasswd('pw-of-prometheus')}\n`);
        extra += `web_config = ${web}\n`;
        auth = 'prometheus:pw-of-prometheus';
      }
      const config = join(dir, `privacy-${port}.ini`);
      writeFileSync(
        config,
        `[daemon]\n${slurm.daemon}plugins = sim\nsinks = prometheus\ninterval = 200ms\nhost_name = ` +
          `privnode\n[sim]\ngpus = 1\n[prometheus]\nhost = ${host}\nport = ${port}\n${extra}${slurm.slurm}`,
      );
      const db = openStore(slurm.state);
      recordStart(
        db,
        { jobId: '5151', runKey: 'r0', user: 'alice', uid: 1001, partition: 'gpu', name: 'secret-project', account: 'physics' },
        [{ uuid: simUuid('privnode', 0), shared: false }],
        'prolog',
        Date.now(),
      );
      db.close();
      const d = new DaemonProcess(['--config', config]);
      try {
        const text = await waitFor('the job on the page', async () => {
          const r = await page(`http://127.0.0.1:${port}/metrics`, auth).catch(() => undefined);
          return r?.status === 200 && /gpu_utilization_ratio\{[^}]*slurm_job_id="5151"/.test(r.text) ? r.text : undefined;
        });
        const hidden = how === 'beyond loopback, no authentication' || how.includes('hide');
        for (const label of ['slurm_user="alice"', 'slurm_account="physics"', 'slurm_job_name="secret-project"']) {
          assert.equal(text.includes(label), !hidden, `${label} ${hidden ? 'left off' : 'there'}`);
        }
        assert.match(text, /slurm_partition="gpu"/);
        if (auth) assert.equal((await page(`http://127.0.0.1:${port}/metrics`)).status, 401, 'no page without the password');
      } finally {
        assert.equal(await d.stop(), 0, d.stderr);
      }
    },
  );
}
