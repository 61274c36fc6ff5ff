/**
 * The nvml worker thread: the only thread that calls NVML. Sampling uses
 * synchronous calls here, off the daemon's event loop; the XID/ECC event wait
 * runs as a koffi async call (libuv pool) with a bounded timeout, in a loop,
 * so a sample request is never stuck behind it.
 *
 * Failure handling: a library that cannot load, an init that fails
 * (DRIVER_NOT_LOADED after a driver reload), or a lost GPU lead to
 * nvmlShutdown and a re-init with backoff (1 s doubling to 60 s); every
 * sample request meanwhile gets a clear error.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { EVENT_DATA_SIZE, NVML, loadNvml, type Handle, type NvmlBinding } from './binding.js';
import { Sampler } from './sampler.js';
import type { Snapshot, XidEvent } from './snapshot.js';

export interface WorkerOptions {
  library: string;
  processes: boolean;
  events: boolean;
  /** Longest single event wait (ms): bounds shutdown and re-init latency. */
  eventWaitMs: number;
}
export type Request = { type: 'sample'; id: number } | { type: 'stop' };
export type Reply =
  | { type: 'sample'; id: number; ok: true; snapshot: Snapshot }
  | { type: 'sample'; id: number; ok: false; error: string; notes: Snapshot['notes'] }
  | { type: 'event'; event: XidEvent }
  | { type: 'stopped' };

const EVENT_TYPES = { SINGLE_BIT_ECC: 0x1, DOUBLE_BIT_ECC: 0x2, XID: 0x8 } as const;
const BACKOFF_MAX_MS = 60_000;

const opts = workerData as WorkerOptions;
const port = parentPort!;
let nvml: NvmlBinding | undefined;
let sampler: Sampler | undefined;
let initialized = false;
let nextTry = 0;
let backoff = 1000;
let lastError = '';
/** Bumped on every shutdown: an event loop of an older generation stops. */
let generation = 0;
let eventWaitDone: Promise<void> = Promise.resolve();
let missing: string[] = [];

function ensureInit(): void {
  if (initialized) return;
  if (Date.now() < nextTry) throw new Error(`${lastError} (retrying in ${Math.ceil((nextTry - Date.now()) / 1000)} s)`);
  try {
    nvml ??= loadNvml(opts.library);
    const r = nvml.init();
    if (r !== NVML.SUCCESS) throw new Error(`nvmlInit_v2: ${nvml.errorString(r)} (${r})`);
    sampler ??= new Sampler(nvml, opts.processes);
    missing = Object.entries(nvml.variants).filter(([, v]) => v === 'missing').map(([k]) => k);
    try {
      sampler.enumerate();
    } catch (e) {
      nvml.shutdown();
      throw e;
    }
    initialized = true;
    backoff = 1000;
    sampler.note('info', `NVML initialised: driver ${sampler.driverVersion}, ${sampler.gpuCount} GPU(s), library ${nvml.path} (${Object.entries(nvml.variants).filter(([, v]) => v !== 'missing').length} optional entry points)`);
    if (lastError) sampler.note('info', 'NVML is back');
    lastError = '';
    if (opts.events) startEvents();
  } catch (e) {
    lastError = (e as Error).message;
    nextTry = Date.now() + backoff;
    backoff = Math.min(BACKOFF_MAX_MS, backoff * 2);
    throw e;
  }
}

/**
 * Ends this NVML session. The event loop frees its set once its wait returns
 * (within eventWaitMs) and sees the generation changed, and the sampler frees
 * its GPM samples: that must happen before nvmlShutdown, never after it, and
 * never in a later session.
 */
let stopping: Promise<void> = Promise.resolve();
function shutdown(): Promise<void> {
  if (!initialized) return stopping;
  initialized = false;
  generation++;
  const events = eventWaitDone;
  return (stopping = events.then(() => {
    sampler?.release();
    nvml!.shutdown();
  }));
}

let saidNoEvents = false;
function startEvents(): void {
  const n = nvml!.events;
  if (!n) {
    // an NVML without the event calls still samples every GPU: only Xid counting is off
    if (!saidNoEvents) sampler!.note('warn', `this NVML library lacks nvmlEventSetCreate/nvmlDeviceRegisterEvents/nvmlEventSetWait_v2/nvmlEventSetFree: Xid errors will not be counted`);
    saidNoEvents = true;
    return;
  }
  const gen = generation;
  const errorString = (r: number) => nvml!.errorString(r);
  const set: [Handle | null] = [null];
  if (n.eventSetCreate(set) !== NVML.SUCCESS) {
    sampler!.note('warn', 'nvmlEventSetCreate failed: Xid errors will not be counted');
    return;
  }
  let registered = 0;
  for (const { handle, uuid } of sampler!.eventHandles()) {
    let r = n.registerEvents(handle, EVENT_TYPES.XID | EVENT_TYPES.SINGLE_BIT_ECC | EVENT_TYPES.DOUBLE_BIT_ECC, set[0]!);
    // GPUs without ECC refuse the ECC types: Xid alone is what matters most
    if (r === NVML.NOT_SUPPORTED) r = n.registerEvents(handle, EVENT_TYPES.XID, set[0]!);
    if (r === NVML.SUCCESS) registered++;
    else sampler!.note('warn', `${uuid}: nvmlDeviceRegisterEvents: ${errorString(r)} (${r}): Xid errors of this GPU will not be counted`);
  }
  if (registered === 0) {
    n.eventSetFree(set[0]!);
    return;
  }
  const byHandle = sampler!.handles();
  const data = Buffer.alloc(EVENT_DATA_SIZE);
  eventWaitDone = new Promise<void>((done) => {
    const loop = (): void => {
      if (gen !== generation) {
        n.eventSetFree(set[0]!);
        return done();
      }
      n.eventWait.async(set[0]!, data, opts.eventWaitMs, (err: Error | null, r: number) => {
        if (err || gen !== generation) {
          if (gen === generation) sampler!.note('warn', `nvmlEventSetWait_v2: ${err?.message}`);
          n.eventSetFree(set[0]!);
          return done();
        }
        if (r === NVML.SUCCESS) {
          const uuid = byHandle.get(data.readBigUInt64LE(0));
          const gi = data.readUInt32LE(24);
          const ci = data.readUInt32LE(28);
          if (uuid) {
            const event: XidEvent = { uuid, eventType: Number(data.readBigUInt64LE(8)), data: Number(data.readBigUInt64LE(16)), time: Date.now() };
            if (gi !== 0xffffffff) event.gi = gi;
            if (ci !== 0xffffffff) event.ci = ci;
            port.postMessage({ type: 'event', event } satisfies Reply);
          }
          setImmediate(loop);
        } else if (r === NVML.TIMEOUT) {
          setImmediate(loop);
        } else {
          // GPU_IS_LOST and friends: the sampler sees it too and re-initialises
          sampler!.note('warn', `nvmlEventSetWait_v2: ${errorString(r)} (${r})`);
          setTimeout(loop, 1000);
        }
      });
    };
    loop();
  });
}

port.on('message', (m: Request) => void onMessage(m));

async function onMessage(m: Request): Promise<void> {
  if (m.type === 'stop') {
    shutdownAndExit();
    return;
  }
  // a session being ended (its event wait returning) is ended before another starts
  await stopping;
  const time = Date.now();
  try {
    ensureInit();
    const { gpus, anyLost } = sampler!.sample();
    const snapshot: Snapshot = { driverVersion: sampler!.driverVersion, missing, time, gpus, notes: sampler!.takeNotes() };
    if (anyLost) {
      // a lost GPU or a driver reload: start over with a fresh NVML after the backoff
      lastError = 'a GPU was lost';
      void shutdown();
      nextTry = Date.now() + backoff;
      backoff = Math.min(BACKOFF_MAX_MS, backoff * 2);
    }
    port.postMessage({ type: 'sample', id: m.id, ok: true, snapshot } satisfies Reply);
  } catch (e) {
    port.postMessage({ type: 'sample', id: m.id, ok: false, error: (e as Error).message, notes: sampler?.takeNotes() ?? [] } satisfies Reply);
  }
}

function shutdownAndExit(): void {
  // the pending event wait returns within eventWaitMs; the set is freed then, and NVML shut down after it
  void shutdown().then(() => {
    port.postMessage({ type: 'stopped' } satisfies Reply);
    port.close();
  });
}
