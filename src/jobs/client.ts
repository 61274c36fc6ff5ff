/** Asking the node's daemon (src/jobs/server.ts) what a user may not read from the store directly. */
import { connect } from 'node:net';
import type { JobsAnswer, JobsRequest } from './api.js';

export function askJobsDaemon(path: string, req: JobsRequest, timeoutMs = 15_000): Promise<JobsAnswer> {
  return new Promise((resolve, reject) => {
    const sock = connect(path);
    let buf = '';
    const fail = (why: string) => {
      sock.destroy();
      reject(new Error(why));
    };
    sock.setTimeout(timeoutMs, () => fail(`the l9gpu daemon did not answer on ${path} within ${timeoutMs / 1000} s`));
    sock.on('connect', () => sock.write(JSON.stringify(req) + '\n'));
    sock.setEncoding('utf8').on('data', (d: string) => (buf += d));
    sock.on('error', (e: NodeJS.ErrnoException) =>
      fail(
        e.code === 'ENOENT' || e.code === 'ECONNREFUSED'
          ? `the l9gpu daemon is not answering on ${path} (is it running on this node?)`
          : `${path}: ${e.message}`,
      ),
    );
    sock.on('end', () => {
      try {
        resolve(JSON.parse(buf) as JobsAnswer);
      } catch {
        fail(`${path}: not an l9gpu answer: ${buf.slice(0, 80)}`);
      }
    });
  });
}
