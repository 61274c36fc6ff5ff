/**
 * Which GPUs a process is on, learnt from the per-process points a GPU plugin
 * emits (NVML's running compute processes: gpu.process.memory.used with
 * process.pid and gpu.uuid). A source that knows a process but not its GPU
 * (an NCCL Inspector log is per pid) asks here. An entry not confirmed for
 * `ttlMs` is forgotten: the process ended, or left the GPU.
 */
import { GPU } from './metrics/gpu-metrics.js';
import type { Point } from './metrics/model.js';

export class PidGpus {
  private readonly byPid = new Map<number, Map<string, number>>();
  private lastPrune = 0;

  constructor(private readonly ttlMs = 300_000) {}

  learn(points: readonly Point[], now: number): void {
    for (let i = 0; i < points.length; i++) {
      const p = points[i]!;
      if (p.metric !== GPU.procMem) continue;
      const pid = p.attributes['process.pid'];
      const uuid = p.attributes['gpu.uuid'];
      if (typeof pid !== 'number' || typeof uuid !== 'string') continue;
      let m = this.byPid.get(pid);
      if (!m) this.byPid.set(pid, (m = new Map()));
      m.set(uuid, now);
    }
    if (now - this.lastPrune > this.ttlMs) {
      this.lastPrune = now;
      for (const [pid, m] of this.byPid) {
        for (const [u, t] of m) if (now - t > this.ttlMs) m.delete(u);
        if (!m.size) this.byPid.delete(pid);
      }
    }
  }

  /** The process's GPUs, sorted; empty when none is known. */
  of(pid: number, now: number): string[] {
    const m = this.byPid.get(pid);
    if (!m) return [];
    return [...m]
      .filter(([, t]) => now - t <= this.ttlMs)
      .map(([u]) => u)
      .sort();
  }
}
