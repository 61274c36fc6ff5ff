/** Waits for a condition (not for a time): polls until it holds or the deadline passes. */
export async function waitFor<T>(
  what: string,
  fn: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 15_000,
  everyMs = 25,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  const late = Symbol('late');
  for (;;) {
    try {
      // a check that never settles (a socket nobody closes) must not outlive the deadline: the wait would hang the file
      let timer: NodeJS.Timeout | undefined;
      const v = await Promise.race([
        Promise.resolve(fn()),
        new Promise<typeof late>((r) => (timer = setTimeout(() => r(late), Math.max(0, deadline - Date.now()) + everyMs))),
      ]).finally(() => clearTimeout(timer));
      if (v === late) throw new Error('the check itself did not settle');
      if (v !== undefined && v !== false) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
