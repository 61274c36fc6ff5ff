/**
 * Logging to stderr, one line per event, so stdout stays clean for the
 * stdout sink and journald gets greppable key=value lines.
 */
import { redactText } from './redact.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /** Logs at most once per key for the life of the logger (e.g. NOT_SUPPORTED per GPU). */
  once(key: string, level: LogLevel, msg: string, fields?: Record<string, unknown>): void;
  child(component: string): Logger;
}

function fmt(v: unknown): string {
  const s = v instanceof Error ? v.message : typeof v === 'string' ? v : JSON.stringify(v);
  return s !== undefined && /[\s"=]/.test(s) ? JSON.stringify(s) : String(s);
}

let stderrGuarded = false;
/** A closed stderr (journald restarted, `2>&1 | head`) must not kill the daemon with EPIPE. */
function writeStderr(line: string): void {
  if (!stderrGuarded) {
    stderrGuarded = true;
    process.stderr.on('error', () => {});
  }
  process.stderr.write(line);
}

export function createLogger(
  level: LogLevel = 'info',
  write: (line: string) => void = writeStderr,
  component = 'l9gpu',
  seen: Set<string> = new Set(),
): Logger {
  const min = ORDER[level];
  const log = (lvl: LogLevel, msg: string, fields?: Record<string, unknown>): void => {
    if (ORDER[lvl] < min) return;
    let line = `${new Date().toISOString()} ${lvl} [${component}] ${msg}`;
    if (fields) for (const [k, v] of Object.entries(fields)) if (v !== undefined) line += ` ${k}=${fmt(v)}`;
    // an error or a URL in a line may spell a credential (a backend echoing the Authorization it got)
    write(redactText(line) + '\n');
  };
  return {
    debug: (m, f) => log('debug', m, f),
    info: (m, f) => log('info', m, f),
    warn: (m, f) => log('warn', m, f),
    error: (m, f) => log('error', m, f),
    once(key, lvl, msg, f) {
      if (seen.has(key)) return;
      seen.add(key);
      log(lvl, msg, f);
    },
    child: (c) => createLogger(level, write, `${component}/${c}`, seen),
  };
}
