/**
 * libnvidia-ml bound with koffi. Every call that reaches the driver is a
 * koffi async call: it runs on a libuv pool thread and resolves on the event
 * loop, so a call that blocks in a wedged driver never stalls the daemon
 * (session.ts keeps at most one sample's calls in flight). Two calls that
 * never reach the driver are made directly, since a hop to a pool thread and
 * back costs ~20 µs of CPU: nvmlErrorString (a table lookup) and
 * nvmlGpmMetricsGet, which computes metrics from two samples already in host
 * memory ("Calculate GPM metrics from two samples", NVML API reference).
 *
 * Optional entry points are detected at load: koffi throws at lib.func() for
 * a missing symbol, and each optional call has an older fallback name.
 */
import { createRequire } from 'node:module';
import { NVML, PROCESS_INFO, PROCESS_INFO_CC, STRUCT_VERSION, type ProcessInfoLayout } from './abi.js';

type Koffi = typeof import('koffi').default;
/** koffi (a native addon, ~3 MB) is loaded with the library, not when the plugin's module is: a daemon or a CLI without NVIDIA GPUs never
 * loads it. */
let koffiModule: Koffi | undefined;
const koffiLoaded = (): Koffi => (koffiModule ??= createRequire(import.meta.url)('koffi') as Koffi);

export type Handle = bigint;
type Out<T> = [T];
type Fn = (...args: unknown[]) => number;
type KoffiFn = Fn & { async: (...args: unknown[]) => void };
/** A driver call: its nvmlReturn_t once the pool thread is done. */
type Call = (...args: unknown[]) => Promise<number>;

/** A NUL-terminated string the driver wrote into a buffer (UUIDs, names, the driver version). */
export function cString(b: Buffer): string {
  const z = b.indexOf(0);
  return b.toString('utf8', 0, z < 0 ? b.length : z);
}

export interface PciInfo {
  busId: string;
  domain: number;
  bus: number;
  device: number;
}
export interface MemoryV2 {
  version: number;
  total: number;
  reserved: number;
  free: number;
  used: number;
}

/** A symbol the binding looked up: required ones fail the load when missing, optional ones have a fallback or lose a feature. */
export interface BoundSymbol {
  name: string;
  required: boolean;
  found: boolean;
}

export interface NvmlBinding {
  readonly path: string;
  /** Which optional entry points the library has (for doctor and the README). */
  readonly variants: Record<string, string>;
  /** Every symbol looked up, in order. */
  readonly symbols: readonly BoundSymbol[];
  /**
   * The entries nvmlDeviceGetComputeRunningProcesses_v3 writes: PROCESS_INFO (24 bytes), or PROCESS_INFO_CC
   * (32 bytes) on early R535, which the library shows by having nvmlDeviceGetConfComputeMemSizeInfo but not
   * nvmlDeviceGetRunningProcessDetailList.
   */
  readonly processInfo: ProcessInfoLayout;
  init(): Promise<number>;
  shutdown(): Promise<number>;
  errorString(r: number): string;
  driverVersion(out: Buffer): Promise<number>;
  count(out: Out<number>): Promise<number>;
  handleByIndex(i: number, out: Out<Handle | null>): Promise<number>;
  uuid(h: Handle, out: Buffer): Promise<number>;
  name(h: Handle, out: Buffer): Promise<number>;
  pciInfo(h: Handle, out: Partial<PciInfo>): Promise<number>;
  minor(h: Handle, out: Out<number>): Promise<number>;
  /** The board's serial number (NVML_DEVICE_SERIAL_BUFFER_SIZE): NOT_SUPPORTED on a board without an inforom (GeForce). */
  serial(h: Handle, out: Buffer): Promise<number>;
  /** The VBIOS version (NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE). */
  vbiosVersion(h: Handle, out: Buffer): Promise<number>;
  utilization(h: Handle, out: { gpu?: number; memory?: number }): Promise<number>;
  /** v2 when present (reserved memory apart), else v1 (reserved counted as used). */
  memory(h: Handle, out: Partial<MemoryV2>): Promise<number>;
  readonly memoryV2: boolean;
  /** nvmlDeviceGetTemperatureV where the library has it (the old call is deprecated in 13.0), else nvmlDeviceGetTemperature. */
  temperature(h: Handle, sensor: number, out: Out<number>): Promise<number>;
  power(h: Handle, out: Out<number>): Promise<number>;
  powerLimit(h: Handle, out: Out<number>): Promise<number>;
  energy(h: Handle, out: Out<number | bigint>): Promise<number>;
  clock(h: Handle, type: number, out: Out<number>): Promise<number>;
  clockReasons(h: Handle, out: Out<number | bigint>): Promise<number>;
  eccTotal(h: Handle, errType: number, counter: number, out: Out<number | bigint>): Promise<number>;
  remappedRows(h: Handle, c: Out<number>, u: Out<number>, p: Out<number>, f: Out<number>): Promise<number>;
  retiredPages(h: Handle, cause: number, count: Out<number>, addrs: Buffer | null): Promise<number>;
  pcieThroughput(h: Handle, counter: number, out: Out<number>): Promise<number>;
  pcieReplay(h: Handle, out: Out<number>): Promise<number>;
  fanSpeed(h: Handle, out: Out<number>): Promise<number>;
  pstate(h: Handle, out: Out<number>): Promise<number>;
  processes(h: Handle, count: Out<number>, infos: Buffer | null): Promise<number>;
  migMode(h: Handle, cur: Out<number>, pending: Out<number>): Promise<number>;
  maxMigCount(h: Handle, out: Out<number>): Promise<number>;
  migHandle(h: Handle, i: number, out: Out<Handle | null>): Promise<number>;
  gpuInstanceId(h: Handle, out: Out<number>): Promise<number>;
  computeInstanceId(h: Handle, out: Out<number>): Promise<number>;
  fieldValues(h: Handle, n: number, values: Buffer): Promise<number>;
  /** The driver's buffer of recent samples newer than lastSeen (µs); NOT_FOUND when there is none. */
  samples(h: Handle, type: number, lastSeenUs: bigint, valueType: Out<number>, count: Out<number>, out: Buffer | null): Promise<number>;
  /** The event entry points, or undefined when the library lacks one of them (no Xid counts then, said once). */
  readonly events: NvmlEvents | undefined;
  /** The GPM entry points, or undefined when the library lacks one of them (a sample it allocates must be freed by another). */
  readonly gpm: NvmlGpm | undefined;
}

export interface NvmlGpm {
  /** Fills an nvmlGpmSupport_t (GPM_SUPPORT) whose version is set. */
  querySupport(h: Handle, support: Buffer): Promise<number>;
  sampleAlloc(out: Out<Handle | null>): Promise<number>;
  sampleFree(sample: Handle): Promise<number>;
  sampleGet(h: Handle, sample: Handle): Promise<number>;
  /** A sample of one GPU instance of a MIG-enabled GPU (h is the parent). */
  migSampleGet(h: Handle, gpuInstanceId: number, sample: Handle): Promise<number>;
  /** Computes the metrics an nvmlGpmMetricsGet_t in this buffer asks for, between its two samples: a direct call (no driver). */
  metricsGet(request: Buffer): number;
}

export interface NvmlEvents {
  eventSetCreate(out: Out<Handle | null>): Promise<number>;
  registerEvents(h: Handle, types: number | bigint, set: Handle): Promise<number>;
  /** Waits up to its timeout (ms) for an event in the set; the session reads with 0 (never waits). */
  eventWait(set: Handle, data: Buffer, timeoutMs: number): Promise<number>;
  eventSetFree(set: Handle): Promise<number>;
}

let typesDeclared = false;
/** The structs koffi marshals itself, by their nvml.h names (test/system/nvml-real.test.ts checks their layout against the header). */
export const KOFFI_STRUCTS = ['nvmlPciInfo_t', 'nvmlUtilization_t', 'nvmlMemory_t', 'nvmlMemory_v2_t', 'nvmlTemperature_t'] as const;
function declareTypes(koffi: Koffi): void {
  if (typesDeclared) return;
  typesDeclared = true;
  koffi.pointer('nvmlDevice_t', koffi.opaque());
  koffi.pointer('nvmlEventSet_t', koffi.opaque());
  koffi.pointer('nvmlGpmSample_t', koffi.opaque());
  koffi.struct('nvmlPciInfo_t', {
    busIdLegacy: koffi.array('char', 16, 'String'),
    domain: 'uint',
    bus: 'uint',
    device: 'uint',
    pciDeviceId: 'uint',
    pciSubSystemId: 'uint',
    busId: koffi.array('char', 32, 'String'),
  });
  koffi.struct('nvmlUtilization_t', { gpu: 'uint', memory: 'uint' });
  koffi.struct('nvmlMemory_t', { total: 'uint64', free: 'uint64', used: 'uint64' });
  koffi.struct('nvmlMemory_v2_t', { version: 'uint', total: 'uint64', reserved: 'uint64', free: 'uint64', used: 'uint64' });
  koffi.struct('nvmlTemperature_t', { version: 'uint', sensorType: 'int', temperature: 'int' });
}

type Fn2 = (a: unknown, b: unknown) => Promise<number>;
type Fn3 = (a: unknown, b: unknown, c: unknown) => Promise<number>;

/** The call on a libuv pool thread: the event loop goes on while the driver answers. */
function asyncCall(f: KoffiFn): Call {
  return (...args: unknown[]) =>
    new Promise<number>((resolve, reject) => {
      f.async(...args, (err: Error | null, r: number) => (err ? reject(err) : resolve(r)));
    });
}

/** Loads the library; throws with the path in the message (koffi's own error does not name it). */
export function loadNvml(path: string): NvmlBinding {
  const koffi = koffiLoaded();
  declareTypes(koffi);
  let lib: ReturnType<Koffi['load']>;
  try {
    lib = koffi.load(path);
  } catch (e) {
    throw new Error(`cannot load NVML library ${path}: ${(e as Error).message} ([nvml] library or L9GPU_NVML_LIBRARY)`);
  }
  const variants: Record<string, string> = {};
  const symbols: BoundSymbol[] = [];
  /** The symbol's function, or undefined when the library lacks it (koffi throws at lib.func()); recorded either way. */
  const bind = (sig: string, required: boolean): KoffiFn | undefined => {
    const name = /(nvml\w+)\(/.exec(sig)![1]!;
    let f: KoffiFn | undefined;
    try {
      f = lib.func(sig) as KoffiFn;
    } catch (e) {
      if (required)
        throw new Error(
          `NVML library ${path} lacks ${name}, which l9gpu needs (${(e as Error).message}): not an NVML library, or one too old`,
        );
    }
    symbols.push({ name, required, found: f !== undefined });
    return f;
  };
  const maybeSync = (sig: string): KoffiFn | undefined => bind(sig, false);
  const maybe = (sig: string): Call | undefined => {
    const f = maybeSync(sig);
    return f && asyncCall(f);
  };
  const req = (sig: string): Call => asyncCall(bind(sig, true)!);
  /** The first signature whose symbol exists (newer names first), else a call that answers FUNCTION_NOT_FOUND. Every one is looked up (and
   * recorded). */
  const pick = (what: string, ...sigs: string[]): Call => {
    const found = sigs.map((sig) => [sig, maybe(sig)] as const).find(([, f]) => f);
    if (found) {
      variants[what] = /\s(nvml\w+)\(/.exec(found[0])![1]!;
      return found[1]!;
    }
    variants[what] = 'missing';
    return () => Promise.resolve(NVML.FUNCTION_NOT_FOUND);
  };

  const memV2 = pick('memory', 'int nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t, _Inout_ nvmlMemory_v2_t *)');
  const memV1 = req('int nvmlDeviceGetMemoryInfo(nvmlDevice_t, _Out_ nvmlMemory_t *)');
  const hasV2 = variants.memory !== 'missing';
  if (!hasV2) variants.memory = 'nvmlDeviceGetMemoryInfo';
  const errorString = bind('const char *nvmlErrorString(int)', true) as unknown as (r: number) => string | null;
  const tempV = maybe('int nvmlDeviceGetTemperatureV(nvmlDevice_t, _Inout_ nvmlTemperature_t *)');
  const tempOld = maybe('int nvmlDeviceGetTemperature(nvmlDevice_t, int, _Out_ uint *)');
  variants.temperature = tempV ? 'nvmlDeviceGetTemperatureV' : tempOld ? 'nvmlDeviceGetTemperature' : 'missing';
  const ev = {
    eventSetCreate: maybe('int nvmlEventSetCreate(_Out_ nvmlEventSet_t *)'),
    registerEvents: maybe('int nvmlDeviceRegisterEvents(nvmlDevice_t, uint64, nvmlEventSet_t)'),
    eventWait: maybe('int nvmlEventSetWait_v2(nvmlEventSet_t, void *, uint)'),
    eventSetFree: maybe('int nvmlEventSetFree(nvmlEventSet_t)'),
  };
  const missingEvents = Object.entries(ev)
    .filter(([, f]) => !f)
    .map(([k]) => k);
  variants.events = missingEvents.length ? 'missing' : 'nvmlEventSetWait_v2';
  const gpm = {
    querySupport: maybe('int nvmlGpmQueryDeviceSupport(nvmlDevice_t, _Inout_ void *)'),
    sampleAlloc: maybe('int nvmlGpmSampleAlloc(_Out_ nvmlGpmSample_t *)'),
    sampleFree: maybe('int nvmlGpmSampleFree(nvmlGpmSample_t)'),
    sampleGet: maybe('int nvmlGpmSampleGet(nvmlDevice_t, nvmlGpmSample_t)'),
    migSampleGet: maybe('int nvmlGpmMigSampleGet(nvmlDevice_t, uint, nvmlGpmSample_t)'),
    metricsGet: maybeSync('int nvmlGpmMetricsGet(_Inout_ void *)'),
  };
  const hasGpm = Object.values(gpm).every((f) => f);
  variants.gpm = hasGpm ? 'nvmlGpmMetricsGet' : 'missing';
  const processes = pick(
    'processes',
    'int nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t, _Inout_ uint *, void *)',
    'int nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t, _Inout_ uint *, void *)',
  );
  // Early R535 (535.54.03, 535.98) wrote 32-byte entries (usedGpuCcProtectedMemory appended) from _v3; 535.104.05
  // went back to 24 and added nvmlDeviceGetRunningProcessDetailList for the longer ones. The library tells which it
  // is as nvitop tells it (nvitop/api/libnvml.py, __determine_get_running_processes_version_suffix, nvitop PR 94;
  // pynvml PR 48 for the 32-byte struct): nvmlDeviceGetConfComputeMemSizeInfo (new in R535) without
  // nvmlDeviceGetRunningProcessDetailList. Neither is called: looked up only.
  const confCompute = maybeSync('int nvmlDeviceGetConfComputeMemSizeInfo(nvmlDevice_t, _Out_ void *)');
  const detailList = maybeSync('int nvmlDeviceGetRunningProcessDetailList(nvmlDevice_t, _Inout_ void *)');
  const earlyR535 =
    variants.processes === 'nvmlDeviceGetComputeRunningProcesses_v3' && confCompute !== undefined && detailList === undefined;

  return {
    path,
    variants,
    symbols,
    processInfo: earlyR535 ? PROCESS_INFO_CC : PROCESS_INFO,
    memoryV2: hasV2,
    init: req('int nvmlInit_v2()') as () => Promise<number>,
    shutdown: req('int nvmlShutdown()') as () => Promise<number>,
    errorString: (r) => errorString(r) ?? `error ${r}`,
    driverVersion: (
      (f: Fn2) => (out: Buffer) =>
        f(out, out.length)
    )(req('int nvmlSystemGetDriverVersion(_Out_ char *, uint)')),
    count: req('int nvmlDeviceGetCount_v2(_Out_ uint *)'),
    handleByIndex: req('int nvmlDeviceGetHandleByIndex_v2(uint, _Out_ nvmlDevice_t *)'),
    uuid: (
      (f: Fn3) => (h: Handle, out: Buffer) =>
        f(h, out, out.length)
    )(req('int nvmlDeviceGetUUID(nvmlDevice_t, _Out_ char *, uint)')),
    name: (
      (f: Fn3) => (h: Handle, out: Buffer) =>
        f(h, out, out.length)
    )(req('int nvmlDeviceGetName(nvmlDevice_t, _Out_ char *, uint)')),
    pciInfo: req('int nvmlDeviceGetPciInfo_v3(nvmlDevice_t, _Out_ nvmlPciInfo_t *)'),
    minor: req('int nvmlDeviceGetMinorNumber(nvmlDevice_t, _Out_ uint *)'),
    // optional: a library without them still samples every GPU (gpu.info lacks the two facts); every NVIDIA library
    // Debian ships has both (test/fixtures/fake-nvml/symbols)
    serial: (
      (f: Fn3) => (h: Handle, out: Buffer) =>
        f(h, out, out.length)
    )(pick('serial', 'int nvmlDeviceGetSerial(nvmlDevice_t, _Out_ char *, uint)')),
    vbiosVersion: (
      (f: Fn3) => (h: Handle, out: Buffer) =>
        f(h, out, out.length)
    )(pick('vbios', 'int nvmlDeviceGetVbiosVersion(nvmlDevice_t, _Out_ char *, uint)')),
    utilization: req('int nvmlDeviceGetUtilizationRates(nvmlDevice_t, _Out_ nvmlUtilization_t *)'),
    memory: hasV2
      ? (h, out) => {
          out.version = STRUCT_VERSION.nvmlMemory_v2;
          return (memV2 as Fn2)(h, out);
        }
      : (h, out) => (memV1 as Fn2)(h, out),
    temperature: tempV
      ? async (h, sensor, out) => {
          const t = { version: STRUCT_VERSION.nvmlTemperature_v1, sensorType: sensor, temperature: 0 };
          const r = await (tempV as Fn2)(h, t);
          out[0] = t.temperature;
          return r;
        }
      : tempOld
        ? (h, sensor, out) => (tempOld as Fn3)(h, sensor, out)
        : () => Promise.resolve(NVML.FUNCTION_NOT_FOUND),
    power: req('int nvmlDeviceGetPowerUsage(nvmlDevice_t, _Out_ uint *)'),
    powerLimit: req('int nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t, _Out_ uint *)'),
    energy: pick('energy', 'int nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t, _Out_ uint64 *)'),
    clock: req('int nvmlDeviceGetClockInfo(nvmlDevice_t, int, _Out_ uint *)'),
    clockReasons: pick(
      'clockReasons',
      'int nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t, _Out_ uint64 *)',
      'int nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t, _Out_ uint64 *)',
    ),
    eccTotal: req('int nvmlDeviceGetTotalEccErrors(nvmlDevice_t, int, int, _Out_ uint64 *)'),
    remappedRows: pick(
      'remappedRows',
      'int nvmlDeviceGetRemappedRows(nvmlDevice_t, _Out_ uint *, _Out_ uint *, _Out_ uint *, _Out_ uint *)',
    ),
    retiredPages: pick('retiredPages', 'int nvmlDeviceGetRetiredPages(nvmlDevice_t, int, _Inout_ uint *, void *)'),
    pcieThroughput: pick('pcieThroughput', 'int nvmlDeviceGetPcieThroughput(nvmlDevice_t, int, _Out_ uint *)'),
    pcieReplay: pick('pcieReplay', 'int nvmlDeviceGetPcieReplayCounter(nvmlDevice_t, _Out_ uint *)'),
    fanSpeed: req('int nvmlDeviceGetFanSpeed(nvmlDevice_t, _Out_ uint *)'),
    pstate: req('int nvmlDeviceGetPerformanceState(nvmlDevice_t, _Out_ int *)'),
    processes,
    migMode: pick('mig', 'int nvmlDeviceGetMigMode(nvmlDevice_t, _Out_ uint *, _Out_ uint *)'),
    maxMigCount: pick('maxMigCount', 'int nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t, _Out_ uint *)'),
    migHandle: pick('migHandle', 'int nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t, uint, _Out_ nvmlDevice_t *)'),
    gpuInstanceId: pick('gpuInstanceId', 'int nvmlDeviceGetGpuInstanceId(nvmlDevice_t, _Out_ uint *)'),
    computeInstanceId: pick('computeInstanceId', 'int nvmlDeviceGetComputeInstanceId(nvmlDevice_t, _Out_ uint *)'),
    fieldValues: pick('fieldValues', 'int nvmlDeviceGetFieldValues(nvmlDevice_t, int, void *)'),
    samples: pick('samples', 'int nvmlDeviceGetSamples(nvmlDevice_t, int, uint64, _Out_ int *, _Inout_ uint *, void *)'),
    events: missingEvents.length ? undefined : (ev as unknown as NvmlEvents),
    gpm: hasGpm ? (gpm as unknown as NvmlGpm) : undefined,
  };
}
