/**
 * Cutting a user-controlled attribute value, apart from the ledger and its
 * registry: the Slurm hook (a bundle that loads neither) cuts job names too.
 */
/** A user-controlled attribute value cut to the bound, marked so that a reader sees it was cut. */
export function boundLabel(v: string, max: number): string {
  if (v.length <= max) return v;
  // a surrogate pair is not split: the cut value stays valid UTF-8
  let end = max - 3;
  const c = v.charCodeAt(end - 1);
  if (c >= 0xd800 && c <= 0xdbff) end--;
  return `${v.slice(0, end)}...`;
}
