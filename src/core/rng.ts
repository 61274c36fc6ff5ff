/** Small deterministic PRNG (mulberry32): a seed reproduces a run (the sim plugin's GPUs, the hostile-user suite's moves). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A 32-bit hash of a string (FNV-1a over its UTF-16 code units, then murmur3's
 * finalizer so that near strings differ in every bit), salted: a stable value
 * from a name (the sim plugin's UUIDs and seed) without node:crypto, whose
 * load (with node:stream, which its hashes are) cost `l9gpu gpus` ~4 ms.
 * Not for anything an adversary chooses.
 */
export function hash32(s: string, salt = 0): number {
  let h = (0x811c9dc5 ^ Math.imul(salt, 0x9e3779b1)) >>> 0;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}
