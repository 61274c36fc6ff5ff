/**
 * The thread bcrypt runs on: a comparison takes 70 ms at cost 10 and doubles
 * with each step of cost, all of it on one CPU, which on the main thread
 * would stall every scrape and collection behind it (basic-auth.ts).
 */
import { parentPort } from 'node:worker_threads';
import bcrypt from 'bcryptjs';

parentPort!.on('message', (m: { id: number; password: string; hash: string }) => {
  let ok = false;
  try {
    ok = bcrypt.compareSync(m.password, m.hash);
  } catch {
    // a hash bcryptjs cannot read (a minor version it does not know) matches no password
    ok = false;
  }
  parentPort!.postMessage({ id: m.id, ok });
});
