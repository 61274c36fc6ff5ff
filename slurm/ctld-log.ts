/**
 * <state_dir>/ctld-epilog.log, size-capped: past `max` bytes the file is
 * renamed to ctld-epilog.log.1 (the one before it goes) and a new one
 * begun, so the log of a controller ending thousands of jobs a day stays
 * under twice the cap. Lines are appended with O_APPEND, whole: the epilogs'
 * lines (a dropped job) and the worker's do not cut into each other.
 */
import { appendFileSync, renameSync, statSync } from 'node:fs';
import { join } from 'node:path';

export const LOG_FILE = 'ctld-epilog.log';
export const LOG_MAX_BYTES = 1 << 20;

export type LogLine = (msg: string) => void;

/** A logger appending timestamped lines to the state dir's log; where it cannot be written, to stderr. */
export function ctldLog(stateDir: string, max = LOG_MAX_BYTES): LogLine {
  const path = join(stateDir, LOG_FILE);
  return (msg: string) => {
    const line = `${new Date().toISOString()} ${msg}\n`;
    try {
      let size = 0;
      try {
        size = statSync(path).size;
      } catch {
        // no log yet
      }
      if (size > 0 && size + line.length > max) renameSync(path, `${path}.1`);
      appendFileSync(path, line, { mode: 0o640 });
    } catch {
      // SlurmUser may not write the state folder: the line goes to slurmctld's log instead
      process.stderr.write(line);
    }
  };
}
