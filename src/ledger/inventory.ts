/**
 * Keeps the store's gpus table current from the GPU points that pass by: the
 * Slurm hooks turn GRES indices into UUIDs through it (device minor, PCI id,
 * MIG parent). Written only when a GPU's identity changes.
 */
import type { Logger } from '../core/log.js';
import { GPU } from '../core/metrics/gpu-metrics.js';
import type { Point } from '../core/metrics/model.js';
import { upsertInventory, type InventoryGpu } from '../store/jobs.js';
import type { Db } from '../store/open.js';

const num = (v: unknown): number | null => (typeof v === 'number' ? v : null);
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

/** A GPU's inventory row from its gpu.info or gpu.memory.total point (the points every GPU sends each tick). */
export function inventoryOf(p: Point): InventoryGpu | undefined {
  if (p.metric !== GPU.info && p.metric !== GPU.memTotal) return undefined;
  const a = p.attributes;
  if (typeof a['gpu.uuid'] !== 'string') return undefined;
  return {
    uuid: a['gpu.uuid'],
    vendor: String(a['gpu.vendor']),
    vendorIndex: num(a['gpu.index']),
    minor: num(a['gpu.device.minor']),
    pciBusId: str(a['gpu.pci.bus_id']),
    model: str(a['gpu.model']),
    migParent: str(a['gpu.mig.parent_uuid']),
    migGi: num(a['gpu.mig.instance_id']),
    migCi: num(a['gpu.mig.compute_instance_id']),
  };
}

export class InventoryWriter {
  /** The last identity written per UUID, as JSON. */
  private readonly known = new Map<string, string>();

  constructor(
    private readonly db: Db,
    private readonly log: Logger,
  ) {}

  observe(points: readonly Point[]): void {
    const changed: InventoryGpu[] = [];
    for (const p of points) {
      const g = inventoryOf(p);
      if (!g) continue;
      const minor = g.minor;
      const key = JSON.stringify(g);
      const prev = this.known.get(g.uuid);
      // gpu.info (with the minor) wins over memory.total (without) for the same GPU
      if (prev === key || (prev && minor === null && p.metric === GPU.memTotal)) continue;
      this.known.set(g.uuid, key);
      changed.push(g);
    }
    if (changed.length === 0) return;
    try {
      upsertInventory(this.db, changed);
    } catch (e) {
      for (const g of changed) this.known.delete(g.uuid);
      this.log.once(`inventory-${(e as Error).message}`, 'error', 'cannot write the GPU inventory', { error: (e as Error).message });
    }
  }
}
