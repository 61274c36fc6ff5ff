/** What doctor and `l9gpu gpus` read about Slurm attribution from the store (read-only). */
import { closeSync, constants, existsSync, fstatSync, openSync, readSync } from 'node:fs';
import { printable } from '../src/core/printable.js';
import { join } from 'node:path';
import { openStoreReadOnly, storePath } from '../src/store/open.js';
import { inventoryByVendor, openBindings, type OpenBinding } from '../src/store/jobs.js';
import { gpuCount } from '../src/store/gpus.js';
import { allMeta } from '../src/store/meta.js';
import { LEARNED_NODE_KEY } from './node-name.js';

export interface SlurmStoreStatus {
  store: string;
  exists: boolean;
  openBindings: OpenBinding[];
  gpusInInventory: number;
  /** Whole GPUs in the inventory by vendor, and how many of them have no PCI bus id (AutoDetect's order is unknown then). */
  inventoryByVendor: Record<string, { gpus: number; withoutPci: number }>;
  lastReconcileOk: string | null;
  lastReconcileError: string | null;
  lastHookLine: string | null;
  /** The node name the hooks recorded (SLURMD_NODENAME). */
  learnedNodeName: string | null;
  error?: string;
}

export function slurmStoreStatus(stateDir: string): SlurmStoreStatus {
  const store = storePath(stateDir);
  const st: SlurmStoreStatus = {
    store,
    exists: existsSync(store),
    openBindings: [],
    gpusInInventory: 0,
    inventoryByVendor: {},
    lastReconcileOk: null,
    lastReconcileError: null,
    lastHookLine: null,
    learnedNodeName: null,
  };
  try {
    // never through a link: a root doctor must not print a line of a file the link points at
    const fd = openSync(join(stateDir, 'hooks.log'), constants.O_RDONLY | constants.O_NOFOLLOW);
    let text = '';
    try {
      // nor through a hard link (another name of someone else's file), nor a 1 GiB file
      const f = fstatSync(fd);
      if (f.isFile() && f.nlink === 1) {
        const n = Math.min(f.size, 64 * 1024);
        const b = Buffer.alloc(n);
        readSync(fd, b, 0, n, f.size - n);
        text = b.toString('utf8');
      }
    } finally {
      closeSync(fd);
    }
    const log = text.trim().split('\n');
    st.lastHookLine = log[log.length - 1] ? printable(log[log.length - 1]!) : null;
  } catch {
    /* no hook has logged anything */
  }
  if (!st.exists) return st;
  try {
    const db = openStoreReadOnly(stateDir);
    try {
      st.openBindings = openBindings(db);
      st.gpusInInventory = gpuCount(db);
      st.inventoryByVendor = inventoryByVendor(db);
      const meta = allMeta(db);
      const ok = meta.get('reconcile.last_ok');
      st.lastReconcileOk = ok ? new Date(Number(ok)).toISOString() : null;
      st.lastReconcileError = meta.get('reconcile.last_error') ?? null;
      st.learnedNodeName = meta.get(LEARNED_NODE_KEY) ?? null;
    } finally {
      db.close();
    }
  } catch (e) {
    st.error = (e as Error).message;
  }
  return st;
}
