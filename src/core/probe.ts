/** Cheap, side-effect-free reachability checks for `l9gpu doctor`. */
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import type net from 'node:net';
import { dirname } from 'node:path';
import type tls from 'node:tls';
import { requireBuiltin } from './builtin.js';
import type { ProbeResult } from './plugin.js';
import { hasTls, readTlsMaterial, tlsProblem, type TlsFiles } from './net/tls-files.js';
import { createHttpClient } from './net/http-client.js';

// at their first use (builtin.ts): the plugins' manifests import this module, and the light commands load them all
const loadNet = (): typeof net => requireBuiltin('node:net') as typeof net;
const loadTls = (): typeof tls => requireBuiltin('node:tls') as typeof tls;

/**
 * Whether a client could reach an endpoint: for http://, a TCP connection;
 * for https://, a TLS handshake with the configured files (nothing sent over
 * it), so that a certificate the client cannot verify, a client certificate
 * refused, or no TLS on the port is said with the setting that fixes it
 * (`keys`), not taken for a reachable endpoint. `alpn`: the protocols the
 * handshake offers (a gRPC server refuses one that does not offer h2).
 */
export async function endpointReachable(
  url: string,
  files: TlsFiles | undefined,
  keys: { ca: string; cert: string; endpoint: string },
  timeoutMs = 2000,
  alpn: string[] = ['http/1.1'],
): Promise<ProbeResult> {
  const u = new URL(url);
  if (u.protocol !== 'https:') return tcpReachable(url, timeoutMs);
  let material;
  try {
    material = hasTls(files) ? readTlsMaterial(files) : {};
  } catch (e) {
    return { ok: false, detail: (e as Error).message };
  }
  const port = Number(u.port || 443);
  const host = u.hostname.replace(/^\[|\]$/g, '');
  return new Promise((resolve) => {
    const sock = loadTls().connect({
      host,
      port,
      servername: /^[\d.]+$|:/.test(host) ? undefined : host,
      ...material,
      ALPNProtocols: alpn,
    });
    const done = (r: ProbeResult): void => {
      sock.destroy();
      resolve(r);
    };
    sock.setTimeout(timeoutMs, () => done({ ok: false, detail: `${host}:${port} did not finish a TLS handshake within ${timeoutMs} ms` }));
    sock.once('secureConnect', () => {
      // TLS 1.3: a server that refuses the client's certificate says so after the handshake, with its first record
      sock.once('error', (e: NodeJS.ErrnoException) => {
        const p = tlsProblem(e);
        done(
          p
            ? { ok: false, detail: `${p.reason}: fix ${keys[p.fix]}` }
            : { ok: true, detail: `${host}:${port} accepts TLS (${sock.getProtocol()})` },
        );
      });
      // a Node.js server (a grpc-js one) refuses a client certificate it cannot verify by closing, without an alert
      sock.once('close', () =>
        done({
          ok: false,
          detail: `${host}:${port} closed the connection right after the TLS handshake${
            material.cert ? `: it did not take the ` + `client certificate: fix ${keys.cert}` : ''
          }`,
        }),
      );
      setTimeout(
        () =>
          done({
            ok: true,
            detail:
              `${host}:${port} accepts TLS (${sock.getProtocol()}), its certificate ` +
              `verified${material.cert ? ', the client certificate taken' : ''}`,
          }),
        200,
      ).unref();
    });
    sock.once('error', (e: NodeJS.ErrnoException) => {
      const p = tlsProblem(e);
      done({ ok: false, detail: p ? `${p.reason}: fix ${keys[p.fix]}` : `${host}:${port}: ${e.code ?? e.message}` });
    });
  });
}

/** Opens and closes a TCP connection: tells "listening" from "refused" without sending data. */
export function tcpReachable(url: string, timeoutMs = 2000): Promise<ProbeResult> {
  const u = new URL(url);
  const port = Number(u.port || (u.protocol === 'https:' ? 443 : 80));
  const host = u.hostname.replace(/^\[|\]$/g, '');
  return new Promise((resolve) => {
    const sock = loadNet().connect({ host, port });
    const done = (r: ProbeResult): void => {
      sock.destroy();
      resolve(r);
    };
    sock.setTimeout(timeoutMs, () => done({ ok: false, detail: `${host}:${port} did not answer within ${timeoutMs} ms` }));
    sock.once('connect', () => done({ ok: true, detail: `${host}:${port} accepts connections` }));
    sock.once('error', (e: NodeJS.ErrnoException) => done({ ok: false, detail: `${host}:${port}: ${e.code ?? e.message}` }));
  });
}

/** The Server header of an HTTP(S) answer at host:port/path (a HEAD request, 1 s; over TLS the certificate is not checked: only who answers
 * is asked), or undefined. */
export async function serverHeader(host: string, port: number, path: string, tls = false, timeoutMs = 1000): Promise<string | undefined> {
  const origin = `${tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const client = createHttpClient({ url: `${origin}${path}`, timeoutMs, maxResponseBytes: 4096, insecureSkipVerify: true });
  try {
    const r = await client.request({ method: 'HEAD' });
    return typeof r.headers.server === 'string' ? r.headers.server : undefined;
  } catch {
    return undefined;
  } finally {
    client.close();
  }
}

/** Whether a listener could bind host:port right now. */
export function portFree(host: string, port: number): Promise<ProbeResult> {
  return new Promise((resolve) => {
    const srv = loadNet().createServer();
    srv.once('error', (e: NodeJS.ErrnoException) =>
      resolve({
        ok: false,
        detail:
          e.code === 'EADDRINUSE'
            ? `${host}:${port} is in use (is the daemon already running?)`
            : `${host}:${port}: ${e.code ?? e.message}`,
      }),
    );
    srv.listen(port, host, () => srv.close(() => resolve({ ok: true, detail: `${host}:${port} is free` })));
  });
}

/** Whether a folder exists and is writable, or could be created. */
export function dirWritable(dir: string): ProbeResult {
  let d = dir;
  while (!existsSync(d) && dirname(d) !== d) d = dirname(d);
  try {
    if (!statSync(d).isDirectory()) return { ok: false, detail: `${d} is not a folder` };
    accessSync(d, constants.W_OK);
    return { ok: true, detail: d === dir ? `${dir} is writable` : `${dir} does not exist yet; ${d} is writable` };
  } catch {
    return { ok: false, detail: `${d} is not writable by uid ${process.getuid?.()}` };
  }
}
