/**
 * The fake libnvidia-ml.so.1 (test/fixtures/fake-nvml/fake_nvml.c), compiled
 * with gcc once per test process, plus helpers to write its JSON description.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FIXTURES, tempDir } from './paths.js';

const SRC = join(FIXTURES, 'fake-nvml', 'fake_nvml.c');
type Variant = 'current' | 'old' | 'lean';
let built: Record<Variant, string> | undefined;

/** Builds the current-driver, the old-driver (missing newer symbols) and the lean (no deprecated temperature call, no event wait) variants. */
export function fakeNvmlLibraries(): Record<Variant, string> {
  if (built) return built;
  const dir = tempDir('l9gpu-fake-nvml-');
  const current = join(dir, 'current', 'libnvidia-ml.so.1');
  const old = join(dir, 'old', 'libnvidia-ml.so.1');
  const lean = join(dir, 'lean', 'libnvidia-ml.so.1');
  for (const [out, extra] of [[current, []], [old, ['-DFAKE_OLD_DRIVER']], [lean, ['-DFAKE_LEAN_DRIVER']]] as const) {
    mkdirSync(join(out, '..'), { recursive: true });
    execFileSync('gcc', ['-shared', '-fPIC', '-O2', '-Wall', '-Wextra', '-Werror', ...extra, '-o', out, SRC, '-lpthread'], { stdio: 'pipe' });
  }
  return (built = { current, old, lean });
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
    util_gpu: 87, util_mem: 40,
    mem_total: 85_899_345_920, mem_used: 42_949_672_960, mem_free: 42_412_802_048, mem_reserved: 536_870_912,
    temp_gpu: 45, power_mw: 350_123, power_limit_mw: 700_000, energy_mj: 123_456_789,
    clock_graphics: 1755, clock_sm: 1755, clock_mem: 2619, clock_reasons: 0,
    ecc: { corrected_volatile: 1, uncorrected_volatile: 0, corrected_aggregate: 5, uncorrected_aggregate: 0 },
    remapped: { corrected: 2, uncorrected: 0, pending: 0, failure: 0 },
    retired: { sbe: 0, dbe: 0 },
    pcie_tx_kbs: 1000, pcie_rx_kbs: 2000, pcie_replay: 3,
    fan: 30, pstate: 0,
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
  constructor(public desc: FakeNvmlDescription, dir = tempDir('l9gpu-nvml-desc-')) {
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
  env(variant: Variant = 'current'): Record<string, string> {
    return { L9GPU_NVML_LIBRARY: fakeNvmlLibraries()[variant], FAKE_NVML_CONFIG: this.path };
  }
}
