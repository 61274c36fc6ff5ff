/**
 * The daemon's answer to users' `l9gpu jobs`: a unix socket in the state dir
 * (anyone may connect) whose every question is answered under the access rule
 * for the uid the kernel reports for the connection (SO_PEERCRED). One JSON
 * request line in, one JSON answer line out. A bad request gets an error
 * answer naming what was wrong; nothing a client sends can stop the daemon.
 *
 * The daemon is root and every byte sent here is a user's, so everything a
 * client can make it hold is bounded ([limits]): connections per uid and in
 * all (more are refused at once), the time to send a request (trickled bytes
 * do not extend it), the request's bytes, the rows of an answer (longer lists
 * are paged), the NSS lookups behind a uid (cached, see access.ts), and the
 * store's work, which runs on a worker thread (store-worker.ts) so that
 * sampling and /metrics never wait for a user's question, under a heap and a
 * time bound of its own (question-bounds.ts): a question past them is
 * answered why, and costs the daemon one worker started again.
 */
import { chmodSync, lstatSync, unlinkSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { BudgetLedger, DEFAULT_LIMITS, LogRate, type Limits } from '../core/limits.js';
import type { Logger } from '../core/log.js';
import { loadPeerCred, peerCred } from '../core/peer-cred.js';
import { ViewerCache } from './access.js';
import { parseJobsRequest, type JobsAnswer } from './api.js';
import type { Prices } from '../figures/prices.js';
import { StoreAnswers, type StoreAnswersOptions, type StoreQuestion } from './store-answers.js';

export const JOBS_SOCKET = 'jobs.sock';
export const jobsSocketPath = (stateDir: string): string => join(stateDir, JOBS_SOCKET);

export const MAX_REQUEST = 64 * 1024;

export interface JobsServerOptions {
  stateDir: string;
  node: () => string;
  prices: () => Prices | null;
  adminGroup: () => string | null;
  log: Logger;
  /** Read at every connection: a reload's new [limits] apply without a new server. */
  limits?: () => Limits;
  budgets?: BudgetLedger;
  viewers?: ViewerCache;
  /** Test seams: the store worker's heap and a question's time (question-bounds.ts). */
  storeBounds?: Pick<StoreAnswersOptions, 'heapMb' | 'questionMs'>;
}

export interface JobsServerStats {
  connections: number;
  /** Request bytes held now, all connections together. */
  buffered: number;
  /** The most request bytes held at once since the start. */
  bufferedPeak: number;
  refused: number;
  timedOut: number;
}

export interface JobsServer {
  readonly stateDir: string;
  /** New options (a reload's store, node, prices) for the connections from now on; the socket and its counts stay. */
  retarget(o: JobsServerOptions): void;
  close(): void;
  stats(): JobsServerStats;
}

export async function startJobsServer(o: JobsServerOptions): Promise<JobsServer> {
  const path = jobsSocketPath(o.stateDir);
  // a socket left by a daemon that died (or by this daemon before a reload) goes; anything else there (a file, a planted link) is not ours
  // to remove
  try {
    if (lstatSync(path).isSocket()) unlinkSync(path);
    else throw new Error(`${path} exists and is not a socket: refusing to replace it (remove it by hand)`);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  await loadPeerCred();
  const ctx: Served = { ...served(o), perUid: new Map(), stats: { connections: 0, buffered: 0, bufferedPeak: 0, refused: 0, timedOut: 0 } };
  const server: Server = createServer((sock) => void accept(sock, ctx));
  server.on('error', (e) => o.log.warn('jobs socket error', { error: e.message }));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => {
      server.off('error', reject);
      resolve();
    });
  });
  // every user may ask; what they get is decided per answer by their uid
  chmodSync(path, 0o666);
  return {
    stateDir: o.stateDir,
    retarget: (n) => {
      if (n.stateDir !== o.stateDir) throw new Error(`the jobs socket serves ${o.stateDir}, not ${n.stateDir}`);
      // the store may be a new file (one found damaged is moved aside): a new reader for it
      ctx.store.close();
      Object.assign(ctx, served(n));
    },
    // libuv unlinks a listening unix socket's path as it closes it
    close: () => {
      server.close();
      ctx.store.close();
    },
    stats: () => ({ ...ctx.stats }),
  };
}

function served(o: JobsServerOptions) {
  const limits = o.limits ?? (() => DEFAULT_LIMITS);
  // a user may ask past a bound as often as they like: their lines are limited like every user-controlled source's
  const rate = new LogRate(limits().logLinesPerMinute);
  const onBound = (q: StoreQuestion, why: string) => {
    const a = rate.allow(q.who.name);
    if (a.ok)
      o.log.warn('jobs socket: a question past its bound', { user: q.who.name, error: why, ...(a.held ? { held_back: a.held } : {}) });
  };
  return {
    o,
    limits,
    budgets: o.budgets ?? new BudgetLedger(o.log),
    viewers: o.viewers ?? new ViewerCache(),
    store: new StoreAnswers(o.stateDir, { onBound, ...o.storeBounds }),
  };
}

interface Served {
  o: JobsServerOptions;
  limits: () => Limits;
  budgets: BudgetLedger;
  viewers: ViewerCache;
  store: StoreAnswers;
  perUid: Map<number, number>;
  stats: JobsServerStats;
}

const line = (a: JobsAnswer) => JSON.stringify(a) + '\n';

async function accept(sock: Socket, c: Served): Promise<void> {
  sock.on('error', () => {}); // a client that went away
  let uid: number;
  try {
    uid = (await peerCred(sock)).uid;
  } catch (e) {
    c.o.log.warn('jobs socket: no peer credentials', { error: (e as Error).message });
    sock.destroy();
    return;
  }
  const lim = c.limits();
  // a refusal asks NSS nothing (a flood would be a flood of lookups): the name if it is known already
  const known = c.viewers.nameOf(uid);
  const user = known ?? String(uid);
  const mine = c.perUid.get(uid) ?? 0;
  const refuse = (budget: 'jobs_connections_per_user' | 'jobs_connections', error: string) => {
    c.stats.refused++;
    c.budgets.hit(budget, user, `jobs socket: ${error}`);
    // an answer this short fits the socket's buffer: written, it can go at once (and goes at the deadline whatever happens)
    const t = setTimeout(() => sock.destroy(), lim.jobsRequestTimeoutMs);
    sock.once('close', () => clearTimeout(t));
    sock.end(line({ ok: false, error, code: 1 }), () => sock.destroy());
  };
  if (mine >= lim.jobsConnectionsPerUser)
    return refuse(
      'jobs_connections_per_user',
      `too many connections of ${known ?? `uid ${uid}`} open (${mine}): try again when they are answered`,
    );
  if (c.stats.connections >= lim.jobsConnections)
    return refuse('jobs_connections', `too many connections open (${c.stats.connections}): try again shortly`);
  c.perUid.set(uid, mine + 1);
  c.stats.connections++;

  const chunks: Buffer[] = [];
  let held = 0;
  let done = false;
  const release = () => {
    c.stats.buffered -= held;
    held = 0;
    chunks.length = 0;
  };
  let writeTimer: NodeJS.Timeout | undefined;
  sock.on('close', () => {
    release();
    clearTimeout(deadline);
    clearTimeout(writeTimer);
    const n = c.perUid.get(uid)! - 1;
    if (n > 0) c.perUid.set(uid, n);
    else c.perUid.delete(uid);
    c.stats.connections--;
  });
  const reply = (a: JobsAnswer) => {
    if (sock.destroyed) return;
    // a client that does not read its answer holds it no longer than it had to ask
    writeTimer = setTimeout(() => sock.destroy(), lim.jobsRequestTimeoutMs);
    sock.end(line(a), () => sock.destroy());
  };
  // the whole request within the bound from the connection on: a byte now and then does not keep it open
  const deadline = setTimeout(() => {
    if (done) return;
    done = true;
    release();
    c.stats.timedOut++;
    c.budgets.hit('jobs_request_timeout', user, `jobs socket: no whole request within ${lim.jobsRequestTimeoutMs / 1000} s`);
    sock.pause();
    reply({ ok: false, error: `no whole request line within ${lim.jobsRequestTimeoutMs / 1000} s`, code: 2 });
  }, lim.jobsRequestTimeoutMs);
  sock.on('data', (chunk: Buffer) => {
    if (done) return;
    const nl = chunk.indexOf(0x0a);
    const part = nl < 0 ? chunk : chunk.subarray(0, nl);
    if (held + part.length > MAX_REQUEST) {
      done = true;
      release();
      sock.pause();
      return reply({ ok: false, error: `request longer than ${MAX_REQUEST} bytes`, code: 2 });
    }
    // a copy: a trickled byte must not keep the whole read buffer it came in alive
    chunks.push(Buffer.from(part));
    held += part.length;
    c.stats.buffered += part.length;
    c.stats.bufferedPeak = Math.max(c.stats.bufferedPeak, c.stats.buffered);
    if (nl < 0) return;
    done = true;
    clearTimeout(deadline);
    sock.pause();
    const text = Buffer.concat(chunks, held).toString('utf8');
    release();
    void answer(text, uid, lim, c).then(reply);
  });
}

async function answer(text: string, uid: number, lim: Limits, c: Served): Promise<JobsAnswer> {
  try {
    let req;
    try {
      req = parseJobsRequest(text);
    } catch (e) {
      return { ok: false, error: `bad request: ${(e as Error).message}`, code: 2 };
    }
    const who = await c.viewers.viewer(uid, c.o.adminGroup());
    return await c.store.ask({ node: c.o.node(), prices: c.o.prices(), who, req, maxRows: lim.jobsRows });
  } catch (e) {
    c.o.log.warn('jobs socket: could not answer', { error: (e as Error).message });
    return { ok: false, error: `the daemon could not answer: ${(e as Error).message}`, code: 1 };
  }
}
