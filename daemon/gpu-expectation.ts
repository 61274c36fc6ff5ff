/**
 * How many GPUs this node must show, and why. A node whose GPU driver did
 * not load reads no GPU, like a node without GPUs: only what else is known
 * tells them apart. [daemon] expect_gpus says it outright; unset, a GPU
 * vendor's driver library or tool installed here, or GPUs of that vendor in
 * the store's inventory, say at least one. Doctor, `l9gpu gpus` and
 * `daemon --once` hold what they found to it, and call fewer a problem.
 */
import { existsSync } from 'node:fs';
import type { PluginContext, PluginManifest } from '../src/core/plugin.js';
import { readSection } from '../src/core/config/read.js';
import { DAEMON_SECTION } from '../src/core/config/sections.js';

export interface GpuExpectation {
  /** GPUs the node must show (0: none expected). */
  readonly count: number;
  /** Why, in words: the setting, or what was found installed or in the inventory. */
  readonly why: readonly string[];
  /** The GPU plugins whose vendor's GPUs belong here (their software is installed or the inventory has their GPUs). */
  readonly plugins: readonly string[];
}

/** Whole GPUs of the store's inventory by vendor, and the store's path; none when there is no store or it cannot be read (a user's run: the
 * store is root's). */
async function inventoryByVendor(stateDir: string): Promise<{ path: string; by: Record<string, { gpus: number }> }> {
  const [{ openStoreReadOnly, storePath }, jobs] = await Promise.all([import('../src/store/open.js'), import('../src/store/jobs.js')]);
  const path = storePath(stateDir);
  if (!existsSync(path)) return { path, by: {} };
  try {
    const db = openStoreReadOnly(stateDir);
    try {
      return { path, by: jobs.inventoryByVendor(db) };
    } finally {
      db.close();
    }
  } catch {
    return { path, by: {} };
  }
}

export async function expectGpus(plugins: readonly PluginManifest[], ctx: PluginContext): Promise<GpuExpectation> {
  const daemon = readSection(ctx.config, DAEMON_SECTION);
  const store = await inventoryByVendor(daemon.state_dir);
  const why: string[] = [];
  const evidenced: string[] = [];
  for (const p of plugins) {
    if (!p.hardware) continue;
    const installed = p.hardware.installed(ctx);
    const inInventory = store.by[p.hardware.vendor]?.gpus ?? 0;
    if (installed) why.push(installed);
    if (inInventory) why.push(`the store's inventory has seen ${inInventory} ${p.hardware.vendor} GPU(s) (${store.path})`);
    if (installed || inInventory) evidenced.push(p.name);
  }
  const set = daemon.expect_gpus;
  if (set !== null) return { count: set, why: [`[daemon] expect_gpus = ${set}`], plugins: evidenced };
  return { count: why.length ? 1 : 0, why, plugins: evidenced };
}

/** The problem, in words, when fewer GPUs were found than expected; undefined when there is none. */
export function gpuShortfall(e: GpuExpectation, found: number): string | undefined {
  if (found >= e.count) return undefined;
  if (found === 0) return `no GPU found, though ${e.why.join('; ')}`;
  return (
    `${found} GPU(s) found, ${e.count} expected (${e.why.join('; ')}): a GPU that fell off the ` +
    `bus or failed to initialise is missing (dmesg, lspci)`
  );
}
