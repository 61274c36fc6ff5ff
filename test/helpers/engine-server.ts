/**
 * A stand-in inference engine for tests that need a real process: serves one
 * recorded /metrics page on 127.0.0.1:<port> until killed.
 * Usage: node engine-server.js <port> <page file>
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';

const [port, page] = process.argv.slice(2);
const text = readFileSync(page!);
http.createServer((_req, res) => res.end(text)).listen(Number(port), '127.0.0.1');
