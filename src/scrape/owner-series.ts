/**
 * [limits] series_per_user: the series one user's engine processes may put
 * on the node's export, all their endpoints together. Each endpoint's count
 * is the one of its last scrape, so a user's budget is shared the same way
 * every collection (endpoints are scraped concurrently and by several
 * plugins: a per-collection running total would hand it to whichever
 * answered first).
 */
import type { BudgetLedger } from '../core/limits.js';

export class OwnerSeries {
  private readonly last = new Map<string, { owner: string; n: number }>();

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
