/**
 * A client of the kubelet pod-resources API v1 (gRPC over the kubelet's unix
 * socket), loading the proto Kubernetes ships (podresources/api.proto). The
 * kubelet allows 100 calls/s with a burst of 10 on this socket: a token bucket
 * keeps every caller of this client within that. A kubelet restart removes and
 * recreates the socket: a failed call drops the channel, and the next call
 * dials afresh instead of waiting out gRPC's reconnect backoff. An answer over
 * the receive bound (16 MiB, as the kubelet's own client) raises the bound to
 * fit it, up to MAX_RECEIVE_BYTES, and the call is made again: a node with a
 * big List answer is read, not refused at every refresh for ever.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { Logger } from '../../core/log.js';

export interface ContainerDevices {
  resource_name: string;
  device_ids: string[];
}
export interface ClaimResource {
  cdi_devices: { name: string }[];
  driver_name: string;
  pool_name: string;
  device_name: string;
}
export interface DynamicResource {
  claim_name: string;
  claim_namespace: string;
  claim_resources: ClaimResource[];
}
export interface ContainerResources {
  name: string;
  devices: ContainerDevices[];
  dynamic_resources: DynamicResource[];
}
export interface PodResources {
  name: string;
  namespace: string;
  containers: ContainerResources[];
}

/** proto-loader's options for both ends: the proto's own field names, and empty repeated fields as []. */
export const PROTO_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  arrays: true,
  oneofs: true,
};

/** The checked-in proto, found from the package root wherever this code was bundled to. */
export function podResourcesProto(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json'))) return join(dir, 'src', 'attribution', 'kubernetes', 'podresources', 'api.proto');
    const up = dirname(dir);
    if (up === dir) throw new Error('cannot find the l9gpu package root holding src/attribution/kubernetes/podresources/api.proto');
    dir = up;
  }
}

type Lister = grpc.Client &
  Record<string, (req: object, md: grpc.Metadata, opts: grpc.CallOptions, cb: (e: grpc.ServiceError | null, r: unknown) => void) => void>;
let listerCtor: (new (target: string, creds: grpc.ChannelCredentials, opts?: grpc.ChannelOptions) => Lister) | undefined;

/** The PodResourcesLister service definition (for a server: the tests' kubelet stand-in). */
export function podResourcesService(): grpc.ServiceDefinition {
  return (loadPackage().PodResourcesLister as unknown as { service: grpc.ServiceDefinition }).service;
}

function loadPackage(): grpc.GrpcObject {
  return (grpc.loadPackageDefinition(protoLoader.loadSync(podResourcesProto(), PROTO_OPTIONS)) as { v1: grpc.GrpcObject }).v1;
}

/** Token bucket: `rate` calls a second, at most `burst` at once. */
export class RateLimit {
  private tokens: number;
  constructor(
    private readonly rate: number,
    private readonly burst: number,
    private last = Date.now(),
  ) {
    this.tokens = burst;
  }

  /** Ms to wait before a call may go (0: go now; the token is taken). */
  take(now = Date.now()): number {
    this.tokens = Math.min(this.burst, this.tokens + (Math.max(0, now - this.last) / 1000) * this.rate);
    this.last = Math.max(this.last, now);
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    return Math.ceil(((1 - this.tokens) / this.rate) * 1000);
  }
}

/** The kubelet's own client's bound (podresources.DefaultMaxMsgSize): where the receive bound starts. */
export const FIRST_RECEIVE_BYTES = 16 * 1024 * 1024;
/** How far an answer may raise it: the decoded answer costs several times this in memory. */
export const MAX_RECEIVE_BYTES = 256 * 1024 * 1024;
const MIB = 1024 * 1024;

export class PodResourcesClient {
  private client: Lister | undefined;
  private readonly limit = new RateLimit(100, 10);
  /** The receive bound in force: raised when an answer was larger. */
  receiveBytes = FIRST_RECEIVE_BYTES;

  constructor(
    readonly socket: string,
    private readonly timeoutMs: number,
    private readonly log?: Logger,
  ) {}

  async list(): Promise<PodResources[]> {
    const r = (await this.call('List')) as { pod_resources: PodResources[] };
    return r.pod_resources;
  }

  async allocatable(): Promise<ContainerDevices[]> {
    const r = (await this.call('GetAllocatableResources')) as { devices: ContainerDevices[] };
    return r.devices;
  }

  close(): void {
    this.client?.close();
    this.client = undefined;
  }

  private async call(method: 'List' | 'GetAllocatableResources', again = true): Promise<unknown> {
    for (let wait = this.limit.take(); wait > 0; wait = this.limit.take()) await new Promise((r) => setTimeout(r, wait));
    if (!existsSync(this.socket)) {
      this.close();
      throw new Error(
        `${this.socket} does not exist (is the kubelet running, and is /var/lib/kubelet/pod-resources mounted into this container?)`,
      );
    }
    listerCtor ??= loadPackage().PodResourcesLister as unknown as typeof listerCtor;
    this.client ??= new listerCtor!(`unix:${this.socket}`, grpc.credentials.createInsecure(), {
      'grpc.max_receive_message_length': this.receiveBytes,
      'grpc.initial_reconnect_backoff_ms': 500,
      'grpc.max_reconnect_backoff_ms': 5000,
    });
    const client = this.client;
    return new Promise((resolve, reject) => {
      client[method]!({}, new grpc.Metadata(), { deadline: Date.now() + this.timeoutMs }, (e, r) => {
        if (!e) return resolve(r);
        // a restarted kubelet is a new socket: dial it afresh next time
        this.close();
        const size = e.code === grpc.status.RESOURCE_EXHAUSTED ? /larger than max \((\d+) vs\.? \d+\)/.exec(e.details ?? '') : null;
        if (size) {
          const bytes = Number(size[1]);
          const before = this.receiveBytes;
          if (bytes > MAX_RECEIVE_BYTES)
            return reject(
              new Error(
                `pod-resources ${method} on ${this.socket}: the answer is ${bytes} bytes, over l9gpu's ` +
                  `bound of ${MAX_RECEIVE_BYTES / MIB} MiB`,
              ),
            );
          // room to grow: the next answers are read without another failed call
          this.receiveBytes = Math.min(MAX_RECEIVE_BYTES, Math.ceil((bytes * 1.25) / MIB) * MIB);
          this.log?.info(`the kubelet's pod-resources ${method} answer is over the receive bound: read again with a larger one`, {
            bytes,
            from_mib: before / MIB,
            to_mib: this.receiveBytes / MIB,
          });
          if (again) return resolve(this.call(method, false));
        }
        const why =
          e.code === grpc.status.UNIMPLEMENTED
            ? `the kubelet does not serve ${method} (pod-resources v1 needs Kubernetes 1.20+, GetAllocatableResources 1.23+)`
            : e.details || e.message;
        reject(new Error(`pod-resources ${method} on ${this.socket}: ${why}`));
      });
    });
  }
}
