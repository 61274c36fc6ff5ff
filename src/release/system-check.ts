/**
 * The package brings its own Node.js (/opt/l9gpu/node): what a node must
 * have is the machine and the C library that runtime and the native modules
 * were built for (x86_64 or aarch64, glibc 2.28 or newer: elf.ts holds every
 * file to that). Two POSIX sh texts from here: the check of the system
 * (the tarball's install.sh runs it before copying anything; the .deb's
 * Depends and the .rpm's generated Requires say the same to dpkg and rpm),
 * and bin/check-node, which runs the bundled runtime itself and loads the
 * native modules, for an admin who wonders after an OS upgrade. A version
 * that does not parse is a failure, never a pass.
 */
/** What of a build the checks name (release-tree.ts's BuildInfo extends it). */
export interface PackageTarget {
  readonly version: string;
  /** linux-x64 or linux-arm64. */
  readonly platform: string;
  /** The bundled Node.js and its ABI (process.versions.modules), which better-sqlite3 is built for. */
  readonly nodeVersion: string;
  readonly nodeAbi: string;
}

const MACHINE: Record<string, string> = { 'linux-x64': 'x86_64', 'linux-arm64': 'aarch64' };
/** The oldest glibc the package runs on (elf.ts's OLDEST_SYSTEM). */
export const GLIBC_MIN = [2, 28] as const;

export function machineOf(info: PackageTarget): string {
  const m = MACHINE[info.platform];
  if (!m) throw new Error(`no package for ${info.platform}: build on Linux x86_64 or aarch64`);
  return m;
}

/** The check as a sh function `l9gpu_check_system`. Exit status 0: this system runs the package. */
export function systemCheckFunction(info: PackageTarget): string {
  const [needMajor, needMinor] = GLIBC_MIN;
  return (
    `# l9gpu ${info.version} for ${machineOf(info)} with glibc ${needMajor}.${needMinor} or newer (its own Node.js ` +
    `${info.nodeVersion} is in the package).
l9gpu_check_system() {
  machine=$(uname -m)
  if [ "$machine" != ${machineOf(info)} ]; then
    echo "l9gpu: this package is built for ${machineOf(info)}; this machine is \${machine:-unknown}" >&2
    return 1
  fi
  libc=$(getconf GNU_LIBC_VERSION 2>/dev/null) || libc=
  version=\${libc#glibc }
  major=\${version%%.*}; minor=\${version#*.}; minor=\${minor%%.*}
  case "$libc" in glibc\\ [0-9]*.[0-9]*) ;; *) major= ;; esac
  case "$major:$minor" in
    :*|*:|*[!0-9:]*)
      echo "l9gpu: needs glibc ${needMajor}.${needMinor} or newer; this system's C library is not one (getconf GNU_LIBC_VERSION says ` +
    `\\"\${libc:-nothing}\\")" >&2
      return 1 ;;
  esac
  if [ "$major" -lt ${needMajor} ] || { [ "$major" -eq ${needMajor} ] && [ "$minor" -lt ${needMinor} ]; }; then
    echo "l9gpu: needs glibc ${needMajor}.${needMinor} or newer; this system has $version" >&2
    return 1
  fi
  return 0
}
`
  );
}

/**
 * bin/check-node: the system check, then the bundled runtime run for real:
 * its version and ABI must be the build's, and better-sqlite3 and koffi must load.
 */
export function checkNodeScript(info: PackageTarget): string {
  const expect = `${info.nodeVersion} ${info.nodeAbi}`;
  return (
    `#!/bin/sh
# Says whether this system runs the l9gpu installed here, with the Node.js it ships (exit 0), or what is wrong (exit 1).
${systemCheckFunction(info)}
here=$(cd "\${0%/*}/.." && pwd)
node="$here/node/bin/node"
l9gpu_check_system || exit 1
found=$("$node" -e '
  const r = require("node:module").createRequire(process.argv[1] + "/");
  const db = new (r("better-sqlite3"))(":memory:");
  r("koffi");
  process.stdout.write(process.versions.node + " " + process.versions.modules + " sqlite " + db.prepare("select sqlite_version() ` +
    `v").get().v);
' "$here" 2>&1) || {
  echo "l9gpu: the bundled Node.js ($node) does not run here: $found" >&2
  exit 1
}
case "$found" in
  "${expect} sqlite "*) echo "l9gpu: the bundled Node.js ${info.nodeVersion} runs here, with better-sqlite3 (SQLite \${found##* }) ` +
    `and koffi" ;;
  *) echo "l9gpu: $node says \\"$found\\"; this package was built with Node.js ${info.nodeVersion} (ABI ${info.nodeAbi}): reinstall ` +
    `the package" >&2; exit 1 ;;
esac
`
  );
}
