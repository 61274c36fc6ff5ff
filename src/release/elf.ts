/**
 * What an ELF file asks of the system it runs on: the libraries it names
 * (DT_NEEDED) and the symbol versions it needs from each (.gnu.version_r), read
 * from the file itself, the way the dynamic linker does before it runs
 * anything. The packager refuses a tree with a file that needs more than the
 * oldest system the package promises (RHEL 8: glibc 2.28, gcc 8's libstdc++),
 * and the package test reads every file of the built packages with it.
 */
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';

export interface ElfNeeds {
  /** DT_NEEDED: the shared libraries, by soname. */
  readonly needed: string[];
  /** Every version needed, with the library that must define it. */
  readonly versions: { file: string; name: string }[];
}

const SHT_DYNAMIC = 6;
const SHT_GNU_VERNEED = 0x6ffffffe;
const DT_NEEDED = 1;

/** The file's needs, or undefined when it is not an ELF file. 64-bit little-endian only (x86_64, aarch64). */
export function readElfNeeds(path: string): ElfNeeds | undefined {
  const magic = Buffer.alloc(4);
  const fd = openSync(path, 'r');
  try {
    if (readSync(fd, magic, 0, 4, 0) < 4 || magic.readUInt32BE(0) !== 0x7f454c46) return undefined;
  } finally {
    closeSync(fd);
  }
  const b = readFileSync(path);
  if (b[4] !== 2 || b[5] !== 1) throw new Error(`${path}: an ELF file that is not 64-bit little-endian`);
  const shoff = Number(b.readBigUInt64LE(0x28));
  const shentsize = b.readUInt16LE(0x3a);
  const shnum = b.readUInt16LE(0x3c);
  const sections = Array.from({ length: shnum }, (_, i) => {
    const o = shoff + i * shentsize;
    return {
      type: b.readUInt32LE(o + 4),
      offset: Number(b.readBigUInt64LE(o + 0x18)),
      size: Number(b.readBigUInt64LE(o + 0x20)),
      link: b.readUInt32LE(o + 0x28),
      info: b.readUInt32LE(o + 0x2c),
    };
  });
  const str = (section: number, at: number): string => {
    const s = sections[section];
    if (!s) throw new Error(`${path}: string table ${section} missing`);
    const start = s.offset + at;
    return b.toString('latin1', start, b.indexOf(0, start));
  };
  const needed: string[] = [];
  const versions: { file: string; name: string }[] = [];
  for (const s of sections) {
    if (s.type === SHT_DYNAMIC) {
      for (let o = s.offset; o + 16 <= s.offset + s.size; o += 16) {
        if (b.readBigInt64LE(o) === BigInt(DT_NEEDED)) needed.push(str(s.link, Number(b.readBigUInt64LE(o + 8))));
      }
    } else if (s.type === SHT_GNU_VERNEED) {
      // Elf64_Verneed { vn_version, vn_cnt, vn_file, vn_aux, vn_next }, each with vn_cnt Elf64_Vernaux { vna_hash, vna_flags, vna_other,
      // vna_name, vna_next }
      let vn = s.offset;
      for (let i = 0; i < s.info; i++) {
        const file = str(s.link, b.readUInt32LE(vn + 4));
        let aux = vn + b.readUInt32LE(vn + 8);
        for (let j = 0; j < b.readUInt16LE(vn + 2); j++) {
          versions.push({ file, name: str(s.link, b.readUInt32LE(aux + 8)) });
          aux += b.readUInt32LE(aux + 12);
        }
        vn += b.readUInt32LE(vn + 12);
      }
    }
  }
  return { needed, versions };
}

/**
 * The oldest system the package runs on: RHEL 8 (glibc 2.28, libstdc++ and
 * libgcc_s of gcc 8). Its base libraries, and per versioned interface the
 * newest version it defines.
 */
export const OLDEST_SYSTEM = {
  name: 'RHEL 8 (glibc 2.28, gcc 8 libstdc++)',
  libraries: [
    'libc.so.6',
    'libm.so.6',
    'libdl.so.2',
    'libpthread.so.0',
    'librt.so.1',
    'libstdc++.so.6',
    'libgcc_s.so.1',
    'ld-linux-x86-64.so.2',
    'ld-linux-aarch64.so.1',
  ],
  newest: { GLIBC: '2.28', GLIBCXX: '3.4.25', CXXABI: '1.3.11', GCC: '7.0.0' } as Record<string, string>,
};

const compare = (a: string, b: string): number => {
  const x = a.split('.').map(Number);
  const y = b.split('.').map(Number);
  for (let i = 0; i < Math.max(x.length, y.length); i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) - (y[i] ?? 0);
  return 0;
};

/** What of these needs the oldest system lacks, one line each; empty when it has all. */
export function beyondOldest(needs: ElfNeeds): string[] {
  const out: string[] = [];
  for (const lib of needs.needed)
    if (!OLDEST_SYSTEM.libraries.includes(lib)) out.push(`needs ${lib}, which ${OLDEST_SYSTEM.name} does not have`);
  for (const { file, name } of needs.versions) {
    const m = /^([A-Z]+)_([0-9.]+)$/.exec(name);
    const newest = m ? OLDEST_SYSTEM.newest[m[1]!] : undefined;
    if (!m || !newest) out.push(`needs ${name} from ${file}, a version ${OLDEST_SYSTEM.name} is not known to have`);
    else if (compare(m[2]!, newest) > 0) out.push(`needs ${name} from ${file}; ${OLDEST_SYSTEM.name} has ${m[1]}_${newest} at most`);
  }
  return out;
}
