/**
 * A kubelet stand-in for tests (no kubelet runs here): the real pod-resources
 * proto served with @grpc/grpc-js on a unix socket (the answers are the
 * recorded ones in src/attribution/kubernetes/testdata/), and the pods
 * endpoints of the API server and of the kubelet over HTTPS with a bearer
 * token, with a certificate made by openssl for 127.0.0.1.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { podResourcesService } from '../../src/attribution/kubernetes/podresources-client.js';
import { ROOT, tempDir } from './paths.js';

export const TESTDATA = join(ROOT, 'src', 'attribution', 'kubernetes', 'testdata');
export const testdata = <T = unknown>(name: string): T => JSON.parse(readFileSync(join(TESTDATA, name), 'utf8')) as T;

export class PodResourcesServer {
  list: unknown = { pod_resources: [] };
  allocatable: unknown = { devices: [], cpu_ids: [], memory: [] };
  calls = { List: 0, GetAllocatableResources: 0 };
  private server: grpc.Server | undefined;

  constructor(readonly socket: string) {}

  async start(): Promise<void> {
    const server = new grpc.Server();
    server.addService(podResourcesService(), {
      List: (_: unknown, cb: grpc.sendUnaryData<unknown>) => {
        this.calls.List++;
        cb(null, this.list);
      },
      GetAllocatableResources: (_: unknown, cb: grpc.sendUnaryData<unknown>) => {
        this.calls.GetAllocatableResources++;
        cb(null, this.allocatable);
      },
      Get: (_: unknown, cb: grpc.sendUnaryData<unknown>) => cb({ code: grpc.status.UNIMPLEMENTED, details: 'not in this stand-in' }),
    });
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(`unix:${this.socket}`, grpc.ServerCredentials.createInsecure(), (e) => (e ? reject(e) : resolve())),
    );
    this.server = server;
  }

  /** As a kubelet going down: the server stops and its socket is gone. */
  async stop(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (s) await new Promise<void>((r) => s.tryShutdown(() => r()));
    rmSync(this.socket, { force: true });
  }
}

export interface PodsRequest {
  path: string;
  authorization: string | undefined;
}

/** The API server's /api/v1/pods and the kubelet's /pods, answering a PodList to the right token only. */
export class PodsServer {
  pods: unknown = { apiVersion: 'v1', kind: 'PodList', items: [] };
  readonly requests: PodsRequest[] = [];
  readonly token = 'test-token-3f9a';
  readonly tokenFile: string;
  readonly caFile: string;
  private server: Server | undefined;
  port = 0;

  constructor() {
    const dir = tempDir('l9gpu-k8s-tls-');
    this.caFile = join(dir, 'cert.pem');
    const key = join(dir, 'key.pem');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-keyout',
        key,
        '-out',
        this.caFile,
        '-days',
        '2',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
      ],
      { stdio: 'pipe' },
    );
    this.tokenFile = join(dir, 'token');
    writeFileSync(this.tokenFile, `${this.token}\n`);
    this.keyPem = readFileSync(key);
  }
  private readonly keyPem: Buffer;

  get url(): string {
    return `https://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    this.server = createServer({ key: this.keyPem, cert: readFileSync(this.caFile) }, (req, res) => {
      this.requests.push({ path: req.url ?? '', authorization: req.headers.authorization });
      if (req.headers.authorization !== `Bearer ${this.token}`) {
        res
          .writeHead(401, { 'content-type': 'application/json' })
          .end('{"kind":"Status","status":"Failure","message":"Unauthorized","code":401}');
        return;
      }
      const u = new URL(req.url ?? '/', 'https://x');
      if (u.pathname === '/pods' || u.pathname === '/api/v1/pods')
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(this.pods));
      else res.writeHead(404).end();
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    const s = this.server;
    if (s) await new Promise<void>((r) => s.close(() => r()));
  }
}
