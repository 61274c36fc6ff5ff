/**
 * `l9gpu health --nhc --drain` run as slurmd's HealthCheckProgram: Slurm does
 * nothing with a health check's exit status, the program drains the node
 * itself (slurm.conf(5), HealthCheckProgram). Like NHC, it drains with a
 * reason of its own prefix and resumes only a node that it drained: a node an
 * admin drained for something else stays drained.
 */
import type { Config } from '../src/core/config/load.js';
import { slurmCommand } from './tools.js';

export const DRAIN_PREFIX = 'l9gpu:';
/** slurmctld keeps any length, but sinfo -R and scontrol lines stay readable below this. */
const MAX_REASON = 200;

export interface NodeState {
  /** e.g. IDLE+DRAIN, MIXED+DRAIN, DOWN+DRAIN+NOT_RESPONDING */
  state: string;
  reason: string | null;
}

/** State= and Reason= of `scontrol show node -o <node>` (one line; Reason runs to the [user@time] stamp or the next key). */
export function parseNodeState(output: string): NodeState {
  const text = output.trim();
  const state = /(?:^|\s)State=(\S+)/.exec(text)?.[1];
  if (!state) throw new Error(`scontrol show node: no State= in "${text.slice(0, 120)}"`);
  const reason = /(?:^|\s)Reason=(.*?)(?: \[[^\]]*\])?(?:\s+\w+=|$)/.exec(text)?.[1]?.trim() ?? null;
  return { state, reason: reason && reason !== '(null)' ? reason : null };
}

export const isDrained = (s: NodeState): boolean => /(^|\+)DRAIN/.test(s.state);

export async function nodeState(cfg: Config, node: string): Promise<NodeState> {
  return parseNodeState(await slurmCommand(cfg, 'scontrol', ['show', 'node', '-o', node]));
}

/** Drains the node with the reason (prefixed), unless it is drained already (then its state): what the node does next is Slurm's. */
export async function drainNode(cfg: Config, node: string, reason: string): Promise<'drained' | NodeState> {
  const s = await nodeState(cfg, node);
  if (isDrained(s)) return s;
  const r = `${DRAIN_PREFIX} ${reason}`.replace(/\s+/g, ' ').slice(0, MAX_REASON);
  await slurmCommand(cfg, 'scontrol', ['update', `NodeName=${node}`, 'State=DRAIN', `Reason=${r}`]);
  return 'drained';
}

/** Resumes the node only if l9gpu drained it. */
export async function resumeIfOurs(cfg: Config, node: string): Promise<boolean> {
  const s = await nodeState(cfg, node);
  if (!isDrained(s) || !s.reason?.startsWith(DRAIN_PREFIX)) return false;
  await slurmCommand(cfg, 'scontrol', ['update', `NodeName=${node}`, 'State=RESUME']);
  return true;
}
