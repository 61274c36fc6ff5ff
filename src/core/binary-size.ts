/**
 * Sizes named in binary units ("64MiB", "3MiB", "8B"): the NCCL plugin's
 * message-size buckets and ranges, and the job report that reads them back.
 */
const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

/** A whole number of bytes in the largest unit it is a whole number of. */
export function binarySize(bytes: number): string {
  let u = 0;
  while (u < UNITS.length - 1 && bytes >= 1024 && bytes % 1024 === 0) {
    bytes /= 1024;
    u++;
  }
  return `${bytes}${UNITS[u]}`;
}

/** The bytes a name of binarySize stands for; undefined: not one. */
export function binaryBytes(name: string): number | undefined {
  const m = /^(\d+)(B|KiB|MiB|GiB|TiB|PiB)$/.exec(name);
  return m ? Number(m[1]) * 1024 ** UNITS.indexOf(m[2]!) : undefined;
}
