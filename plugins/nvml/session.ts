/**
 * The daemon's NVML session, on the main thread: every driver call is a
 * koffi async call (binding.ts), so the event loop never waits for the
 * driver, without a worker thread (its own V8 isolate cost the daemon ~10 MB
 * of RSS).
 *
 * At most one sample is in flight: a sample whose calls are stuck in a
 * wedged driver makes the next requests fail at once ("still waiting"), so
 * stuck calls never pile up on libuv's pool (4 threads, shared with file
 * and zlib work). The Xid events are read as part of each sample,
 * without waiting (drainEvents).
 *
 * Failure handling: a library that cannot load or an init that fails
 * (DRIVER_NOT_LOADED after a driver reload) is tried again with backoff
 * (1 s doubling to 60 s); every sample request meanwhile gets a clear
 * error. A lost GPU stays marked lost while the others are sampled every
 * tick; NVML is re-initialised (the way back for a GPU that returns) at
 * 1 s, 2 s, 4 s ... 60 s after the loss, the backoff reset only by a sample
 * without a lost GPU, not by the re-init itself.
 */
import type { Logger } from '../../src/core/log.js';
import { EVENT_DATA, EVENT_TYPE, NO_INSTANCE, NVML, PROCESS_INFO_CC } from './abi.js';
import { loadNvml, type Handle, type NvmlBinding } from './binding.js';
import { Sampler } from './sampler.js';
import type { Snapshot, XidEvent } from './snapshot.js';
import { monoNow } from '../../src/core/clock.js';

const EARLY_R535 = '; an early R535 library: its 32-byte process entries are read as such';

export interface SessionOptions {
  library: string;
  processes: boolean;
  events: boolean;
  /** Seconds between reads of a GPU's state (MIG mode, clocks that follow the performance state, fan). */
  stateInterval: number;
  /** One sample, then close (`l9gpu gpus`, doctor, `daemon --once`): an error does not promise a retry. */
  oneShot?: boolean;
}

/**
 * One binding per library for the process's life, shared by every session
 * (it holds no state of its own): koffi keeps what a load declares (RSS 50
 * to 140 MB over 12,000 loads), and `plugins = auto` probes a library whose
 * driver is not loaded once a minute, for as long as it takes.
 */
const bindings = new Map<string, NvmlBinding>();
function binding(library: string): NvmlBinding {
  let b = bindings.get(library);
  if (!b) bindings.set(library, (b = loadNvml(library)));
  return b;
}
const BACKOFF_MAX_MS = 60_000;
/** Xids read in one sample at most: a flood is read on over the next ticks, never holding a sample up. */
const EVENTS_PER_SAMPLE = 256;

/** The session's event set, with what reading it needs. */
interface EventSet {
  set: Handle;
  data: Buffer;
  byHandle: Map<bigint, string>;
}

/**
 * What to do about an init that failed, in nvidia-smi's words where it has
 * them ("couldn't communicate with the NVIDIA driver"): the error alone
 * ("Driver Not Loaded") leaves an admin to guess.
 */
const INIT_ADVICE: Partial<Record<number, string>> = {
  [NVML.DRIVER_NOT_LOADED]:
    "NVML couldn't communicate with the NVIDIA driver. Make sure that the NVIDIA driver is " +
    'installed and loaded (lsmod | grep nvidia; modprobe nvidia; dmesg | grep -i nvrm)',
  [NVML.NO_PERMISSION]:
    `uid ${process.getuid?.()} may not open the NVIDIA device files: check the permissions of ` +
    `/dev/nvidiactl and /dev/nvidia*, or run the daemon as root`,
  [NVML.LIB_RM_VERSION_MISMATCH]:
    'the NVIDIA kernel module loaded is of another driver version than this NVML library (a ' +
    'driver upgrade without a reboot): reboot, or unload and reload the nvidia kernel modules',
};

export class NvmlSession {
  private nvml: NvmlBinding | undefined;
  private sampler: Sampler | undefined;
  private initialized = false;
  private nextTry = 0;
  private backoff = 1000;
  private lastError = '';
  private events: EventSet | undefined;
  private stopping: Promise<void> = Promise.resolve();
  private missing: string[] = [];
  private saidNoEvents = false;
  /** The sample whose calls are in flight (settles when the driver has answered them all). */
  private inFlight: Promise<unknown> | undefined;
  private inFlightSince = 0;
  private closed = false;
  /** While a GPU is lost: when NVML is re-initialised next, and the wait after that one. */
  private reinitAt = 0;
  private lostBackoff = 1000;
  private reinitialised = false;

  constructor(
    private readonly opts: SessionOptions,
    private readonly log: Logger,
    private readonly onEvent: (e: XidEvent) => void,
  ) {}

  logNotes(notes: Snapshot['notes']): void {
    for (const n of notes) this.log[n.level](n.msg);
  }

  /** One snapshot of every GPU; rejects when the signal aborts first (the calls go on until the driver answers). */
  sample(signal: AbortSignal): Promise<Snapshot> {
    if (this.closed) return Promise.reject(new Error('NVML session closed'));
    if (this.inFlight) {
      // the same words every tick: the pipeline says a failure once, not once a tick
      return Promise.reject(
        new Error(
          `NVML has not answered the previous sample's calls (a call blocked in the driver since ` +
            `${new Date(this.inFlightSince).toISOString()}): ` +
            `no new calls until it does`,
        ),
      );
    }
    this.inFlightSince = Date.now();
    const work = this.sampleNow();
    const clear = (): void => void (this.inFlight = undefined);
    this.inFlight = work.then(clear, clear);
    return new Promise<Snapshot>((resolve, reject) => {
      const onAbort = (): void => reject(new Error('NVML did not answer in time (a call may be blocked in the driver)'));
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      work.then(
        (s) => {
          signal.removeEventListener('abort', onAbort);
          resolve(s);
        },
        (e: Error) => {
          signal.removeEventListener('abort', onAbort);
          reject(e);
        },
      );
    });
  }

  private async sampleNow(): Promise<Snapshot> {
    // a session being ended (its event set and GPM samples freed, nvmlShutdown) is ended before another starts
    await this.stopping;
    const time = Date.now();
    try {
      // a lost GPU comes back only through a fresh NVML: in this tick, so the healthy GPUs miss none
      if (this.initialized && this.reinitAt && monoNow() >= this.reinitAt) {
        this.reinitAt = 0;
        this.reinitialised = true;
        // what the healthy GPUs queued since the last sample is read before the set is freed with the session
        await this.drainEvents(this.sampler!);
        await this.shutdown();
      }
      await this.ensureInit();
      const sampler = this.sampler!;
      const { gpus, anyLost } = await sampler.sample();
      await this.drainEvents(sampler);
      if (!anyLost) {
        this.lostBackoff = 1000;
        if (this.reinitialised) sampler.note('info', 'NVML is back: every GPU answers again');
        this.reinitialised = false;
      } else if (!this.reinitAt) {
        this.reinitAt = monoNow() + this.lostBackoff;
        this.lostBackoff = Math.min(BACKOFF_MAX_MS, this.lostBackoff * 2);
      }
      return { driverVersion: sampler.driverVersion, missing: this.missing, time, gpus, notes: sampler.takeNotes() };
    } catch (e) {
      this.logNotes(this.sampler?.takeNotes() ?? []);
      throw e;
    }
  }

  private async ensureInit(): Promise<void> {
    if (this.initialized) return;
    // the same words every tick (the runner says a failure once, until it changes)
    if (monoNow() < this.nextTry) throw new Error(this.lastError);
    try {
      const nvml = (this.nvml ??= binding(this.opts.library));
      const r = await nvml.init();
      if (r !== NVML.SUCCESS) throw new Error(`nvmlInit_v2: ${nvml.errorString(r)} (${r})${INIT_ADVICE[r] ? `: ${INIT_ADVICE[r]}` : ''}`);
      const sampler = (this.sampler ??= new Sampler(nvml, this.opts.processes, undefined, this.opts.stateInterval * 1000));
      this.missing = Object.entries(nvml.variants)
        .filter(([, v]) => v === 'missing')
        .map(([k]) => k);
      try {
        await sampler.enumerate();
      } catch (e) {
        await nvml.shutdown();
        throw e;
      }
      this.initialized = true;
      this.backoff = 1000;
      sampler.note(
        'info',
        `NVML initialised: driver ${sampler.driverVersion}, ${sampler.gpuCount} GPU(s), library ${nvml.path} ` +
          `(${Object.entries(nvml.variants).filter(([, v]) => v !== 'missing').length} optional entry ` +
          `points${nvml.processInfo.size === PROCESS_INFO_CC.size ? EARLY_R535 : ''})`,
      );
      if (this.lastError) sampler.note('info', 'NVML is back');
      this.lastError = '';
      if (this.opts.events) await this.startEvents();
    } catch (e) {
      // a one-shot has no next try to promise
      this.lastError = this.opts.oneShot
        ? (e as Error).message
        : `${(e as Error).message} (tried again with a backoff, 1 s doubling to ${BACKOFF_MAX_MS / 1000} s)`;
      this.nextTry = monoNow() + this.backoff;
      this.backoff = Math.min(BACKOFF_MAX_MS, this.backoff * 2);
      throw new Error(this.lastError);
    }
  }

  /**
   * Ends this NVML session: the event set and the sampler's GPM samples are
   * freed before nvmlShutdown, never after it, and never in a later session.
   * Only ever called between samples (from a sample's own re-init, or by
   * close() once the sample in flight has settled), so no call of this
   * session is in flight.
   */
  private shutdown(): Promise<void> {
    if (!this.initialized) return this.stopping;
    this.initialized = false;
    const events = this.events;
    this.events = undefined;
    return (this.stopping = (async () => {
      if (events) await this.nvml!.events!.eventSetFree(events.set).catch(() => NVML.SUCCESS);
      await this.sampler?.release();
      await this.nvml!.shutdown();
    })());
  }

  private async startEvents(): Promise<void> {
    const nvml = this.nvml!;
    const sampler = this.sampler!;
    const n = nvml.events;
    if (!n) {
      // an NVML without the event calls still samples every GPU: only Xid counting is off
      if (!this.saidNoEvents)
        sampler.note(
          'warn',
          `this NVML library lacks ` +
            `nvmlEventSetCreate/nvmlDeviceRegisterEvents/nvmlEventSetWait_v2/nvmlEventSetFree: Xid ` +
            `errors will not be counted`,
        );
      this.saidNoEvents = true;
      return;
    }
    const set: [Handle | null] = [null];
    if ((await n.eventSetCreate(set)) !== NVML.SUCCESS) {
      sampler.note('warn', 'nvmlEventSetCreate failed: Xid errors will not be counted');
      return;
    }
    let registered = 0;
    for (const { handle, uuid } of sampler.eventHandles()) {
      // Xid alone: ECC errors are counted from the ECC counters, and ECC events in the set would queue ahead of
      // the Xids (a degrading HBM stack raises corrected errors by the thousand) past what one sample reads
      const r = await n.registerEvents(handle, EVENT_TYPE.XidCriticalError, set[0]!);
      if (r === NVML.SUCCESS) registered++;
      else
        sampler.note(
          'warn',
          `${uuid}: nvmlDeviceRegisterEvents: ${nvml.errorString(r)} (${r}): Xid errors of this GPU will not be counted`,
        );
    }
    if (registered === 0) {
      await n.eventSetFree(set[0]!);
      return;
    }
    this.events = { set: set[0]!, data: Buffer.alloc(EVENT_DATA.size), byHandle: sampler.handles() };
  }

  /**
   * Reads the events the driver queued in the set since the last sample,
   * without waiting (a timeout of 0, as DCGM's event thread does: the set
   * keeps its events until they are read). An event is therefore counted by
   * the first sample that ends after it, one tick late at most (up to
   * EVENTS_PER_SAMPLE Xids a sample: the set holds Xids alone). A loop of 1 s waits
   * beside the samples cost ten pool-thread calls and event-loop turns a 10 s
   * tick (~2 ms of CPU, docs/performance.md), and a stop or re-init had to
   * wait for the wait to return.
   */
  private async drainEvents(sampler: Sampler): Promise<void> {
    const ev = this.events;
    const n = this.nvml!.events;
    if (!ev || !n) return;
    for (let i = 0; i < EVENTS_PER_SAMPLE; i++) {
      let r: number;
      try {
        r = await n.eventWait(ev.set, ev.data, 0);
      } catch (e) {
        sampler.note('warn', `nvmlEventSetWait_v2: ${(e as Error).message}`);
        return;
      }
      if (r === NVML.TIMEOUT) return;
      if (r !== NVML.SUCCESS) {
        // GPU_IS_LOST and friends: the sampler sees it too and re-initialises
        sampler.note('warn', `nvmlEventSetWait_v2: ${this.nvml!.errorString(r)} (${r})`);
        return;
      }
      const d = ev.data;
      const uuid = ev.byHandle.get(d.readBigUInt64LE(EVENT_DATA.at.device));
      if (!uuid) continue;
      const event: XidEvent = {
        uuid,
        eventType: Number(d.readBigUInt64LE(EVENT_DATA.at.eventType)),
        data: Number(d.readBigUInt64LE(EVENT_DATA.at.eventData)),
        time: Date.now(),
      };
      const gi = d.readUInt32LE(EVENT_DATA.at.gpuInstanceId);
      const ci = d.readUInt32LE(EVENT_DATA.at.computeInstanceId);
      if (gi !== NO_INSTANCE) event.gi = gi;
      if (ci !== NO_INSTANCE) event.ci = ci;
      this.onEvent(event);
    }
  }

  /** Ends the session: waits for the sample in flight, then shuts NVML down; gives up after timeoutMs (a call stuck in the driver). */
  async close(timeoutMs = 3000): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    let t: NodeJS.Timeout | undefined;
    const ended = (async () => {
      await this.inFlight;
      // the Xids queued since the last sample are logged before the set is freed (a reload starts a new one)
      if (this.initialized && this.sampler) await this.drainEvents(this.sampler);
      await this.shutdown();
    })();
    await Promise.race([ended, new Promise<void>((r) => (t = setTimeout(r, timeoutMs)))]);
    clearTimeout(t);
  }
}
