/**
 * Reads every field of every GPU through the binding. Each call is a koffi
 * async call (binding.ts), made one after another: one sample at a time
 * (session.ts). Each costs a hop to a pool thread and back, so a tick makes
 * few: one field-values call for the counters, one GPM read (activity, PCIe
 * and NVLink traffic), and the GPU's state (MIG mode and instances, clocks that follow the performance
 * state, fan) every state interval rather than every tick. NOT_SUPPORTED (or
 * a symbol the driver lacks) removes the field for that GPU and is said once;
 * GPU_IS_LOST marks the GPU lost and stops reading it until NVML is
 * re-initialised.
 */
import { normalizePciBusId } from '../../src/core/pci.js';
import { printable } from '../../src/core/printable.js';
import { BUFFER_SIZE, NO_INSTANCE, NVML, SAMPLE, SAMPLING, VALUE_NOT_AVAILABLE } from './abi.js';
import { cString, type Handle, type NvmlBinding } from './binding.js';
import { FIELD_IDS, FIELD_READINGS, fieldRequest, fieldValues, unionValue, type OwnCall } from './fields.js';
import { DEVICE_READINGS, type ReadingPhase } from './device-readings.js';
import { GpmReader, type GpmValues } from './gpm.js';
import { enumerateMig, type MigInstance } from './mig.js';
import type { GpuSnapshot, MigSnapshot, ProcessSnapshot, Snapshot } from './snapshot.js';
import { monoNow } from '../../src/core/clock.js';

class GpuLost extends Error {}

interface Gpu {
  index: number;
  handle: Handle;
  uuid: string;
  name: string;
  pciBusId: string;
  minor?: number;
  /** The board's serial number and VBIOS version as read at enumeration (boardString). */
  serial?: string;
  vbiosVersion?: string;
  /** Calls this GPU answered NOT_SUPPORTED (or the library lacks): not made again until the next re-probe. */
  unsupported: Set<string>;
  /** When the unsupported calls are tried again: MIG mode changes what a GPU supports. */
  reprobeAt: number;
  /** MIG mode as last read (a change re-probes at once). */
  migMode?: number;
  /** The MIG instances as last enumerated (MIG mode on); undefined: enumerate on the next tick. */
  migs?: MigInstance[];
  /** When the state (MIG mode, clocks that follow the performance state, fan) is read next (ms since epoch). */
  stateAt: number;
  /** The state as last read. */
  state: Pick<GpuSnapshot, 'clockGraphicsMhz' | 'clockMemMhz' | 'fanPct' | 'pstate'>;
  /** The GPM support query answered yes (asked again after a re-probe). */
  gpmSupported?: boolean;
  /** Newest sample timestamp (µs) read from each of NVML's sample buffers, by sampling type. */
  lastSample: Map<number, bigint>;
  /** (call, code) pairs already reported */
  said: Set<string>;
  /** Lost when NVML was re-initialised: no handle this session, reported lost without a call. */
  lost?: boolean;
}

const GPM_CALL = 'SM/engine activity (GPM)';

/**
 * A string the driver wrote about the board (serial number, VBIOS version) as an attribute value: no longer than
 * its NVML_DEVICE_*_BUFFER_SIZE buffer (NUL included, cString), trimmed, and with control and invisible format
 * characters made "?" (printable()): the driver's bytes go onto every sink and into terminals. Empty is none.
 */
function boardString(b: Buffer): string | undefined {
  return printable(cString(b).trim()) || undefined;
}

/** Unsupported calls are tried again this often (and at once when MIG mode changes). */
const REPROBE_MS = 600_000;

export class Sampler {
  private gpus: Gpu[] = [];
  private notes: Snapshot['notes'] = [];
  /** UUIDs and names (NVML_DEVICE_UUID_V2_BUFFER_SIZE, NVML_DEVICE_NAME_V2_BUFFER_SIZE); its start: serials, VBIOS versions */
  private readonly idBuf = Buffer.alloc(Math.max(BUFFER_SIZE.DEVICE_UUID_V2, BUFFER_SIZE.DEVICE_NAME_V2));
  /** The nvmlFieldValue_t array, ids and scopes written once: NVML fills in the rest of each entry. */
  private readonly fields = fieldRequest();
  private procBuf: Buffer;
  /** Room for a whole sample buffer (the driver keeps 100 utilization and 120 power samples). */
  private readonly sampleBuf = Buffer.alloc(160 * SAMPLE.size);
  private lostSeen = new Set<string>();
  private readonly gpm: GpmReader | undefined;
  driverVersion = '';

  /**
   * stateIntervalMs: how often a GPU's state (MIG mode, clocks that follow the performance state, fan) is read ([nvml] state_interval).
   * gpmOnly: the GPM metrics to read, of those the driver has (default: all); the benchmark's baseline reads the seven of before issue 33.
   */
  constructor(
    private readonly nvml: NvmlBinding,
    private readonly withProcesses: boolean,
    gpmMinWindowMs: number | undefined,
    private readonly stateIntervalMs: number,
    gpmOnly?: readonly (keyof GpmValues)[],
  ) {
    this.gpm = nvml.gpm && new GpmReader(nvml.gpm, gpmMinWindowMs, gpmOnly);
    this.procBuf = Buffer.alloc(16 * nvml.processInfo.size);
  }

  /** Frees what this NVML session allocated (GPM samples): call before nvmlShutdown. */
  async release(): Promise<void> {
    await this.gpm?.release();
  }

  /** Enumerates GPUs and their identity (after init and every re-init). */
  async enumerate(): Promise<void> {
    const n = this.nvml;
    const v = Buffer.alloc(BUFFER_SIZE.SYSTEM_DRIVER_VERSION);
    this.driverVersion = (await n.driverVersion(v)) === NVML.SUCCESS ? cString(v) : '';
    this.gpm?.setDriver(this.driverVersion);
    const count: [number] = [0];
    const r = await n.count(count);
    if (r !== NVML.SUCCESS) throw new Error(`nvmlDeviceGetCount_v2: ${n.errorString(r)} (${r})`);
    const before = this.gpus;
    this.gpus = [];
    for (let i = 0; i < count[0]; i++) {
      const h: [Handle | null] = [null];
      const rh = await n.handleByIndex(i, h);
      const known = before.find((g) => g.index === i);
      if (rh === NVML.GPU_IS_LOST && known) {
        // still lost after a re-init: it stays in the snapshot as lost (its UUID from before), so it is not forgotten
        this.gpus.push({ ...known, lost: true });
        continue;
      }
      if (rh !== NVML.SUCCESS) {
        // NO_PERMISSION: a GPU hidden from us (cgroup); GPU_IS_LOST: reported below
        this.note('warn', `GPU ${i}: nvmlDeviceGetHandleByIndex_v2: ${n.errorString(rh)} (${rh}): not sampled`);
        continue;
      }
      const handle = h[0]!;
      const gpu: Gpu = {
        index: i,
        handle,
        uuid: '',
        name: '',
        pciBusId: '',
        unsupported: new Set(),
        reprobeAt: monoNow() + REPROBE_MS,
        stateAt: 0,
        state: {},
        lastSample: new Map(),
        said: new Set(),
      };
      if ((await n.uuid(handle, this.idBuf)) === NVML.SUCCESS) gpu.uuid = cString(this.idBuf);
      if (!gpu.uuid) {
        this.note('warn', `GPU ${i}: no UUID: not sampled (every metric is keyed by UUID)`);
        continue;
      }
      if ((await n.name(handle, this.idBuf)) === NVML.SUCCESS) gpu.name = cString(this.idBuf);
      const pci: { busId?: string } = {};
      if ((await n.pciInfo(handle, pci)) === NVML.SUCCESS) gpu.pciBusId = normalizePciBusId(pci.busId ?? '');
      const minor: [number] = [0];
      if ((await n.minor(handle, minor)) === NVML.SUCCESS) gpu.minor = minor[0];
      // the board's facts do not change while the driver runs: read here, never a tick
      const serial = await this.readBoardString(gpu, 'nvmlDeviceGetSerial', (b) => n.serial(handle, b), BUFFER_SIZE.DEVICE_SERIAL);
      if (serial !== undefined) gpu.serial = serial;
      const vbios = await this.readBoardString(
        gpu,
        'nvmlDeviceGetVbiosVersion',
        (b) => n.vbiosVersion(handle, b),
        BUFFER_SIZE.DEVICE_VBIOS_VERSION,
      );
      if (vbios !== undefined) gpu.vbiosVersion = vbios;
      this.gpus.push(gpu);
    }
  }

  /**
   * One board string of a GPU into a buffer of its nvml.h size (cleared first: what the driver leaves unwritten is
   * not read). NOT_SUPPORTED (a GeForce board has no serial number) or a library without the call is no attribute,
   * said nowhere: nothing is missing that the board has. Another error leaves the attribute out too, said at each
   * enumeration (start, and NVML re-initialised after a lost GPU), never a tick.
   */
  private async readBoardString(g: Gpu, call: string, read: (b: Buffer) => Promise<number>, size: number): Promise<string | undefined> {
    const b = this.idBuf.subarray(0, size).fill(0);
    const r = await read(b);
    if (r === NVML.SUCCESS) return boardString(b);
    // a lost GPU is found lost by the next sample, which says so
    if (r !== NVML.NOT_SUPPORTED && r !== NVML.FUNCTION_NOT_FOUND && r !== NVML.GPU_IS_LOST)
      this.note('warn', `GPU ${g.index} (${g.uuid}): ${call}: ${this.nvml.errorString(r)} (${r}): gpu.info goes without it`);
    return undefined;
  }

  get gpuCount(): number {
    return this.gpus.length;
  }

  /** The handle -> UUID map the event set is read with. */
  handles(): Map<bigint, string> {
    // a GPU lost at re-init has only an earlier session's handle: never passed to NVML again
    return new Map(this.gpus.filter((g) => !g.lost).map((g) => [BigInt(g.handle), g.uuid]));
  }

  eventHandles(): { handle: Handle; uuid: string }[] {
    return this.gpus.filter((g) => !g.lost).map((g) => ({ handle: g.handle, uuid: g.uuid }));
  }

  /** Takes the notes gathered since the last call. */
  takeNotes(): Snapshot['notes'] {
    const n = this.notes;
    this.notes = [];
    return n;
  }

  note(level: 'info' | 'warn' | 'error', msg: string): void {
    this.notes.push({ level, msg });
  }

  /** Samples every GPU; a lost GPU comes back with lost: true and nothing else. */
  async sample(): Promise<{ gpus: GpuSnapshot[]; anyLost: boolean }> {
    const out: GpuSnapshot[] = [];
    let anyLost = false;
    for (const g of this.gpus) {
      const s: GpuSnapshot = {
        index: g.index,
        uuid: g.uuid,
        name: g.name,
        pciBusId: g.pciBusId,
        ...(g.minor !== undefined ? { minor: g.minor } : {}),
        ...(g.serial !== undefined ? { serial: g.serial } : {}),
        ...(g.vbiosVersion !== undefined ? { vbiosVersion: g.vbiosVersion } : {}),
      };
      try {
        if (g.lost) throw new GpuLost();
        await this.read(g, s);
        this.lostSeen.delete(g.uuid);
      } catch (e) {
        if (!(e instanceof GpuLost)) throw e;
        anyLost = true;
        if (!this.lostSeen.has(g.uuid))
          this.note(
            'error',
            `GPU ${g.index} (${g.uuid}) is lost (NVML_ERROR_GPU_IS_LOST): check \`dmesg\` for Xid 79; NVML will be re-initialised`,
          );
        this.lostSeen.add(g.uuid);
        out.push({ index: g.index, uuid: g.uuid, name: g.name, pciBusId: g.pciBusId, lost: true });
        continue;
      }
      out.push(s);
    }
    return { gpus: out, anyLost };
  }

  /**
   * Whether a call succeeded. Otherwise the value is unavailable this time or
   * for good: a lost GPU throws GpuLost; NOT_SUPPORTED (or a missing symbol)
   * marks the call unsupported for this GPU until the next re-probe; either
   * that or another error is said once per GPU and call.
   */
  private answered(g: Gpu, what: string, r: number): boolean {
    if (r === NVML.SUCCESS) return true;
    if (r === NVML.GPU_IS_LOST) throw new GpuLost();
    if (r === NVML.NOT_SUPPORTED || r === NVML.FUNCTION_NOT_FOUND) {
      g.unsupported.add(what);
      // a call that stops being supported may mean MIG mode turned on: read the state again next tick
      g.stateAt = 0;
      // said once per GPU and call, re-probes included
      const key = `unsupported:${what}`;
      if (!g.said.has(key)) {
        g.said.add(key);
        const why = what === GPM_CALL ? ' (GPM needs a Hopper or later GPU)' : g.migMode === 1 ? ' while MIG mode is on' : '';
        this.note(
          'info',
          `GPU ${g.index} (${g.uuid}): ${what} ${
            r === NVML.NOT_SUPPORTED ? `is not ` + `supported${why}` : 'is missing from this NVML library'
          }: ` + `not read until MIG mode changes (tried again every ${REPROBE_MS / 60_000} minutes)`,
        );
      }
      return false;
    }
    const key = `${what}:${r}`;
    if (!g.said.has(key)) {
      g.said.add(key);
      this.note('warn', `GPU ${g.index} (${g.uuid}): ${what}: ${this.nvml.errorString(r)} (${r})`);
    }
    return false;
  }

  private async read(g: Gpu, s: GpuSnapshot): Promise<void> {
    if (monoNow() >= g.reprobeAt) {
      g.unsupported.clear();
      g.reprobeAt = monoNow() + REPROBE_MS;
    }
    const skip = g.unsupported;
    const fresh = monoNow() >= g.stateAt;
    if (fresh) g.stateAt = monoNow() + this.stateIntervalMs;
    // first: MIG mode decides what else the GPU answers (a change re-probes everything)
    if (!skip.has('mig')) await this.readMig(g, s, fresh);
    const u1: [number] = [0];

    // one reading a tick misjudges bursty jobs: the mean (and peak) of every sample the driver took since the last
    // tick; the instantaneous reading only where there is no interval (first tick, nothing new, no sample buffers)
    const util = await this.interval(g, SAMPLING.GPU_UTILIZATION_SAMPLES, 'utilization samples');
    const memUtil = await this.interval(g, SAMPLING.MEMORY_UTILIZATION_SAMPLES, 'memory utilization samples');
    if (util) {
      s.utilGpuPct = util.mean;
      s.utilGpuMaxPct = util.max;
    }
    if (memUtil) s.utilMemPct = memUtil.mean;
    await this.readDevice(g, 'tick', s, u1);
    const f = skip.has('field values') ? undefined : await this.readFields(g, s);
    // the sample buffers' power first: field 185 and the power call serve only where they give no interval
    const power = await this.interval(g, SAMPLING.TOTAL_POWER_SAMPLES, 'power samples');
    if (power) {
      s.powerMw = power.mean;
      s.powerMaxMw = power.max;
    }
    for (const r of FIELD_READINGS) {
      if (r.when && !r.when(s)) continue;
      const ids = r.fields?.ids;
      if (f && ids && ids.every((id) => f.has(id)))
        r.fields!.into(
          s,
          ids.map((id) => f.get(id)!),
        );
      else if (!skip.has(r.call)) await r.own(this.ownCall(g, r.call), s);
    }
    if (fresh) await this.readState(g);
    Object.assign(s, g.state);
    if (this.withProcesses && !skip.has('processes')) await this.readProcesses(g, s);
    if (this.gpm && !skip.has(GPM_CALL)) await this.readGpm(g, s, this.gpm);
    if (s.gpm?.pcieTxMiBs !== undefined && s.gpm.pcieRxMiBs !== undefined) {
      // GPM's PCIe traffic is the mean over the whole interval; nvmlDeviceGetPcieThroughput counts 20 ms of it
      s.pcieTxKBs = s.gpm.pcieTxMiBs * 1024;
      s.pcieRxKBs = s.gpm.pcieRxMiBs * 1024;
    } else await this.readDevice(g, 'pcie', s, u1);
  }

  /** The rows of DEVICE_READINGS of one phase, in order; a call this GPU answered NOT_SUPPORTED is not made. */
  private async readDevice(g: Gpu, phase: ReadingPhase, s: Partial<GpuSnapshot>, u1: [number]): Promise<void> {
    for (const r of DEVICE_READINGS) {
      if (r.phase !== phase || g.unsupported.has(r.call) || (r.when && !r.when(s))) continue;
      await r.read(this.ownCall(g, r.call), s, u1);
    }
  }

  /**
   * SM / engine / tensor / DRAM activity through GPM: the whole GPU, or each
   * GPU instance of a GPU in MIG mode (where NVML has no other utilization).
   * A GPU without GPM (before Hopper) answers the support query with
   * isSupportedDevice = 0: skipped like any NOT_SUPPORTED call.
   */
  private async readGpm(g: Gpu, s: GpuSnapshot, gpm: GpmReader): Promise<void> {
    const n = this.nvml.gpm!;
    // MIG mode decides whole GPU or GPU instances: not known this tick (its call failed) -> no GPM this tick
    const migMode = s.migMode ?? (g.unsupported.has('mig') ? 0 : undefined);
    if (migMode === undefined) return;
    if (!g.gpmSupported) {
      const q = await gpm.supported(g.handle);
      if (!this.answered(g, GPM_CALL, q.r === NVML.SUCCESS && !q.supported ? NVML.NOT_SUPPORTED : q.r)) return;
      g.gpmSupported = true;
    }
    const seen = new Set<string>();
    if (migMode !== 1) {
      seen.add(g.uuid);
      const { r, values } = await gpm.read(g.uuid, '', (sample) => n.sampleGet(g.handle, sample));
      if (this.answered(g, GPM_CALL, r) && values) s.gpm = values;
    } else {
      const byGi = new Map<number, MigSnapshot[]>();
      for (const m of s.mig ?? []) byGi.set(m.gi, [...(byGi.get(m.gi) ?? []), m]);
      for (const [gi, members] of byGi) if (members.length === 1) seen.add(`${g.uuid}/${gi}`);
      for (const [gi, members] of byGi) {
        if (members.length > 1) {
          // GPM counts a GPU instance as a whole: its activity is no one compute instance's (nor one job's)
          const key = `shared-gi:${gi}`;
          if (!g.said.has(key)) {
            g.said.add(key);
            this.note(
              'info',
              `GPU ${g.index} (${g.uuid}): GPU instance ${gi} holds ${members.length} compute instances: ` +
                `NVML counts activity (GPM) by GPU instance only, so they get no utilization of their own`,
            );
          }
          continue;
        }
        const { r, values } = await gpm.read(`${g.uuid}/${gi}`, members[0]!.uuid, (sample) => n.migSampleGet(g.handle, gi, sample));
        if (r === NVML.NOT_SUPPORTED || r === NVML.FUNCTION_NOT_FOUND || r === NVML.GPU_IS_LOST) {
          this.answered(g, GPM_CALL, r);
          break;
        }
        // another GPU instance's error (destroyed since the MIG read) leaves the others' windows alone
        if (this.answeredGi(g, gi, r) && values) members[0]!.gpm = values;
      }
    }
    await gpm.sweep(g.uuid, seen);
  }

  /** answered() for one GPU instance's GPM read: an error is said once per GPU instance and code. */
  private answeredGi(g: Gpu, gi: number, r: number): boolean {
    return r === NVML.SUCCESS || this.answered(g, `${GPM_CALL} of GPU instance ${gi}`, r);
  }

  /**
   * Every field of FIELD_IDS in one nvmlDeviceGetFieldValues call
   * (fields.ts): their values by id, for the readings' fallbacks; the whole
   * call failing leaves them all absent.
   */
  private async readFields(g: Gpu, s: GpuSnapshot): Promise<Map<number, number>> {
    if (!this.answered(g, 'field values', await this.nvml.fieldValues(g.handle, FIELD_IDS.length, this.fields))) return new Map();
    const got = fieldValues(this.fields, s);
    if (!got) throw new GpuLost();
    return got;
  }

  /** A field reading's own call on this GPU, its answers checked under the reading's name. */
  private ownCall(g: Gpu, call: string): OwnCall {
    return { nvml: this.nvml, handle: g.handle, unsupported: g.unsupported, answered: (r) => this.answered(g, call, r) };
  }

  /**
   * Mean and maximum of the samples NVML's buffer of this type holds since
   * the last read (the driver samples utilization every 1/6 s to 1 s, power
   * more often). The first read only learns where the buffer is: the tick's
   * instantaneous reading serves until there is an interval. Nothing new
   * (NOT_FOUND: ticks faster than the driver samples) leaves that reading too.
   */
  private async interval(g: Gpu, type: number, what: string): Promise<{ mean: number; max: number } | undefined> {
    if (g.unsupported.has(what)) return undefined;
    const last = g.lastSample.get(type);
    const valueType: [number] = [0];
    const count: [number] = [this.sampleBuf.length / SAMPLE.size];
    const r = await this.nvml.samples(g.handle, type, last ?? 0n, valueType, count, this.sampleBuf);
    if (r === NVML.NOT_FOUND || !this.answered(g, what, r)) return undefined;
    let sum = 0;
    let max = -Infinity;
    let n = 0;
    let newest = last ?? 0n;
    for (let i = 0; i < count[0]; i++) {
      const o = i * SAMPLE.size;
      const t = this.sampleBuf.readBigUInt64LE(o + SAMPLE.at.timeStamp);
      if (last !== undefined && t <= last) continue;
      if (t > newest) newest = t;
      const v = unionValue(this.sampleBuf, o + SAMPLE.at.sampleValue, valueType[0]);
      if (Number.isNaN(v)) continue;
      sum += v;
      if (v > max) max = v;
      n++;
    }
    g.lastSample.set(type, newest);
    return last === undefined || n === 0 ? undefined : { mean: sum / n, max };
  }

  /** The compute processes, read in the entries this library writes (32 bytes on early R535: binding.ts). */
  private async readProcesses(g: Gpu, s: GpuSnapshot): Promise<void> {
    const n = this.nvml;
    const { size, at } = n.processInfo;
    const count: [number] = [Math.floor(this.procBuf.length / size)];
    let r = await n.processes(g.handle, count, this.procBuf);
    if (r === NVML.INSUFFICIENT_SIZE) {
      this.procBuf = Buffer.alloc((count[0] + 8) * size); // processes may start between the two calls
      count[0] = this.procBuf.length / size;
      r = await n.processes(g.handle, count, this.procBuf);
    }
    if (!this.answered(g, 'processes', r)) return;
    const list: ProcessSnapshot[] = [];
    for (let i = 0; i < count[0]; i++) {
      const o = i * size;
      const gi = this.procBuf.readUInt32LE(o + at.gpuInstanceId);
      const ci = this.procBuf.readUInt32LE(o + at.computeInstanceId);
      const used = this.procBuf.readBigUInt64LE(o + at.usedGpuMemory);
      const p: ProcessSnapshot = { pid: this.procBuf.readUInt32LE(o + at.pid) };
      // NVML_VALUE_NOT_AVAILABLE (-1: under WDDM, or without permission in MIG mode) is no value
      if (used !== VALUE_NOT_AVAILABLE) p.usedBytes = Number(used);
      if (gi !== NO_INSTANCE) p.gi = gi;
      // a process on a GPU instance made since the MIG instances were read: read them again next tick
      if (gi !== NO_INSTANCE && g.migs && !g.migs.some((m) => m.gi === gi)) g.migs = undefined;
      if (ci !== NO_INSTANCE) p.ci = ci;
      list.push(p);
    }
    s.processes = list;
  }

  /**
   * MIG mode, read when the GPU's state is (fresh): every state interval, and
   * at once after a call turned NOT_SUPPORTED (MIG on does that to device
   * utilization). Between, the mode read last stands. The MIG instances'
   * identity (handle, UUID, name, GPU and compute instance) is read with the
   * mode, or when a cached instance fails or a process runs on a GPU instance
   * the cache lacks; their memory every tick.
   */
  private async readMig(g: Gpu, s: GpuSnapshot, fresh: boolean): Promise<void> {
    const n = this.nvml;
    if (fresh || g.migMode === undefined) {
      const cur: [number] = [0],
        pend: [number] = [0];
      if (!this.answered(g, 'mig', await n.migMode(g.handle, cur, pend))) return;
      if (g.migMode !== undefined && g.migMode !== cur[0]) {
        // MIG on: device utilization and remapped rows go NOT_SUPPORTED; MIG off: they come back. Next tick tries all.
        g.unsupported.clear();
        g.reprobeAt = monoNow() + REPROBE_MS;
        this.note('info', `GPU ${g.index} (${g.uuid}): MIG mode turned ${cur[0] === 1 ? 'on' : 'off'}: every field is tried again`);
      }
      g.migMode = cur[0];
      g.migs = undefined;
    }
    s.migMode = g.migMode;
    if (g.migMode !== 1) return;
    const migs = (g.migs ??= await enumerateMig(n, g.handle, g.name, this.idBuf, (r) => this.answered(g, 'mig', r)));
    if (!migs) return;
    s.mig = [];
    for (const m of migs) {
      const mem: { total?: number; used?: number; free?: number } = {};
      const r = await n.memory(m.handle, mem);
      if (r === NVML.GPU_IS_LOST) throw new GpuLost();
      // an instance destroyed since the enumeration, or MIG mode turned off: read the mode and instances next tick
      if (r !== NVML.SUCCESS) {
        g.migs = undefined;
        g.stateAt = 0;
      }
      s.mig.push({
        uuid: m.uuid,
        name: m.name,
        gi: m.gi,
        ci: m.ci,
        ...(r === NVML.SUCCESS ? { memTotal: mem.total, memUsed: mem.used, memFree: mem.free } : {}),
      });
    }
  }

  /**
   * Clocks that follow the performance state, the state itself and the fan:
   * read every state interval, reported every tick as last read (a pull sink
   * serves the latest tick's points, and a scrape must not miss them).
   */
  private async readState(g: Gpu): Promise<void> {
    const st: Gpu['state'] = {};
    await this.readDevice(g, 'state', st, [0]);
    g.state = st;
  }
}
