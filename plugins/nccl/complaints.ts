/**
 * What the nccl plugin has already said about users' files. The dump folders are in users' hands: one user can make
 * thousands of hostile files or folders, and each would be a log line and a budget hit of its own. So each problem
 * is said once per folder (or counted once per folder), every line is rate-limited per folder or per user, and what
 * is remembered to do so is bounded, so that the same user cannot grow the memory instead.
 */
import { LogRate, type BudgetLedger, type Limits } from '../../src/core/limits.js';
import type { Logger } from '../../src/core/log.js';
import { clip, printable } from '../../src/core/printable.js';
import type { InspectorFolder } from './locate.js';

/** Files remembered as refused or over a budget (by key): past it the memory starts again. */
export const MAX_NOTED = 65_536;
/** (reason, folder) pairs remembered as said: past it the memory starts again. */
const MAX_TOLD = 4096;

/** What a collection gathered to say, per folder: one line each (not one per file). */
export interface Said {
  user: string;
  rejected: number;
  first?: string;
  skippedBytes: number;
}

/** A few host names from file names (a user's text), for a line. */
export const otherHostNames = (hosts: readonly string[]) => hosts.map((h) => printable(clip(h, 64))).join(',');

export class Complaints {
  /**
   * One allowance for every line the plugin limits (per folder, per user, per file's bandwidth): LogRate bounds the
   * sources it keeps, and one user's sources should not buy a second allowance.
   */
  readonly rate: LogRate;
  /** Folders left out for being past their owner's budget, counted once each. */
  private readonly crowded = new Set<string>();
  /** (reason, folder) already said: a folder's hostile files are one line, not one per file. */
  private readonly told = new Set<string>();
  private said = new Map<string, Said>();

  constructor(
    private readonly log: Logger,
    private readonly budgets: BudgetLedger,
    private readonly limits: Limits,
  ) {
    this.rate = new LogRate(this.limits.logLinesPerMinute);
  }

  /** A new collection: what the last one gathered was said by its tell(). */
  begin(): void {
    this.said = new Map();
  }

  /** What the collection has to say about a folder. */
  note(folder: InspectorFolder, user: string): Said {
    let s = this.said.get(folder.path);
    if (!s) this.said.set(folder.path, (s = { user, rejected: 0, skippedBytes: 0 }));
    return s;
  }

  /** One line per folder with something to say, at most log_lines_per_minute a minute for each. */
  tell(): void {
    for (const [folder, s] of this.said) {
      if (!s.rejected && !s.skippedBytes) continue;
      const a = this.rate.allow(folder);
      if (!a.ok) {
        this.budgets.hit(
          'log_lines_per_minute',
          s.user,
          `nccl: more than ${this.limits.logLinesPerMinute} lines a minute about ${printable(folder)}: the rest held back`,
        );
        continue;
      }
      this.log.warn('nccl: inspector output not read', {
        folder: printable(folder),
        ...(s.rejected ? { lines_rejected: s.rejected, first: printable(clip(s.first ?? '', 200)) } : {}),
        ...(s.skippedBytes ? { bytes_skipped: s.skippedBytes } : {}),
        ...(a.held ? { lines_held_back: a.held } : {}),
      });
    }
  }

  /**
   * Once per (reason, folder), and at most log_lines_per_minute a minute per user: one user's thousands of folders
   * are not thousands of lines.
   */
  tellOnce(user: string, why: string, folder: string, msg: string, fields: Record<string, unknown>): void {
    const k = `${why}\0${folder}`;
    if (this.told.has(k)) return;
    const a = this.rate.allow(`user\0${user}`);
    if (!a.ok) {
      this.budgets.hit(
        'log_lines_per_minute',
        user,
        `nccl: more than ${this.limits.logLinesPerMinute} lines a minute about the folders of uid ${user}: the rest held back`,
      );
      return;
    }
    if (this.told.size >= MAX_TOLD) this.told.clear();
    this.told.add(k);
    this.log.warn(msg, { ...fields, ...(a.held ? { lines_held_back: a.held } : {}) });
  }

  /** Whether a crowded folder (by key) is to be counted: only the first time it is seen, so that each is one hit. */
  firstCrowded(key: string): boolean {
    if (this.crowded.has(key)) return false;
    if (this.crowded.size >= MAX_NOTED) this.crowded.clear();
    this.crowded.add(key);
    return true;
  }
}
