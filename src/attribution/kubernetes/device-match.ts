/**
 * Device ids of the kubelet's pod-resources answer -> GPU UUIDs. A wrong UUID
 * is worse than none, so an id that cannot be matched for sure stays
 * unmatched, with the reason (doctor lists them).
 *
 * The id forms (testdata/device-ids.md has the sources):
 *   GPU-<uuid>                      NVIDIA's device plugin, whatever its deviceIDStrategy
 *   GPU-<uuid>::<n>                 NVIDIA time-slicing / MPS: replica n of a shared GPU
 *   MIG-<uuid>                      NVIDIA MIG device (current drivers)
 *   MIG-GPU-<uuid>/<gi>/<ci>        NVIDIA MIG device (older drivers)
 *   0000:c1:00.0                    AMD's device plugin: the PCI address
 *   gpu-<minor>                     NVIDIA's DRA driver (gpu.nvidia.com): the /dev/nvidia<minor> GPU
 */
import { normalizePciBusId } from '../../core/pci.js';
import type { InventoryGpu } from '../../store/jobs.js';

export type DeviceMatch =
  { readonly uuid: string; readonly shared: boolean; readonly how: string } | { readonly uuid?: undefined; readonly why: string };

/** The GPUs of this node, looked up every way a device id may name one. */
export class KnownGpus {
  private readonly byUuid = new Map<string, InventoryGpu>();
  private readonly byPci = new Map<string, InventoryGpu[]>();

  /** Adds or updates GPUs; true when one was new or changed (ids unmatched so far may match now). */
  learn(gpus: Iterable<InventoryGpu>): boolean {
    let changed = false;
    for (const g0 of gpus) {
      const prev = this.byUuid.get(g0.uuid);
      // gpu.memory.total points carry no minor, gpu.info points do: one does not erase what the other said
      const g = prev && g0.minor === null ? { ...g0, minor: prev.minor } : g0;
      if (prev && JSON.stringify(prev) === JSON.stringify(g)) continue;
      this.byUuid.set(g.uuid, g);
      changed = true;
    }
    if (changed) {
      this.byPci.clear();
      for (const g of this.byUuid.values()) {
        if (!g.pciBusId) continue;
        const k = normalizePciBusId(g.pciBusId);
        this.byPci.set(k, [...(this.byPci.get(k) ?? []), g]);
      }
    }
    return changed;
  }

  get size(): number {
    return this.byUuid.size;
  }

  /** Whole GPUs (not MIG devices) at this PCI address. */
  atPci(id: string): InventoryGpu[] {
    return (this.byPci.get(normalizePciBusId(id)) ?? []).filter((g) => g.migParent === null);
  }

  /** Whole GPUs of a vendor with this device minor (/dev/nvidia<minor>). */
  withMinor(vendor: string, minor: number): InventoryGpu[] {
    return [...this.byUuid.values()].filter((g) => g.migParent === null && g.vendor === vendor && g.minor === minor);
  }

  mig(parent: string, gi: number, ci: number): InventoryGpu[] {
    return [...this.byUuid.values()].filter((g) => g.migParent === parent && g.migGi === gi && g.migCi === ci);
  }
}

const UUID = '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}';
const REPLICA = /^(.*)::(\d+)$/;
const MIG_OLD = new RegExp(`^MIG-(GPU-${UUID})/(\\d+)/(\\d+)$`);
const PLAIN_UUID = new RegExp(`^(?:GPU|MIG)-${UUID}$`);
const PCI = /^(?:[0-9a-fA-F]{1,8}:)?[0-9a-fA-F]{1,2}:[0-9a-fA-F]{1,2}\.[0-7]$/;

const one = (found: InventoryGpu[], shared: boolean, how: string, what: string): DeviceMatch =>
  found.length === 1
    ? { uuid: found[0]!.uuid, shared, how }
    : { why: found.length ? `${what} names ${found.length} GPUs` : `no GPU of this node is ${what}` };

/** One device id of a device-plugin resource, or a device name of a DRA driver, as a GPU UUID, or why not. */
export function matchDevice(resource: string, id: string, gpus: KnownGpus, dra = false): DeviceMatch {
  const rep = REPLICA.exec(id);
  const base = rep ? rep[1]! : id;
  const shared = !!rep;
  const mig = MIG_OLD.exec(base);
  if (mig)
    return one(
      gpus.mig(mig[1]!, Number(mig[2]), Number(mig[3])),
      shared,
      'MIG parent/gi/ci',
      `MIG device ${mig[2]}/${mig[3]} of ${mig[1]}`,
    );
  // a UUID names its GPU whether or not the GPU has reported yet (the inventory fills as the plugins sample)
  if (PLAIN_UUID.test(base)) return { uuid: base, shared, how: 'UUID' };
  if (PCI.test(base)) return one(gpus.atPci(base), shared, 'PCI bus id', `at PCI ${normalizePciBusId(base)}`);
  if (dra && resource === 'gpu.nvidia.com') {
    const minor = /^gpu-(\d+)$/.exec(base);
    if (minor) return one(gpus.withMinor('nvidia', Number(minor[1])), shared, 'DRA device minor', `/dev/nvidia${minor[1]}`);
    if (/^gpu-\d+-mig-/.test(base))
      return {
        why:
          `DRA MIG device "${base}" names its parent's minor and a placement, not the instance: only ` +
          `the driver's ResourceSlice (its uuid attribute) says which MIG device it is`,
      };
  }
  if (/^\d+(:\d+)?$/.test(base)) return { why: `"${base}" is an index, which does not say which GPU it is for sure` };
  if (/^amdgpu_xcp_\d+$/.test(base))
    return { why: `"${base}" is an AMD compute partition; which GPU holds it is only in sysfs of the host` };
  if (resource.startsWith('habana.ai/'))
    return { why: `"${base}" is a Gaudi serial number; the hl-smi plugin keys Gaudis by UUID and does not read serials yet` };
  return { why: `"${base}" is no device id form l9gpu knows${dra ? ` for DRA driver ${resource}` : ''}` };
}

/** Whether a resource name is one of the configured GPU resources ("nvidia.com/mig-*" takes a prefix). */
export function isGpuResource(name: string, patterns: readonly string[]): boolean {
  return patterns.some((p) => (p.endsWith('*') ? name.startsWith(p.slice(0, -1)) : name === p));
}
