/**
 * A job's run time from its record: by the monotonic clock where the hooks
 * (or the daemon) stamped both ends on this boot, else by the wall clock,
 * never negative. A wall clock stepped during the job (NTP at boot, a VM
 * migrated) moves the wall times by the step: an hour's job read 3 h, or
 * -57 min, before the records kept a monotonic time (src/core/clock.ts).
 */
import { elapsedMs, stampNow, type Stamp } from '../core/clock.js';

/** The time columns of a jobs row (the monotonic ones: schema 9; absent or null in older rows). */
export interface JobTimes {
  start_time: number | null;
  end_time: number | null;
  start_mono?: number | null;
  end_mono?: number | null;
  boot_id?: string | null;
}

/** Seconds from the job's start to its end (a running job: to `now`); null without a start. */
export function jobElapsedS(row: JobTimes, now: Stamp = stampNow()): number | null {
  if (row.start_time === null) return null;
  const boot = row.boot_id ?? '';
  const start: Stamp = { wall: row.start_time, mono: row.start_mono ?? null, boot };
  const end: Stamp = row.end_time === null ? now : { wall: row.end_time, mono: row.end_mono ?? null, boot };
  return Math.round(elapsedMs(start, end) / 1000);
}
