/**
 * The fake libnvidia-ml.so.1 (test/fixtures/fake-nvml/fake_nvml.c), compiled
 * with gcc once per test process and linked once per driver profile, plus
 * helpers to write its JSON description.
 *
 * A profile is the symbol set of a real libnvidia-ml: the fake exports, of
 * the entry points it has, exactly those the real library exports (a linker
 * version script hides the rest), so a test never passes on an entry point
 * no driver of that kind has. Each set comes from `nm -D` of NVIDIA's own
 * library as Debian ships it (test/fixtures/fake-nvml/symbols/, each file
 * saying which package and file), changed only where a profile says why.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FIXTURES, tempDir } from './paths.js';

const SRC = join(FIXTURES, 'fake-nvml', 'fake_nvml.c');
const SYMBOLS = join(FIXTURES, 'fake-nvml', 'symbols');
/** The fake's own entry points (call and CPU counters for tests and benchmarks), exported by every profile. */
const FAKE_ONLY = ['fakeNvmlCalls', 'fakeNvmlCpuNs', 'fakeNvmlMisuses'];

export interface ProfileSpec {
  /** The recorded symbol list it starts from: symbols/libnvidia-ml.so.<version>.txt. */
  symbols: string;
  /** Symbols taken out of, or added to, that list (each profile says why). */
  without?: readonly string[];
  with?: readonly string[];
  /** nvmlDeviceGetComputeRunningProcesses_v3 writes 32-byte entries (built with -DFAKE_PROCESS_INFO_CC). */
  processInfoCc?: boolean;
  /** Where the set comes from. */
  source: string;
}

export const PROFILES = {
  r470: {
    symbols: '470.256.02',
    source:
      "NVIDIA 470.256.02 as Debian's libnvidia-tesla-470-ml1 ships it: before memory info v2, processes v3, clock event reasons and GPM",
  },
  r535: { symbols: '535.261.03', source: "NVIDIA 535.261.03 as Debian bookworm's libnvidia-ml1 ships it" },
  'r535-early': {
    symbols: '535.261.03',
    without: ['nvmlDeviceGetRunningProcessDetailList'],
    processInfoCc: true,
    source:
      '535.54.03 and 535.98, of which Debian has no library file: 535.261.03 without nvmlDeviceGetRunningProcessDetailList, which ' +
      'first shipped in 535.104.05 with the return to 24-byte _v3 entries (nvitop PR 94), and _v3 writing the 32-byte entries those ' +
      'two wrote (nvitop PR 79 and 89, pynvml PR 48)',
  },
  r550: { symbols: '550.163.01', source: "NVIDIA 550.163.01 as Debian trixie's libnvidia-ml1 ships it" },
  r570: {
    symbols: '555.58.02',
    with: ['nvmlDeviceGetTemperatureV'],
    source:
      "a driver with nvmlDeviceGetTemperatureV, which nvml.h declares from CUDA 12.8 (R570) on and no library on Debian's mirrors has " +
      "(the newest, experimental's 555.58.02, predates it): 555.58.02's set plus that call",
  },
  lean: {
    symbols: '555.58.02',
    with: ['nvmlDeviceGetTemperatureV'],
    without: ['nvmlDeviceGetTemperature', 'nvmlEventSetWait_v2'],
    source:
      'no real library: r570 without nvmlDeviceGetTemperature (deprecated in 13.0) and without nvmlEventSetWait_v2, to show that ' +
      'loading never depends on either',
  },
} as const satisfies Record<string, ProfileSpec>;
export type Profile = keyof typeof PROFILES;
/** What a test gets unless it names a profile: the newest driver Debian ships. */
export const DEFAULT_PROFILE: Profile = 'r550';

/** The symbols a recorded list names (comment lines apart). */
export function recordedSymbols(version: string): Set<string> {
  const text = readFileSync(join(SYMBOLS, `libnvidia-ml.so.${version}.txt`), 'utf8');
  return new Set(text.split('\n').filter((l) => l && !l.startsWith('#')));
}

/** The global symbols an object or library defines (nm). */
export function definedSymbols(file: string, dynamic = false): Set<string> {
  const out = execFileSync('nm', [...(dynamic ? ['-D'] : ['-g']), '--defined-only', file], { encoding: 'utf8' });
  return new Set(
    out
      .split('\n')
      .map((l) => l.trim().split(/\s+/)[2])
      .filter((x): x is string => !!x),
  );
}

interface Built {
  /** The nvml* entry points the fake has (each profile exports some of them). */
  entryPoints: Set<string>;
  libraries: Record<Profile, string>;
  /** The symbols each profile's library exports (nm -D of the built file). */
  exported: Record<Profile, Set<string>>;
}
let built: Built | undefined;

/** Compiles the fake (twice: 24- and 32-byte process entries) and links one library per profile. */
function build(): Built {
  if (built) return built;
  const dir = tempDir('l9gpu-fake-nvml-');
  const gcc = (...args: string[]) => execFileSync('gcc', args, { stdio: 'pipe' });
  const cflags = ['-c', '-fPIC', '-O2', '-Wall', '-Wextra', '-Werror'];
  const objects = { plain: join(dir, 'fake.o'), cc: join(dir, 'fake-cc.o') };
  gcc(...cflags, '-o', objects.plain, SRC);
  gcc(...cflags, '-DFAKE_PROCESS_INFO_CC', '-o', objects.cc, SRC);
  const has = definedSymbols(objects.plain);
  const libraries = {} as Record<Profile, string>;
  const exported = {} as Record<Profile, Set<string>>;
  for (const [name, spec] of Object.entries(PROFILES) as [Profile, ProfileSpec][]) {
    const real = recordedSymbols(spec.symbols);
    for (const s of spec.without ?? []) real.delete(s);
    for (const s of spec.with ?? []) real.add(s);
    const want = [...[...real].filter((s) => has.has(s)), ...FAKE_ONLY].sort();
    const out = join(dir, name, 'libnvidia-ml.so.1');
    mkdirSync(join(dir, name));
    const map = join(dir, name, 'exports.map');
    writeFileSync(map, `{\n  global:\n${want.map((s) => `    ${s};`).join('\n')}\n  local: *;\n};\n`);
    gcc('-shared', '-o', out, `-Wl,--version-script=${map}`, spec.processInfoCc ? objects.cc : objects.plain, '-lpthread', '-lm');
    const got = definedSymbols(out, true);
    if ([...got].sort().join() !== want.join())
      throw new Error(`fake NVML profile ${name}: exports ${[...got].sort().join(' ')}, wanted ${want.join(' ')}`);
    libraries[name] = out;
    exported[name] = got;
  }
  return (built = { entryPoints: new Set([...has].filter((s) => !FAKE_ONLY.includes(s))), libraries, exported });
}

/** The fake library of each profile. */
export function fakeNvmlLibraries(): Record<Profile, string> {
  return build().libraries;
}

/** The nvml* entry points the fake has. */
export function fakeNvmlEntryPoints(): Set<string> {
  return build().entryPoints;
}

/** The nvml* symbols a profile's library exports. */
export function fakeNvmlExports(profile: Profile): Set<string> {
  return new Set([...build().exported[profile]].filter((s) => !FAKE_ONLY.includes(s)));
}

export interface FakeGpu {
  uuid: string;
  name?: string;
  pci_bus_id?: string;
  [k: string]: unknown;
}

export interface FakeNvmlDescription {
  driver_version?: string;
  init_error?: number;
  /** Unix seconds the devices' energy_mj_per_s counters start from. */
  energy_t0_s?: number;
  devices: FakeGpu[];
  events?: { device: number; type: number; data: number; gi?: number; ci?: number }[];
}

/** A full-featured H100 as NVML would describe it, every field set. */
export function h100(i: number, over: Record<string, unknown> = {}): FakeGpu {
  const hex = (n: number) => n.toString(16).padStart(2, '0');
  return {
    uuid: `GPU-${hex(i)}a1b2c3-d4e5-f6a7-b8c9-d0e1f2a3b4${hex(i)}`,
    name: 'NVIDIA H100 80GB HBM3',
    pci_bus_id: `00000000:${hex(0x18 + i * 0x10).toUpperCase()}:00.0`,
    minor: i,
    // the board's serial (13 digits, as NVIDIA's data-center boards print it) and VBIOS version; a GeForce has no serial
    serial: `16549220${String(10000 + i)}`,
    vbios_version: '96.00.99.00.01',
    util_gpu: 87,
    util_mem: 40,
    mem_total: 85_899_345_920,
    mem_used: 42_949_672_960,
    mem_free: 42_412_802_048,
    mem_reserved: 536_870_912,
    temp_gpu: 45,
    power_mw: 350_123,
    power_limit_mw: 700_000,
    energy_mj: 123_456_789,
    clock_graphics: 1755,
    clock_sm: 1755,
    clock_mem: 2619,
    clock_reasons: 0,
    ecc: { corrected_volatile: 1, uncorrected_volatile: 0, corrected_aggregate: 5, uncorrected_aggregate: 0 },
    remapped: { corrected: 2, uncorrected: 0, pending: 0, failure: 0 },
    retired: { sbe: 0, dbe: 0 },
    pcie_tx_kbs: 1000,
    pcie_rx_kbs: 2000,
    pcie_replay: 3,
    fan: 30,
    pstate: 0,
    processes: [{ pid: 4242 + i, used: 1_048_576_000 }],
    fields: { '82': { type: 1, value: 50 }, '138': { value: 1000 }, '139': { value: 2000 }, '31': { type: 1, value: 0 } },
    mig_mode: 0,
    // Hopper: GPM activity counters (percent)
    gpm: { graphics: 85, sm: 70, sm_occupancy: 35, tensor: 40, dram: 55 },
    ...over,
  };
}

/** A JSON description on disk; write() replaces it atomically (the fake re-reads on change). */
export class FakeNvml {
  readonly path: string;
  constructor(
    public desc: FakeNvmlDescription,
    dir = tempDir('l9gpu-nvml-desc-'),
  ) {
    this.path = join(dir, 'nvml.json');
    this.write();
  }
  write(desc: FakeNvmlDescription = this.desc): void {
    this.desc = desc;
    const tmp = `${this.path}.tmp`;
    writeFileSync(tmp, JSON.stringify(desc));
    renameSync(tmp, this.path);
  }
  /** Environment that makes the production code load the fake through koffi. */
  env(profile: Profile = DEFAULT_PROFILE): Record<string, string> {
    return { L9GPU_NVML_LIBRARY: fakeNvmlLibraries()[profile], FAKE_NVML_CONFIG: this.path };
  }
}
