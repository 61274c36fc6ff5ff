/**
 * Which GPUs (by UUID) a job holds on this node, from the slurmd
 * environment: CUDA_VISIBLE_DEVICES when it carries UUIDs (MIG always, and
 * plain GPUs from Slurm 25.11 with AutoDetect=nvml), else the GRES indices of
 * SLURM_JOB_GPUS through gres.conf order and the inventory's minor numbers.
 * A GRES index that cannot be resolved yet is kept as "gres:<index>": the
 * reconciler resolves it once the daemon has written the inventory.
 */
import type { Db } from '../src/store/open.js';
import type { GpuBinding } from '../src/store/jobs.js';
import { gpuLookups } from '../src/store/gpus.js';
import { AUTODETECT_VENDOR, deviceMinor, readGresLayout, type GresLayout } from './gres.js';
import { expandIndexList } from './hostlist.js';

export interface ResolveInput {
  cudaVisibleDevices?: string;
  jobGpus?: string;
  /** The environment says the GPUs are shared (MPS): every binding is marked shared. */
  shared: boolean;
  gresConf: string;
  node: string;
}

/** The inventory lookup the resolution needs (a SQLite query, or a map in tests). */
export interface Inventory {
  uuidByMinor(minor: number): string | undefined;
  /** Old-driver MIG ids: MIG-GPU-<parent uuid>/<gi>/<ci>. */
  migUuid(parent: string, gi: number, ci: number): string | undefined;
  /** The vendor's whole GPUs (no MIG instances) in PCI bus id order: AutoDetect's GRES order. */
  uuidsByPci(vendor: string): string[];
}

export function storeInventory(db: Db): Inventory {
  const q = gpuLookups(db);
  return {
    uuidsByPci: (vendor) => pciOrder(q.wholeGpusOf(vendor)),
    uuidByMinor: (m) => q.uuidByMinor(m),
    migUuid: (p, gi, ci) => q.migUuid(p, gi, ci),
  };
}

/** An NVIDIA UUID as CUDA_VISIBLE_DEVICES carries it (MIG-GPU-<uuid>/<gi>/<ci> before R470): no dots, no other slashes. */
const UUID_RE = /^(GPU|MIG)-[A-Za-z0-9-]+(\/\d+\/\d+)?$/;
/** More GPU entries than any node has (8 GPUs x 7 MIG instances is 56) is no allocation: refused, not written 10,000 times. */
export const MAX_GPU_ENTRIES = 1024;

export function resolveGpus(input: ResolveInput, inv: Inventory): GpuBinding[] {
  const cvd = (input.cudaVisibleDevices ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (cvd.length > MAX_GPU_ENTRIES)
    throw new Error(`CUDA_VISIBLE_DEVICES names ${cvd.length} GPUs, more than a node has (${MAX_GPU_ENTRIES}): not recorded`);
  if (cvd.length > 0 && cvd.every((d) => UUID_RE.test(d))) {
    return cvd.map((d) => {
      const old = /^MIG-(GPU-[0-9a-f-]+)\/(\d+)\/(\d+)$/i.exec(d);
      const uuid = old ? (inv.migUuid(old[1]!, Number(old[2]), Number(old[3])) ?? d) : d;
      return { uuid, shared: input.shared };
    });
  }
  const indices = expandIndexList(input.jobGpus ?? '');
  if (indices.length > MAX_GPU_ENTRIES)
    throw new Error(`SLURM_JOB_GPUS names ${indices.length} GPUs, more than a node has (${MAX_GPU_ENTRIES}): not recorded`);
  return gresIndicesToGpus(indices, input.shared ? indices : [], () => readGresLayout(input.gresConf, input.node), inv);
}

/**
 * UUIDs in PCI bus id order ("0000:18:00.0" < "0000:3b:00.0" < "0001:..."),
 * or none at all when a GPU has no PCI id: then the order is unknown.
 */
function pciOrder(gpus: readonly { uuid: string; pci: string | null }[]): string[] {
  if (gpus.some((g) => !g.pci)) return [];
  const key = (p: string) =>
    p
      .toLowerCase()
      .split(/[:.]/)
      .map((x) => x.padStart(8, '0'))
      .join(':');
  return [...gpus].sort((a, b) => (key(a.pci!) < key(b.pci!) ? -1 : key(a.pci!) > key(b.pci!) ? 1 : 0)).map((g) => g.uuid);
}

/**
 * GRES indices -> UUIDs, the way slurmd numbered the GPUs: under AutoDetect
 * the vendor's GPUs in PCI bus order, else the gres.conf device file's minor
 * -> the inventory's UUID. "gres:<index>" while the inventory cannot tell
 * (a wrong UUID is worse than none), and when gres.conf cannot be read: the
 * job's run and its GPU count are recorded, and closed by the epilog, all
 * the same; the reconciler resolves them once it can. gres.conf is read only
 * when there are indices to resolve.
 */
export function gresIndicesToGpus(
  indices: readonly number[],
  sharedIdx: readonly number[],
  layout: () => GresLayout,
  inv: Inventory,
): GpuBinding[] {
  if (indices.length === 0) return [];
  let l: GresLayout;
  try {
    l = layout();
  } catch {
    l = { autodetect: null, devices: [] };
  }
  const byPci = l.autodetect ? inv.uuidsByPci(AUTODETECT_VENDOR[l.autodetect]!) : [];
  return indices.map((i) => {
    let uuid: string | undefined;
    if (l.autodetect) uuid = byPci[i];
    else {
      const dev = l.devices.find((d) => d.index === i);
      const minor = dev ? deviceMinor(dev.file) : undefined;
      uuid = minor !== undefined ? inv.uuidByMinor(minor) : undefined;
    }
    return { uuid: uuid ?? `gres:${i}`, shared: sharedIdx.includes(i) };
  });
}
