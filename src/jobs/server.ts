/**
 * The daemon's answer to users' `l9gpu jobs`: a unix socket in the state dir
 * (anyone may connect) whose every question is answered under the access rule
 * for the uid the kernel reports for the connection (SO_PEERCRED). One JSON
 * request line in, one JSON answer line out. A bad request gets an error
 * answer naming what was wrong; nothing a client sends can stop the daemon.
 */
import { chmodSync, lstatSync, unlinkSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import type { Logger } from '../core/log.js';
import { peerCred } from '../core/peer-cred.js';
import type { Db } from '../store/open.js';
import { viewerOfUid } from './access.js';
import { answerJobs, parseJobsRequest, type JobsAnswer } from './api.js';
import type { Prices } from './report-model.js';

export const JOBS_SOCKET = 'jobs.sock';
export const jobsSocketPath = (stateDir: string): string => join(stateDir, JOBS_SOCKET);

const MAX_REQUEST = 64 * 1024;
const IDLE_MS = 5000;

export interface JobsServerOptions {
  stateDir: string;
  db: Db;
  node: () => string;
  prices: () => Prices | null;
  adminGroup: () => string | null;
  log: Logger;
}

export async function startJobsServer(o: JobsServerOptions): Promise<{ close(): void }> {
  const path = jobsSocketPath(o.stateDir);
  // a socket left by a daemon that died goes; anything else there (a file, a planted link) is not ours to remove
  try {
    if (lstatSync(path).isSocket()) unlinkSync(path);
    else throw new Error(`${path} exists and is not a socket: refusing to replace it (remove it by hand)`);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  const server: Server = createServer((sock) => void serve(sock, o));
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
    close: () => {
      server.close();
      try {
        unlinkSync(path);
      } catch {
        /* gone already */
      }
    },
  };
}

async function serve(sock: Socket, o: JobsServerOptions): Promise<void> {
  sock.setTimeout(IDLE_MS, () => sock.destroy());
  sock.on('error', () => {}); // a client that went away
  const reply = (a: JobsAnswer) => sock.end(JSON.stringify(a) + '\n');
  let buf = '';
  let done = false;
  sock.setEncoding('utf8').on('data', (chunk: string) => {
    if (done) return;
    buf += chunk;
    const nl = buf.indexOf('\n');
    if (nl < 0 && buf.length <= MAX_REQUEST) return;
    done = true;
    if (nl < 0) return reply({ ok: false, error: `request longer than ${MAX_REQUEST} bytes`, code: 2 });
    void answer(buf.slice(0, nl));
  });
  const answer = async (line: string) => {
    try {
      const cred = await peerCred(sock);
      const who = await viewerOfUid(cred.uid, o.adminGroup());
      let req;
      try {
        req = parseJobsRequest(line);
      } catch (e) {
        return reply({ ok: false, error: `bad request: ${(e as Error).message}`, code: 2 });
      }
      reply(answerJobs(o.db, o.node(), o.prices(), who, req));
    } catch (e) {
      o.log.warn('jobs socket: could not answer', { error: (e as Error).message });
      reply({ ok: false, error: `the daemon could not answer: ${(e as Error).message}`, code: 1 });
    }
  };
}
