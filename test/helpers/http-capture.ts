/** A real HTTP peer on loopback that records requests and answers as told (for OTLP and webhook tests). */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

export interface Captured {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  /** Body after content-encoding is undone. */
  body: Buffer;
}

export class HttpCapture {
  readonly requests: Captured[] = [];
  /** Status to answer with; a function sees the request count. */
  status: number | ((n: number) => number) = 200;
  private server: http.Server | undefined;
  port = 0;

  async start(port = 0): Promise<this> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const raw = Buffer.concat(chunks);
        const body = req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw;
        this.requests.push({ method: req.method!, url: req.url!, headers: req.headers, body });
        const st = typeof this.status === 'function' ? this.status(this.requests.length) : this.status;
        res.writeHead(st, { 'content-type': 'application/json' }).end(st >= 300 ? '{"error":"test says no"}' : '');
      });
    });
    await new Promise<void>((r) => this.server!.listen(port, '127.0.0.1', () => r()));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async stop(): Promise<void> {
    const s = this.server;
    if (!s) return;
    this.server = undefined;
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  }
}
