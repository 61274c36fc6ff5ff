/**
 * The daemon's health facts on disk (<state_dir>/health.json) and the
 * admin's clears (<state_dir>/health-clears.json). A plain JSON file, not
 * the SQLite store: health runs on every node, with or without a scheduler,
 * and `l9gpu health --nhc` (run by slurmd every few minutes) reads it without
 * loading the native store module. The daemon writes it whole, through a
 * rename, so a reader sees one version or the next.
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { HealthFacts } from './rules.js';
import { bootId, monoNow } from '../core/clock.js';

export const HEALTH_FILE = 'health.json';
export const CLEARS_FILE = 'health-clears.json';
const VERSION = 1;

export interface HealthFile {
  version: number;
  /** ms: when the daemon wrote it (wall clock). */
  written: number;
  /** The same moment on the monotonic clock, and its boot (absent in files of older daemons). */
  written_mono?: number;
  boot?: string;
  /** The daemon's collection interval, ms: a reader judges staleness by it. */
  interval_ms: number;
  gpus: HealthFacts[];
}

/**
 * The admin's clears. On disk one JSON object: the Xid clears as UUID -> ms at the top (the
 * first version's whole format, still read), the forgotten GPUs under "forgotten".
 */
export interface Clears {
  /** GPU UUID (or "*" for every GPU) -> ms: Xid events up to then are cleared. */
  xids: Record<string, number>;
  /**
   * GPU UUID -> the last collection that carried it, for a GPU cleared while it was missing
   * (removed, or fewer GPUs monitored): forgotten, by `l9gpu health` and the daemon, until a
   * collection carries it again.
   */
  forgotten: Record<string, number>;
}

const numbers = (o: object) => Object.fromEntries(Object.entries(o).filter(([, v]) => typeof v === 'number')) as Record<string, number>;

/** The whole file or none of it for a reader: written aside, then renamed over. */
function writeJson(path: string, value: unknown): void {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(value), { mode: 0o644 });
  renameSync(tmp, path);
}

export function writeHealthFile(dir: string, f: Omit<HealthFile, 'version'>): void {
  writeJson(join(dir, HEALTH_FILE), { version: VERSION, ...f });
}

/** The file, undefined when there is none; an unreadable or foreign file is an error naming it. */
export function readHealthFile(dir: string): HealthFile | undefined {
  const path = join(dir, HEALTH_FILE);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(`cannot read ${path}: ${(e as Error).message}`);
  }
  let f: HealthFile;
  try {
    f = JSON.parse(text) as HealthFile;
  } catch (e) {
    throw new Error(`${path} is not JSON (${(e as Error).message})`);
  }
  if (!f || f.version !== VERSION || !Array.isArray(f.gpus) || typeof f.written !== 'number')
    throw new Error(`${path}: not an l9gpu health file of version ${VERSION}`);
  return f;
}

/**
 * How long ago the file was written (ms): by the monotonic clock when the
 * file has this boot's time (a step of the wall clock since it was written
 * moves neither); else by the wall clock, where a file from the future (the
 * clock stepped back since, or another node's clock) is not fresh: its age is
 * unknown, and Infinity says so.
 */
export function healthFileAge(f: HealthFile, now: number, mono: number = monoNow(), boot: string = bootId()): number {
  if (typeof f.written_mono === 'number' && f.boot && f.boot === boot) return Math.max(0, mono - f.written_mono);
  const age = now - f.written;
  return age < -5_000 ? Infinity : Math.max(0, age);
}

export function readClears(dir: string): Clears {
  const path = join(dir, CLEARS_FILE);
  try {
    const c = JSON.parse(readFileSync(path, 'utf8')) as unknown;
    if (!c || typeof c !== 'object' || Array.isArray(c)) throw new Error('not a JSON object');
    const f = (c as { forgotten?: unknown }).forgotten;
    return { xids: numbers(c), forgotten: f && typeof f === 'object' && !Array.isArray(f) ? numbers(f) : {} };
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { xids: {}, forgotten: {} };
    throw new Error(`${path}: ${(e as Error).message}`);
  }
}

export function writeClears(dir: string, c: Clears): void {
  writeJson(join(dir, CLEARS_FILE), { ...c.xids, forgotten: c.forgotten });
}

/** A GPU an admin cleared while it was missing, and no collection has carried since. */
export function isForgotten(f: HealthFacts, clears: Clears): boolean {
  const at = clears.forgotten[f.uuid];
  return at !== undefined && f.seen <= at;
}

/** When Xid events of a GPU stop counting: the latest of the window's start, the boot and an admin's clear. */
export function xidSince(uuid: string, now: number, windowMs: number, bootMs: number, clears: Clears): number {
  return Math.max(now - windowMs, bootMs, clears.xids[uuid] ?? 0, clears.xids['*'] ?? 0);
}

/** The machine's boot time (ms), from /proc/stat btime; 0 where there is none. */
export function bootTime(): number {
  try {
    const m = /^btime (\d+)$/m.exec(readFileSync('/proc/stat', 'utf8'));
    return m ? Number(m[1]) * 1000 : 0;
  } catch {
    return 0;
  }
}
