/**
 * The .deb: the release tree under /opt/l9gpu, `l9gpu` on PATH, the unit in
 * /lib/systemd/system, and maintainer scripts that check Node before anything
 * is unpacked and never start, enable or restart the daemon by themselves (a
 * rollout decides when; the Ansible role's handlers do it). Removing the package
 * keeps the store and the configuration: a job history is not a cache.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { nodeCheckFunction } from './node-check.js';
import { treeKiB, type BuildInfo } from './release-tree.js';

export const PREFIX = '/opt/l9gpu';
export const STATE_DIR = '/var/lib/l9gpu';
export const CONFIG_DIR = '/etc/l9gpu';

const DEB_ARCH: Record<string, string> = { x64: 'amd64', arm64: 'arm64', ppc64: 'ppc64el', s390x: 's390x' };

export function debArch(info: BuildInfo): string {
  const arch = info.platform.split('-')[1] ?? '';
  const deb = DEB_ARCH[arch];
  if (!info.platform.startsWith('linux-') || !deb) throw new Error(`no Debian architecture for ${info.platform}: build the .deb on a Linux amd64, arm64, ppc64el or s390x machine`);
  return deb;
}

function control(info: BuildInfo, installedKiB: number): string {
  return `Package: ${info.name}
Version: ${info.version}
Architecture: ${debArch(info)}
Maintainer: l9gpu developers <noreply@l9gpu.invalid>
Installed-Size: ${installedKiB}
Depends: libc6 (>= 2.28), libstdc++6 (>= 10)
Section: admin
Priority: optional
Description: GPU telemetry agent for HPC clusters (Slurm first)
 One daemon per GPU node samples every GPU (NVIDIA NVML, AMD amd-smi, Intel
 Gaudi hl-smi) and the host, attributes each point to its Slurm job or
 Kubernetes pod, and exports OpenTelemetry metrics (OTLP, Prometheus pull,
 stdout, file, webhook). Per-job GPU reports with \`l9gpu jobs\`.
 .
 Needs Node.js ${info.nodeVersion.split('.')[0]}.x (>= ${info.nodeMin}) at /usr/bin/node or $L9GPU_NODE, checked before
 unpacking. Built from commit ${info.commit}. Nothing is started or enabled on
 install: configure /etc/l9gpu/l9gpu.ini, then systemctl enable --now l9gpu.
`;
}

function preinst(info: BuildInfo): string {
  return `#!/bin/sh
set -e
${nodeCheckFunction(info)}
case "$1" in
  install|upgrade)
    if [ "\${L9GPU_SKIP_NODE_CHECK:-}" = 1 ]; then
      echo "l9gpu: Node.js check skipped (L9GPU_SKIP_NODE_CHECK=1): run ${PREFIX}/bin/check-node once Node.js is there" >&2
    else
      l9gpu_check_node || exit 1
    fi ;;
esac
exit 0
`;
}

const POSTINST = `#!/bin/sh
set -e
if [ "$1" = configure ]; then
  # root's, readable by all: users' \`l9gpu jobs\` reach the daemon's socket there (the store file itself is 0600)
  install -d -m 0755 -o root -g root ${STATE_DIR} ${CONFIG_DIR}
  if [ -d /run/systemd/system ]; then systemctl daemon-reload >/dev/null 2>&1 || true; fi
  if [ -z "$2" ]; then
    echo "l9gpu installed in ${PREFIX}; nothing was started. Next: ${CONFIG_DIR}/l9gpu.ini (every key: ${PREFIX}/docs/l9gpu.example.ini), systemctl enable --now l9gpu, l9gpu doctor."
  elif [ -d /run/systemd/system ] && systemctl is-active --quiet l9gpu 2>/dev/null; then
    echo "l9gpu upgraded from $2: the daemon running now is the old one until systemctl restart l9gpu"
  fi
fi
exit 0
`;

// Removing stops the daemon that runs from the files about to go; an upgrade leaves it running.
const PRERM = `#!/bin/sh
set -e
if [ "$1" = remove ] && [ -d /run/systemd/system ]; then systemctl stop l9gpu >/dev/null 2>&1 || true; fi
exit 0
`;

const POSTRM = `#!/bin/sh
set -e
case "$1" in
  remove)
    if [ -d /run/systemd/system ]; then systemctl daemon-reload >/dev/null 2>&1 || true; fi
    echo "l9gpu removed; kept: ${STATE_DIR} (the job store) and ${CONFIG_DIR}" ;;
  purge)
    rm -f /etc/systemd/system/multi-user.target.wants/l9gpu.service
    rmdir ${CONFIG_DIR} 2>/dev/null || true
    echo "l9gpu purged; the job store in ${STATE_DIR} is kept: delete it by hand if its history is not wanted" ;;
esac
exit 0
`;

const COPYRIGHT = `Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: l9gpu

Files: *
License: Apache-2.0
 On Debian systems the full text is in /usr/share/common-licenses/Apache-2.0.
 The bundled node_modules keep their own licenses, in their folders under ${PREFIX}/node_modules.
`;

/** Lays out the package root around an assembled release tree and builds the .deb; returns its path. */
export function buildDeb(tree: string, work: string, outDir: string, info: BuildInfo): string {
  const root = join(work, 'deb');
  rmSync(root, { recursive: true, force: true });
  mkdirSync(join(root, 'DEBIAN'), { recursive: true });
  cpSync(tree, join(root, PREFIX.slice(1)), { recursive: true, verbatimSymlinks: true });
  mkdirSync(join(root, 'usr/bin'), { recursive: true });
  symlinkSync(`${PREFIX}/bin/run.js`, join(root, 'usr/bin/l9gpu'));
  mkdirSync(join(root, 'lib/systemd/system'), { recursive: true });
  cpSync(join(tree, 'systemd/l9gpu.service'), join(root, 'lib/systemd/system/l9gpu.service'));
  mkdirSync(join(root, 'usr/share/doc/l9gpu'), { recursive: true });
  writeFileSync(join(root, 'usr/share/doc/l9gpu/copyright'), COPYRIGHT);
  const scripts: Record<string, string> = { preinst: preinst(info), postinst: POSTINST, prerm: PRERM, postrm: POSTRM };
  for (const [name, text] of Object.entries(scripts)) {
    writeFileSync(join(root, 'DEBIAN', name), text);
    chmodSync(join(root, 'DEBIAN', name), 0o755);
  }
  writeFileSync(join(root, 'DEBIAN/control'), control(info, treeKiB(root)));
  const out = join(outDir, `${info.name}_${info.version}_${debArch(info)}.deb`);
  mkdirSync(outDir, { recursive: true });
  // xz: what Debian's own archive uses, and every dpkg since 1.15 reads it
  execFileSync('dpkg-deb', ['--root-owner-group', '-Zxz', '--build', root, out], { stdio: ['ignore', 'ignore', 'pipe'] });
  rmSync(root, { recursive: true, force: true });
  return out;
}
