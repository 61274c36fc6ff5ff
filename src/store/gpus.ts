/**
 * The gpus table's one owner: the GPU inventory the job ledger keeps current
 * from the GPU points (src/ledger/inventory.ts), and every question asked of
 * it (the Slurm hooks turning GRES indices into UUIDs, the MIG devices of the
 * attribution transform, a report's GPU models, doctor's counts).
 */
import type { Db } from './open.js';

export interface InventoryGpu {
  uuid: string;
  vendor: string;
  vendorIndex: number | null;
  minor: number | null;
  pciBusId: string | null;
  model: string | null;
  migParent: string | null;
  migGi: number | null;
  migCi: number | null;
}

/** Every GPU of the inventory, as upsertInventory takes them. */
export function inventory(db: Db): InventoryGpu[] {
  return db
    .prepare(
      'SELECT uuid, vendor, vendor_index AS vendorIndex, minor, pci_bus_id AS pciBusId, model, ' +
        'mig_parent AS migParent, mig_gi AS migGi, mig_ci AS migCi FROM gpus',
    )
    .all() as InventoryGpu[];
}

/** Whole GPUs (not MIG instances) of the inventory by vendor, and how many of them have no PCI bus id. */
export function inventoryByVendor(db: Db): Record<string, { gpus: number; withoutPci: number }> {
  const by: Record<string, { gpus: number; withoutPci: number }> = {};
  for (const r of db
    .prepare('SELECT vendor, COUNT(*) AS n, SUM(pci_bus_id IS NULL) AS nopci FROM gpus WHERE mig_parent IS NULL GROUP BY vendor')
    .all() as { vendor: string; n: number; nopci: number }[]) {
    by[r.vendor] = { gpus: r.n, withoutPci: r.nopci };
  }
  return by;
}

export function upsertInventory(db: Db, gpus: readonly InventoryGpu[], now = Date.now()): void {
  const st = db.prepare(
    `INSERT INTO gpus (uuid, vendor, vendor_index, minor, pci_bus_id, model, mig_parent, mig_gi, mig_ci, first_seen, last_seen)
     VALUES (@uuid, @vendor, @vendorIndex, @minor, @pciBusId, @model, @migParent, @migGi, @migCi, @now, @now)
     ON CONFLICT (uuid) DO UPDATE SET vendor = excluded.vendor, vendor_index = excluded.vendor_index, minor =
       COALESCE(excluded.minor, gpus.minor),
       pci_bus_id = excluded.pci_bus_id, model = excluded.model, mig_parent = excluded.mig_parent, mig_gi = excluded.mig_gi, mig_ci
         = excluded.mig_ci, last_seen = excluded.last_seen`,
  );
  db.transaction(() => {
    for (const g of gpus) st.run({ ...g, now });
  }).immediate();
}

/** How many GPUs (and MIG instances) the inventory holds. */
export function gpuCount(db: Db): number {
  return (db.prepare('SELECT COUNT(*) AS n FROM gpus').get() as { n: number }).n;
}

/**
 * The lookups a GRES index or an old MIG id resolves through (slurm/resolve.ts),
 * each prepared once: a whole GPU by device minor (the last seen), a MIG
 * instance by parent, GPU and compute instance, the vendor's whole GPUs with
 * their PCI bus ids.
 */
export function gpuLookups(db: Db): {
  uuidByMinor(minor: number): string | undefined;
  migUuid(parent: string, gi: number, ci: number): string | undefined;
  wholeGpusOf(vendor: string): { uuid: string; pci: string | null }[];
} {
  const byMinor = db.prepare('SELECT uuid FROM gpus WHERE minor = ? AND mig_parent IS NULL ORDER BY last_seen DESC LIMIT 1');
  const mig = db.prepare('SELECT uuid FROM gpus WHERE mig_parent = ? AND mig_gi = ? AND mig_ci = ? LIMIT 1');
  const byPci = db.prepare('SELECT uuid, pci_bus_id AS pci FROM gpus WHERE vendor = ? AND mig_parent IS NULL');
  return {
    uuidByMinor: (m) => (byMinor.get(m) as { uuid: string } | undefined)?.uuid,
    migUuid: (p, gi, ci) => (mig.get(p, gi, ci) as { uuid: string } | undefined)?.uuid,
    wholeGpusOf: (vendor) => byPci.all(vendor) as { uuid: string; pci: string | null }[],
  };
}

/** The MIG instances of the inventory that have a GPU instance: uuid, parent GPU and GPU instance. */
export function migInstances(db: Db): { uuid: string; parent: string; gi: number }[] {
  return db
    .prepare('SELECT uuid, mig_parent AS parent, mig_gi AS gi FROM gpus WHERE mig_parent IS NOT NULL AND mig_gi IS NOT NULL')
    .all() as { uuid: string; parent: string; gi: number }[];
}

/** A GPU's model and vendor index as the inventory has them (prepared once, asked per GPU of a report). */
export function gpuModelLookup(db: Db): (uuid: string) => { model: string | null; idx: number | null } | undefined {
  const inv = db.prepare('SELECT model, vendor_index AS idx FROM gpus WHERE uuid = ?');
  return (uuid) => inv.get(uuid) as { model: string | null; idx: number | null } | undefined;
}
