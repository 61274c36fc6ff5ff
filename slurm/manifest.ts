/**
 * The Slurm attribution provider as the composition root sees it: detection
 * (a slurm.conf on this node), creation (the transform plus the reconciler's
 * timer), doctor's section, and the jobs on each GPU for `l9gpu gpus`.
 *
 * Every command imports the root, so this file stays light: the transform,
 * the reconciler and the store (better-sqlite3's native module) load only
 * when Slurm attribution is used.
 */
import { existsSync } from 'node:fs';
import type { AttributionManifest, AttributionProvider } from '../src/core/attribution.js';
import { readSection } from '../src/core/config/read.js';
import { DAEMON_SECTION } from '../src/core/config/sections.js';
import { getMeta } from '../src/store/meta.js';
import { SLURM_SECTION } from './config.js';
import { SLURM_METRIC } from './metrics.js';
import { LEARNED_NODE_KEY, resolveNodeName, slurmNodeName } from './node-name.js';
import { gresConfFor, slurmConfPath } from './paths.js';
import { AUTODETECT_VENDOR, readGresLayout, type GresLayout } from './gres.js';
import type { SlurmStoreStatus } from './status.js';
import type { OpenBinding } from '../src/store/jobs.js';
import type { Attributes } from '../src/core/metrics/model.js';

/**
 * How GRES indices become UUIDs on this node, and whether l9gpu can be sure:
 * a wrong UUID is worse than none, so where it cannot, bindings stay
 * "gres:<i>" and doctor says why.
 */
function gresOrderLine(gresConf: string, node: string, st: SlurmStoreStatus): { line: string; unsure: boolean } {
  let layout: GresLayout;
  try {
    layout = readGresLayout(gresConf, node);
  } catch (e) {
    return { line: `GRES order unknown: ${(e as Error).message}; GPUs named by index in the job environment stay gres:<i>`, unsure: true };
  }
  const unresolved = [...new Set(st.openBindings.filter((b) => b.gpuUuid.startsWith('gres:')).map((b) => `job ${b.jobId} ${b.gpuUuid}`))];
  const tail = unresolved.length ? `; unsure, kept as GRES indices: ${unresolved.join(', ')}` : '';
  if (layout.autodetect) {
    const inv = st.inventoryByVendor[AUTODETECT_VENDOR[layout.autodetect]!] ?? { gpus: 0, withoutPci: 0 };
    const why =
      inv.gpus === 0
        ? `no ${AUTODETECT_VENDOR[layout.autodetect]} GPU in the inventory yet`
        : inv.withoutPci
          ? `${inv.withoutPci} of ${inv.gpus} GPU(s) have no PCI bus id, so the order is unknown`
          : '';
    return {
      line: `GRES order: AutoDetect=${layout.autodetect}, slurmd numbers GPUs by PCI bus id${
        why ? `; unsure: ${why}, GRES indices ` + `stay gres:<i>` : ` (${inv.gpus} GPU(s) in the inventory)`
      }${tail}`,
      unsure: !!why || unresolved.length > 0,
    };
  }
  return {
    line: `GRES order: ${layout.devices.length} gpu device(s) in gres.conf File=/MultipleFiles= order${tail}`,
    unsure: unresolved.length > 0,
  };
}

const NODE_FROM_HOST_NAME = ': not learned yet from a prolog or from Slurm; the reconciler checks it with Slurm before closing anything';

export const slurmAttribution: AttributionManifest = {
  name: 'slurm',
  description: 'Slurm jobs: bindings written by the prolog/epilog hooks, reconciled with squeue/scontrol/sacct',
  sections: [SLURM_SECTION],
  metrics: Object.values(SLURM_METRIC).map((d) => d.name),

  detect(cfg, env) {
    const conf = slurmConfPath(cfg, env);
    return conf ? { ok: true, detail: `Slurm configured at ${conf}` } : { ok: false, detail: 'no slurm.conf found' };
  },

  async create({ config: cfg, log, env, store, labelLength, budgets, jobLabels, readOnly }): Promise<AttributionProvider> {
    const [{ SlurmAttribution }, { Reconciler }] = await Promise.all([import('./attribution.js'), import('./reconciler.js')]);
    const slog = log.child('slurm');
    const s = readSection(cfg, SLURM_SECTION);
    const reconciler = new Reconciler({
      db: store,
      node: () => {
        const r = resolveNodeName(cfg, env, getMeta(store, LEARNED_NODE_KEY));
        return { name: r.name, guessed: r.source === 'host name' };
      },
      gresConf: gresConfFor(cfg, env),
      binDir: s.bin_dir,
      slurmConf: slurmConfPath(cfg, env),
      commandTimeoutMs: s.command_timeout * 1000,
      source: s.reconcile_source,
      recheckMs: s.job_recheck * 1000,
      graceMs: s.reconcile_grace * 1000,
      log: slog,
    });
    const transform = new SlurmAttribution(store, slog, () => reconciler.lastOk || undefined, { labelLength, budgets, jobLabels });
    // beside the daemon that owns the store: the bindings it keeps, no reconcile writing into them
    if (readOnly) return { name: transform.name, attribute: (b) => transform.attribute(b), status: () => transform.status() };
    let running: Promise<void> | undefined;
    const tick = (): Promise<void> => {
      running ??= reconciler
        .reconcileOnce()
        .then(
          () => {},
          () => {},
        ) // logged by the reconciler; the bindings stay as they are
        .finally(() => {
          running = undefined;
          transform.invalidate();
        });
      return running;
    };
    // after a start or a reboot, bindings of jobs that died with the node are still open: reconcile before the
    // first batch is attributed, so no sample is credited to them; Slurm may be slow or down, so wait boundedly
    let bound: NodeJS.Timeout | undefined;
    await Promise.race([tick(), new Promise<void>((r) => (bound = setTimeout(r, Math.min(5, s.command_timeout) * 1000)))]);
    clearTimeout(bound);
    // jittered: 10,000 nodes started together by one Ansible run must not ask slurmctld in the same second forever
    const every = s.reconcile_interval * 1000;
    let timer: NodeJS.Timeout | undefined;
    let closed = false;
    const next = (): void => {
      if (!closed) timer = setTimeout(() => void tick().finally(next), every * (0.9 + 0.2 * Math.random()));
    };
    next();
    return {
      name: transform.name,
      attribute: (b) => transform.attribute(b),
      status: () => transform.status(),
      collectSelf: (out) => transform.collectSelf(out),
      close: () => {
        closed = true;
        clearTimeout(timer);
      },
    };
  },

  async doctor(cfg, env) {
    const { slurmStoreStatus } = await import('./status.js');
    const st = slurmStoreStatus(readSection(cfg, DAEMON_SECTION).state_dir);
    const { name: node, source: nodeSource } = resolveNodeName(cfg, env, st.learnedNodeName);
    const conf = slurmConfPath(cfg, env);
    const gres = gresConfFor(cfg, env);
    // a reconcile error newer than the last success: Slurm did not answer the daemon lately
    const down = !!st.lastReconcileError && (!st.lastReconcileOk || st.lastReconcileError.slice(0, 24) > st.lastReconcileOk);
    const gresOrder = gresOrderLine(gres, node, st);
    const lines = [
      `node ${node} (from ` +
        `${nodeSource}${nodeSource === 'host name' ? NODE_FROM_HOST_NAME : ''}); ` +
        `slurm.conf ${conf}; gres.conf ${gres}${existsSync(gres) ? '' : ' (not found: GRES indices cannot be mapped to UUIDs)'}`,
      gresOrder.line,
      `${st.openBindings.length} open binding(s)${
        st.openBindings.length ? `: ${[...new Set(st.openBindings.map((b) => `job ` + `${b.jobId}`))].join(', ')}` : ''
      }; ` + `${st.gpusInInventory} GPU(s) in the inventory`,
      `reconciler: last answer from Slurm ${st.lastReconcileOk ?? 'never'}${
        st.lastReconcileError ? `; last error ` + `${st.lastReconcileError}` : ''
      }${down ? '  <- Slurm is not answering: the last known bindings are kept' : ''}`,
      ...(st.lastHookLine ? [`last hook log line: ${st.lastHookLine}`] : []),
      ...(st.error ? [`store: ${st.error}`] : []),
    ];
    return {
      lines,
      json: { node, node_source: nodeSource, slurm_conf: conf, gres_conf: gres, gres_order: gresOrder.line, ...st },
      problems: (down ? 1 : 0) + (gresOrder.unsure ? 1 : 0),
    };
  },

  async jobsByGpu(cfg) {
    // the open bindings alone, not doctor's status of the store (hooks.log, the inventory, the reconciler's marks)
    const [{ openStoreReadOnly }, { openBindings }, { jobAttributes }] = await Promise.all([
      import('../src/store/open.js'),
      import('../src/store/jobs.js'),
      import('./job-attributes.js'),
    ]);
    const m = new Map<string, Attributes[]>();
    let bindings: OpenBinding[] = [];
    try {
      const db = openStoreReadOnly(readSection(cfg, DAEMON_SECTION).state_dir);
      try {
        bindings = openBindings(db);
      } finally {
        db.close();
      }
    } catch {
      // no store yet, or a user's run (the store is root's): no jobs to show
    }
    for (const b of bindings) {
      let l = m.get(b.gpuUuid);
      if (!l) m.set(b.gpuUuid, (l = []));
      l.push(jobAttributes(b));
    }
    return m;
  },

  nodeName: (cfg, env, store) => slurmNodeName(cfg, env, getMeta(store, LEARNED_NODE_KEY)),
};
