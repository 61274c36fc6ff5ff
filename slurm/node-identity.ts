/**
 * Which node of Slurm this host is, as the reconciler must know it before it
 * closes anything on Slurm's word: a wrong name matches no job, and closing
 * every binding on that would be wrong.
 */
import type { Logger } from '../src/core/log.js';
import type { Db } from '../src/store/open.js';
import { setMeta } from '../src/store/meta.js';
import { hostname } from 'node:os';
import { LEARNED_NODE_KEY } from './node-name.js';
import type { SlurmClient } from './slurm-client.js';

/** How long an answer about the node's name holds before Slurm is asked again (ms). */
const NAME_HOLDS_MS = 600_000;

export class NodeIdentity {
  /** The node name Slurm confirmed, and until when that answer holds. */
  private confirmed = { name: '', until: 0 };
  private discovered = { until: 0, name: undefined as string | undefined };

  constructor(
    private readonly db: Db,
    private readonly slurm: SlurmClient,
    private readonly log: Logger,
  ) {}

  /** The name to reconcile under; guessed while it is still only the host name, Slurm having named no node for it. */
  async resolve(resolved: { name: string; guessed: boolean }, now: number): Promise<{ node: string; guessed: boolean }> {
    const node = resolved.guessed ? ((await this.discover(now).catch(() => undefined)) ?? resolved.name) : resolved.name;
    return { node, guessed: resolved.guessed && node === resolved.name };
  }

  /**
   * Before any prolog has run here, the name is only the host name's guess:
   * ask Slurm which node has this host as its NodeHostName (`scontrol show
   * node -o`, once per 10 minutes at most), and record it as the hooks would.
   */
  private async discover(now: number): Promise<string | undefined> {
    if (now < this.discovered.until) return this.discovered.name;
    this.discovered = { until: now + NAME_HOLDS_MS, name: undefined };
    const hosts = new Set([hostname(), hostname().split('.')[0]!]);
    const found = (await this.slurm.nodeHosts()).find((n) => hosts.has(n.host));
    if (found) {
      this.discovered.name = found.name;
      setMeta(this.db, LEARNED_NODE_KEY, found.name);
      this.log.info("learned this node's name in Slurm", { node: found.name, host: found.host });
    }
    return this.discovered.name;
  }

  /**
   * Throws unless Slurm knows a node by this name: a wrong name (NodeName is
   * not the host name, and no prolog has run here yet to tell the real one)
   * matches no job, and closing every binding on its word would be wrong.
   */
  async confirm(node: string, now: number): Promise<void> {
    if (this.confirmed.name === node && now < this.confirmed.until) return;
    if (!(await this.slurm.knowsNode(node))) {
      throw new Error(
        `this node's name in Slurm is not "${node}" (Slurm knows no such node): set [slurm] ` +
          `node_name, or wait for a prolog to run here; no binding is closed meanwhile`,
      );
    }
    this.confirmed = { name: node, until: now + NAME_HOLDS_MS };
  }
}
