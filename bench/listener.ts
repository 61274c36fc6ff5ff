/**
 * What the pull endpoint's TLS and basic auth cost the daemon per scrape:
 * two daemons side by side (8 sim GPUs + host, the same page), one serving
 * plain HTTP, one TLS with basic auth (a bcrypt hash of cost 10, as
 * `htpasswd -nbBC 10` makes), scraped in alternating rounds by
 *
 *   keep-alive: one connection, request after request (Prometheus' client);
 *   fresh:      a connection a scrape, closed after it (a full TLS handshake
 *               every time: a Prometheus whose keep-alive is off, or whose
 *               connection was closed under it), each from another loopback
 *               address so that the per-peer connection rate is not the bound.
 *
 * The cost is the daemon's own CPU time (/proc/<pid>/stat and schedstat, all
 * threads: bench/daemon.ts procStat) over the round, less what it spends
 * idle in as long, divided by the scrapes; gzip is asked, as Prometheus asks
 * it. The page is the same between ticks (60 s interval): the figure is the
 * endpoint's cost per scrape, not the rendering of a tick's batch, which is
 * the same for both.
 *
 * And the first scrape of a credential (the bcrypt comparison, on the worker
 * thread) against a scrape whose answer is cached: its wall time and the
 * daemon's CPU (the worker's included), the median of five users.
 *
 * Run alone: node dist/bench/listener.js [keep-alive scrapes a round] [fresh scrapes a round] [rounds]
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { procStat } from './daemon.js';
import { makePki } from '../test/helpers/certs.js';
import { freePort } from '../test/helpers/net.js';

const CLI = fileURLToPath(new URL('../../bin/run.js', import.meta.url));
const USERS = 5;

export interface ScrapeCost {
  /** Daemon CPU per scrape, ms (median of the rounds). */
  cpuMs: number;
  /** Wall time per scrape at the client, ms (median of the rounds). */
  wallMs: number;
}

export interface ListenerBench {
  scrapes: { keepAlive: number; fresh: number; rounds: number };
  http: { keepAlive: ScrapeCost; fresh: ScrapeCost };
  https: { keepAlive: ScrapeCost; fresh: ScrapeCost };
  /** A credential's first scrape (bcrypt on the running worker) and a cached one; the very first scrape (worker started, page rendered). */
  auth: { first: ScrapeCost; cached: ScrapeCost; veryFirst: ScrapeCost };
  pageBytes: number;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Target {
  readonly child: ChildProcess;
  readonly port: number;
  readonly tls: boolean;
  /** The daemon's CPU a second when nothing asks it anything (its 60 s tick, timers). */
  idleCpuPerS: number;
}

async function startDaemon(dir: string, name: string, web: string | undefined): Promise<Target> {
  const port = await freePort();
  const cfg = join(dir, `${name}.ini`);
  writeFileSync(
    cfg,
    `[daemon]\nplugins = sim, host\nsinks = prometheus\ninterval = 60s\nstate_dir = ${join(dir, `state-${name}`)}\n[sim]\ngpus ` +
      `= 8\n[prometheus]\nhost = 127.0.0.1\nport = ${port}\n${web ? `web_config = ${web}\n` : ''}`,
  );
  const child = spawn(process.execPath, [CLI, 'daemon', '--config', cfg], { stdio: 'ignore' });
  for (let i = 0; ; i++) {
    const up = await new Promise<boolean>((r) => {
      const s = net.connect(port, '127.0.0.1', () => (s.destroy(), r(true)));
      s.on('error', () => r(false));
    });
    if (up) break;
    if (i > 300 || child.exitCode !== null) throw new Error(`the ${name} daemon did not listen on ${port}`);
    await sleep(50);
  }
  return { child, port, tls: !!web, idleCpuPerS: 0 };
}

/** One GET of /metrics: status and bytes of the body. */
function get(t: Target, agent: http.Agent | false, ca: Buffer, auth: string, localAddress?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const o = {
      host: '127.0.0.1',
      port: t.port,
      path: '/metrics',
      agent,
      ...(localAddress ? { localAddress } : {}),
      headers: {
        'accept-encoding': 'gzip',
        ...(agent === false ? { connection: 'close' } : {}),
        ...(t.tls ? { authorization: `Basic ${Buffer.from(auth).toString('base64')}` } : {}),
      },
      ...(t.tls ? { ca, servername: 'localhost' } : {}),
    };
    const req = (t.tls ? https : http).get(o, (res) => {
      let n = 0;
      res.on('data', (d: Buffer) => (n += d.length));
      res.on('end', () => (res.statusCode === 200 ? resolve(n) : reject(new Error(`${t.tls ? 'https' : 'http'}: ${res.statusCode}`))));
    });
    req.on('error', reject);
  });
}

/** The daemon's CPU (ms) and the wall time (ms) of `work`, less the daemon's idle CPU over as long. */
async function measured(t: Target, work: () => Promise<void>): Promise<{ cpuMs: number; wallMs: number }> {
  const pid = t.child.pid!;
  const a = procStat(pid).cpuS;
  const t0 = performance.now();
  await work();
  const wallMs = performance.now() - t0;
  const b = procStat(pid).cpuS;
  return { cpuMs: (b - a) * 1000 - t.idleCpuPerS * wallMs, wallMs };
}

function bcryptHash(password: string): string {
  const r = spawnSync('htpasswd', ['-nbBC', '10', '', password], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`htpasswd: ${r.stderr}`);
  return r.stdout.replace(/^:/, '').trim();
}

export async function benchListener(keepAlive = 500, fresh = 200, rounds = 5): Promise<ListenerBench> {
  const dir = mkdtempSync(join(tmpdir(), 'l9gpu-bench-listener-'));
  const pki = makePki(dir);
  const ca = readFileSync(pki.ca);
  const users = Array.from({ length: USERS }, (_, i) => ({ name: `scraper${i}`, password: `bench-pass-${i}` }));
  const web = join(dir, 'web.yml');
  writeFileSync(
    web,
    `tls_server_config:\n  cert_file: ${pki.server}\n  key_file: ${pki.serverKey}\nbasic_auth_users:\n${users
      .map((u) => `  ` + `${u.name}: ${bcryptHash(u.password)}\n`)
      .join('')}`,
  );
  const plain = await startDaemon(dir, 'http', undefined);
  const secure = await startDaemon(dir, 'https', web);
  const cred = (i: number) => `${users[i]!.name}:${users[i]!.password}`;
  try {
    // start-up done (module loading, the first tick) before anything is measured
    await sleep(3000);
    const auth: Partial<ListenerBench['auth']> = {};
    {
      // the very first scrape: the bcrypt worker started, the page rendered and gzipped
      const a = new https.Agent({ keepAlive: true, maxSockets: 1 });
      auth.veryFirst = await measured(secure, async () => void (await get(secure, a, ca, cred(0))));
      a.destroy();
    }
    for (const t of [plain, secure]) {
      const a = procStat(t.child.pid!).cpuS;
      await sleep(2000);
      t.idleCpuPerS = (procStat(t.child.pid!).cpuS - a) / 2000;
    }
    // a credential's first scrape on a running worker, against scrapes of credentials it has verified
    const firsts: ScrapeCost[] = [];
    const cached: ScrapeCost[] = [];
    for (let i = 1; i < USERS; i++) {
      const a = new https.Agent({ keepAlive: true, maxSockets: 1 });
      await get(secure, a, ca, cred(0));
      firsts.push(await measured(secure, async () => void (await get(secure, a, ca, cred(i)))));
      for (let k = 0; k < 5; k++) cached.push(await measured(secure, async () => void (await get(secure, a, ca, cred(i)))));
      a.destroy();
    }
    auth.first = { cpuMs: median(firsts.map((f) => f.cpuMs)), wallMs: median(firsts.map((f) => f.wallMs)) };
    auth.cached = { cpuMs: median(cached.map((f) => f.cpuMs)), wallMs: median(cached.map((f) => f.wallMs)) };

    const runs = {
      http: { keepAlive: [] as ScrapeCost[], fresh: [] as ScrapeCost[] },
      https: { keepAlive: [] as ScrapeCost[], fresh: [] as ScrapeCost[] },
    };
    let pageBytes = 0;
    let address = 0;
    for (let r = 0; r < rounds; r++) {
      for (const t of [plain, secure]) {
        const agent = new (t.tls ? https : http).Agent({ keepAlive: true, maxSockets: 1 });
        // the connection made (and its handshake) before the round: a keep-alive scraper makes it once
        pageBytes = await get(t, agent, ca, cred(0));
        const k = await measured(t, async () => {
          for (let i = 0; i < keepAlive; i++) await get(t, agent, ca, cred(0));
        });
        agent.destroy();
        runs[t.tls ? 'https' : 'http'].keepAlive.push({ cpuMs: k.cpuMs / keepAlive, wallMs: k.wallMs / keepAlive });
      }
      for (const t of [plain, secure]) {
        const f = await measured(t, async () => {
          // a loopback address a connection (127.0.10.1 ...): 20 new connections a second is a peer's bound
          for (let i = 0; i < fresh; i++)
            await get(t, false, ca, cred(0), `127.0.${10 + Math.floor((address % 2500) / 250)}.${1 + (address++ % 250)}`);
        });
        runs[t.tls ? 'https' : 'http'].fresh.push({ cpuMs: f.cpuMs / fresh, wallMs: f.wallMs / fresh });
      }
    }
    const med = (xs: ScrapeCost[]): ScrapeCost => ({ cpuMs: median(xs.map((x) => x.cpuMs)), wallMs: median(xs.map((x) => x.wallMs)) });
    return {
      scrapes: { keepAlive, fresh, rounds },
      http: { keepAlive: med(runs.http.keepAlive), fresh: med(runs.http.fresh) },
      https: { keepAlive: med(runs.https.keepAlive), fresh: med(runs.https.fresh) },
      auth: auth as ListenerBench['auth'],
      pageBytes,
    };
  } finally {
    for (const t of [plain, secure]) {
      t.child.kill('SIGTERM');
      if (t.child.exitCode === null) await new Promise((r) => t.child.once('exit', r));
    }
  }
}

/** The figures as bench/run.ts prints them: name and value (none has a target yet: each is information). */
export function listenerLines(b: ListenerBench): [string, string][] {
  const ms = (x: number, d = 3) => x.toFixed(d);
  const x = (a: number, b: number) => `${(a / b).toFixed(1)}x`;
  return [
    [
      `listener: daemon CPU per scrape, keep-alive, http / https + basic auth (${(b.pageBytes / 1024).toFixed(1)} KiB gzipped page)`,
      `${ms(b.http.keepAlive.cpuMs)} / ${ms(b.https.keepAlive.cpuMs)} ms, ${x(b.https.keepAlive.cpuMs, b.http.keepAlive.cpuMs)}`,
    ],
    [
      'listener: the same, a connection a scrape (https: a full TLS handshake each)',
      `${ms(b.http.fresh.cpuMs)} / ${ms(b.https.fresh.cpuMs)} ms, ${x(b.https.fresh.cpuMs, b.http.fresh.cpuMs)}`,
    ],
    ['listener: https + basic auth, a connection a scrape / keep-alive, daemon CPU', x(b.https.fresh.cpuMs, b.https.keepAlive.cpuMs)],
    [
      'listener: wall per scrape, keep-alive http / https; a connection a scrape http / https',
      `${ms(b.http.keepAlive.wallMs, 2)} / ${ms(b.https.keepAlive.wallMs, 2)}; ${ms(b.http.fresh.wallMs, 2)} ` +
        `/ ${ms(b.https.fresh.wallMs, 2)} ms`,
    ],
    [
      "listener: a credential's first scrape (bcrypt cost 10 on the worker) / a cached one, wall",
      `${ms(b.auth.first.wallMs, 1)} / ${ms(b.auth.cached.wallMs, 2)} ms, ${x(b.auth.first.wallMs, b.auth.cached.wallMs)}`,
    ],
    [
      'listener: the same, daemon CPU (all threads)',
      `${ms(b.auth.first.cpuMs, 1)} / ${ms(b.auth.cached.cpuMs, 2)} ms, ${x(b.auth.first.cpuMs, b.auth.cached.cpuMs)}`,
    ],
    [
      'listener: the very first scrape (the worker started, the page rendered), wall / daemon CPU',
      `${ms(b.auth.veryFirst.wallMs, 1)} / ${ms(b.auth.veryFirst.cpuMs, 1)} ms`,
    ],
  ];
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const b = await benchListener(Number(process.argv[2] ?? 500), Number(process.argv[3] ?? 200), Number(process.argv[4] ?? 5));
  process.stdout.write(
    `pull endpoint per scrape (node ${process.version}; ${b.scrapes.rounds} rounds of ${b.scrapes.keepAlive} ` +
      `keep-alive and ${b.scrapes.fresh} fresh-connection scrapes, medians)\n`,
  );
  for (const [name, value] of listenerLines(b)) process.stdout.write(`${name.padEnd(92)} ${value}\n`);
}
