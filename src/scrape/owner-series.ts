/**
 * [limits] series_per_user: the series one user's engine processes may put
 * on the node's export, all their endpoints together. Each endpoint's count
 * is the one of its last scrape, so a user's budget is shared the same way
 * every collection (endpoints are scraped concurrently and by several
 * plugins: a per-collection running total would hand it to whichever
 * answered first).
 */
import type { BudgetLedger } from '../core/limits.js';
import type { PageHold } from './fetch-page.js';

/** A page's share of its owner's bytes: given back once the page is read (or failed). */
export interface OwnerHold extends PageHold {
  /** Whether a take() was refused. */
  readonly refused: boolean;
  release(): void;
}

export class OwnerSeries {
  private readonly last = new Map<string, { owner: string; n: number }>();
  /** Bytes of each owner's pages being read now ([limits] page_bytes_per_user): N engines must not hold N pages. */
  private readonly held = new Map<string, number>();

  /**
   * A page's hold on its owner's bytes. `ownerOf` is asked at the first bytes (undefined: no user's, no bound):
   * finding the process behind a port may walk /proc, and the request must not wait for it.
   */
  hold(ownerOf: () => string | undefined, max: number): OwnerHold {
    let mine = 0;
    let owner: string | undefined | null = null;
    const h = {
      refused: false,
      get what(): string {
        return `${owner}'s ${max} bytes of pages read at once ([limits] page_bytes_per_user)`;
      },
      take: (n: number): boolean => {
        if (owner === null) owner = ownerOf();
        if (owner === undefined) return true;
        const now = this.held.get(owner) ?? 0;
        if (now + n > max) {
          h.refused = true;
          return false;
        }
        this.held.set(owner, now + n);
        mine += n;
        return true;
      },
      release: (): void => {
        if (owner === null || owner === undefined) return;
        const left = (this.held.get(owner) ?? 0) - mine;
        mine = 0;
        if (left > 0) this.held.set(owner, left);
        else this.held.delete(owner);
      },
    };
    return h;
  }

  /** What `owner` may still take on `endpoint`: the budget less what their other endpoints took at their last scrape. */
  left(endpoint: string, owner: string, budget: number): number {
    let used = 0;
    for (const [k, v] of this.last) if (k !== endpoint && v.owner === owner) used += v.n;
    return Math.max(0, budget - used);
  }

  took(endpoint: string, owner: string, n: number): void {
    this.last.set(endpoint, { owner, n });
  }

  forget(endpoint: string): void {
    this.last.delete(endpoint);
  }
}

// one per agent, as the ledger is: every engine plugin's endpoints count against the same users
const perAgent = new WeakMap<BudgetLedger, OwnerSeries>();

export function ownerSeriesOf(budgets: BudgetLedger): OwnerSeries {
  let s = perAgent.get(budgets);
  if (!s) perAgent.set(budgets, (s = new OwnerSeries()));
  return s;
}
