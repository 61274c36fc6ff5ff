/**
 * The two clocks. Schedules, timeouts, rates and durations run on the
 * monotonic clock (CLOCK_MONOTONIC: one per boot, the same for every process
 * of the node, never stepped); the wall clock is only for what is exported
 * and recorded (a point's time, a job's start as people read it).
 *
 * The wall clock steps on real nodes: NTP or chrony at boot, a VM's live
 * migration, a wrong RTC set right. A schedule on Date.now() stops for an hour
 * after a step back of an hour; a duration taken from two wall times is off
 * by the step (or negative). A monotonic time is comparable between
 * processes of one boot (the prolog's and the epilog's, the daemon's and the
 * CLI's), so records carry it with the boot's id and durations come from it
 * where both ends have it.
 */
import { readFileSync } from 'node:fs';

/** Milliseconds on CLOCK_MONOTONIC (since boot, not counting suspend: no HPC node suspends). */
export function monoNow(): number {
  return Number(process.hrtime.bigint() / 1000n) / 1000;
}

let boot: string | undefined;

/** This boot's id (the kernel's random boot_id): monotonic times of two boots are not comparable. */
export function bootId(): string {
  if (boot === undefined) {
    try {
      boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    } catch {
      boot = '';
    }
  }
  return boot;
}

/**
 * The monotonic time of a wall time shortly before now (or after: a
 * controller's clock ahead of this node's), by the offset between the two
 * clocks now: "the job started at T" (Slurm's start, a hook's own clock) gets
 * its monotonic time. Taken from the clocks, not from a caller's `now`: the
 * offset is what matters. null for a moment before this boot.
 */
export function monoAt(wall: number): number | null {
  const m = monoNow() - (Date.now() - wall);
  return m >= 0 ? m : null;
}

/** A moment on both clocks, as a record keeps it. */
export interface Stamp {
  /** Wall clock, ms since the epoch. */
  wall: number;
  /** Monotonic clock, ms (monoNow()), or null where the record has none (older records, another node). */
  mono: number | null;
  /** The boot the monotonic time is of ('' unknown). */
  boot: string;
}

export function stampNow(): Stamp {
  return { wall: Date.now(), mono: monoNow(), boot: bootId() };
}

/**
 * How far apart the two clocks may drift between two moments before the wall
 * clock is taken to have stepped between them: NTP slews by at most 500 ppm
 * (1.8 s over an hour), a step is minutes or hours.
 */
export const STEP_TOLERANCE_MS = 1000;

/**
 * The milliseconds between two moments: the wall clock's, as every record
 * and exported point says them (a figure the store and PromQL both compute
 * agrees to the millisecond), unless the two clocks disagree on it by more
 * than a step's tolerance (the wall clock stepped in between), where both
 * moments have a monotonic time on one boot: then the monotonic clock's.
 * Never negative.
 */
export function gapMs(
  wallA: number,
  wallB: number,
  monoA: number | null | undefined,
  monoB: number | null | undefined,
  sameBoot: boolean,
): number {
  const wall = wallB - wallA;
  if (monoA != null && monoB != null && sameBoot) {
    const mono = monoB - monoA;
    if (Math.abs(wall - mono) > STEP_TOLERANCE_MS) return Math.max(0, mono);
  }
  return Math.max(0, wall);
}

/** Milliseconds from a to b (gapMs of two records' stamps). */
export function elapsedMs(a: Stamp, b: Stamp): number {
  return gapMs(a.wall, b.wall, a.mono, b.mono, a.boot !== '' && a.boot === b.boot);
}

/** A step of the wall clock: how far it went (ms, + forward), seen between two readings. */
export interface ClockStep {
  stepMs: number;
  /** The wall time after the step. */
  wall: number;
}

/**
 * Watches the offset between the wall clock and the monotonic one: it stays
 * put while both run (NTP slews it by at most 500 ppm: 0.5 ms a second), and
 * jumps when the wall clock steps. A jump above the tolerance is a step, said
 * by check() once (the next readings have the new offset).
 */
export class ClockWatch {
  private offset: number | undefined;

  constructor(
    private readonly toleranceMs = 1000,
    private readonly now: () => { wall: number; mono: number } = () => ({ wall: Date.now(), mono: monoNow() }),
  ) {}

  /** The step since the last call, or undefined. */
  check(): ClockStep | undefined {
    const { wall, mono } = this.now();
    const offset = wall - mono;
    const before = this.offset;
    this.offset = offset;
    if (before === undefined || Math.abs(offset - before) <= this.toleranceMs) return undefined;
    return { stepMs: Math.round(offset - before), wall };
  }
}

/** "+2h0m0s", "-59m58s": a step as the log says it. */
export function formatStep(ms: number): string {
  const sign = ms < 0 ? '-' : '+';
  let s = Math.round(Math.abs(ms) / 1000);
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  return `${sign}${h ? `${h}h` : ''}${h || m ? `${m}m` : ''}${s}s`;
}
