/**
 * The .deb: the release tree under /opt/l9gpu (its own Node.js included),
 * `l9gpu` on PATH, the unit in /lib/systemd/system, and maintainer scripts
 * that never start or enable the daemon, and restart one that runs onto the
 * new version once its files are in place (postinst, as systemd-packaged
 * daemons do). preinst refuses a store newer than this version's schema.
 * Removing the package keeps the store and the configuration (a job history is
 * not a cache); purging removes them, saying so. What the
 * system must have (glibc 2.28, libstdc++) is in Depends, for dpkg to check
 * before anything is unpacked.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONFIG_DIR, layOut, PREFIX, treeKiB, type BuildInfo } from './release-tree.js';
import {
  DAEMON_RELOAD,
  EMPTY_COMPILE_CACHE,
  FILL_COMPILE_CACHE,
  INSTALLED,
  LEAVE_SHIMS,
  MAKE_DIRS,
  PURGE_DATA,
  PURGE_SHIMS,
  REMOVE_RELEASES,
  REMOVED,
  SCHEMA_CHECK,
  SLURM_NAMES_HOOKS,
  STOP_DAEMON,
  SWITCH_RELEASE,
  UNIT_NAME,
} from './scriptlets.js';
import { GLIBC_MIN } from './system-check.js';

export const DEB_UNIT = '/lib/systemd/system/l9gpu.service';

const DEB_ARCH: Record<string, string> = { 'linux-x64': 'amd64', 'linux-arm64': 'arm64' };

export function debArch(info: BuildInfo): string {
  const deb = DEB_ARCH[info.platform];
  if (!deb) throw new Error(`no Debian architecture for ${info.platform}: build the .deb on a Linux amd64 or arm64 machine`);
  return deb;
}

/** The package's description, the .deb's and the .rpm's. */
export function description(info: BuildInfo): string {
  return `One daemon per GPU node samples every GPU (NVIDIA NVML, AMD amd-smi, Intel
Gaudi hl-smi) and the host, attributes each point to its Slurm job or
Kubernetes pod, and exports OpenTelemetry metrics (OTLP, Prometheus pull,
stdout, file, webhook). Per-job GPU reports with \`l9gpu jobs\`.

Runs on its own Node.js ${info.nodeVersion} (${PREFIX}/node): the node needs no
Node.js, npm or network. Built from commit ${info.commit}. Nothing is started
or enabled on install: configure ${CONFIG_DIR}/l9gpu.ini, then
systemctl enable --now l9gpu.`;
}

function control(info: BuildInfo, installedKiB: number): string {
  return `Package: ${info.name}
Version: ${info.version}
Architecture: ${debArch(info)}
Maintainer: l9gpu developers <noreply@l9gpu.invalid>
Installed-Size: ${installedKiB}
Depends: libc6 (>= ${GLIBC_MIN.join('.')}), libstdc++6 (>= 8), libgcc-s1 | libgcc1
Section: admin
Priority: optional
Description: GPU telemetry agent for HPC clusters (Slurm first)
${description(info)
  .split('\n')
  .map((l) => ` ${l || '.'}`)
  .join('\n')}
`;
}

/** Before unpacking: a store newer than this version's schema refuses the install (a downgrade below it). */
const preinst = (info: BuildInfo): string => `#!/bin/sh
set -e
${SCHEMA_CHECK}
case "$1" in
  install|upgrade) l9gpu_schema_check ${info.schema} ${info.version} || exit 1 ;;
esac
exit 0
`;

// configure: the files are all in place: the release folder switched to them, the daemon restarted onto it where it runs
const postinst = (info: BuildInfo): string => `#!/bin/sh
set -e
${SWITCH_RELEASE}
if [ "$1" = configure ]; then
  ${MAKE_DIRS}
  ${FILL_COMPILE_CACHE.replace(/\n/g, '\n  ')}
  l9gpu_switch_release ${info.version}
  if [ -z "$2" ]; then
    echo "${INSTALLED}"
  fi
fi
exit 0
`;

// Removing stops the daemon that runs from the files about to go (an upgrade restarts it in postinst),
// and removes what is no file of the package's in its folder: the compile cache, the release folders (the
// hooks' entries then run the package's files, until they go too).
const PRERM = `#!/bin/sh
set -e
if [ "$1" = remove ]; then
  ${STOP_DAEMON}
  ${EMPTY_COMPILE_CACHE}
  ${REMOVE_RELEASES}
fi
exit 0
`;

// remove: the hooks' paths keep a stand-in while slurm.conf names them
const POSTRM = `#!/bin/sh
set -e
${SLURM_NAMES_HOOKS}
case "$1" in
  remove)
    ${LEAVE_SHIMS.replace(/\n/g, '\n    ')}
    ${DAEMON_RELOAD}
    echo "${REMOVED}; purge (dpkg --purge l9gpu) removes the store and the logs" ;;
  purge)
    rm -f /etc/systemd/system/multi-user.target.wants/${UNIT_NAME}
    rmdir ${CONFIG_DIR} 2>/dev/null || true
    ${PURGE_DATA.replace(/\n/g, '\n    ')}
    ${PURGE_SHIMS.replace(/\n/g, '\n    ')}
    echo "l9gpu purged" ;;
esac
exit 0
`;

const COPYRIGHT = `Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: l9gpu

Files: *
License: Apache-2.0
 On Debian systems the full text is in /usr/share/common-licenses/Apache-2.0.
 The bundled node_modules keep their own licenses, in their folders under ${PREFIX}/node_modules;
 the bundled Node.js its own, in ${PREFIX}/node/LICENSE.
`;

/** Lays out the package root around an assembled release tree and builds the .deb; returns its path. */
export function buildDeb(tree: string, work: string, outDir: string, info: BuildInfo, fast = false): string {
  const root = join(work, 'deb');
  layOut(tree, root, DEB_UNIT);
  mkdirSync(join(root, 'DEBIAN'));
  // dpkg keeps an admin's changes to it (and asks, unless told --force-confold as Ansible's apt does)
  writeFileSync(join(root, 'DEBIAN/conffiles'), `${CONFIG_DIR}/l9gpu.ini\n`);
  mkdirSync(join(root, 'usr/share/doc/l9gpu'), { recursive: true });
  writeFileSync(join(root, 'usr/share/doc/l9gpu/copyright'), COPYRIGHT);
  const scripts: Record<string, string> = { preinst: preinst(info), postinst: postinst(info), prerm: PRERM, postrm: POSTRM };
  for (const [name, text] of Object.entries(scripts)) {
    writeFileSync(join(root, 'DEBIAN', name), text);
    chmodSync(join(root, 'DEBIAN', name), 0o755);
  }
  writeFileSync(join(root, 'DEBIAN/control'), control(info, treeKiB(root)));
  const out = join(outDir, `${info.name}_${info.version}_${debArch(info)}.deb`);
  mkdirSync(outDir, { recursive: true });
  // xz: what Debian's own archive uses, and every dpkg since 1.15 reads it (level 1 for the tests' builds: same format, a fifth of the
  // time)
  execFileSync('dpkg-deb', ['--root-owner-group', '-Zxz', `-z${fast ? 1 : 6}`, '--build', root, out], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  rmSync(root, { recursive: true, force: true });
  return out;
}
