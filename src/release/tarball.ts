/**
 * The .tar.gz for distributions without dpkg: the same release tree, with an
 * install.sh that does what the .deb's files and maintainer scripts do (Node
 * check, /opt/l9gpu, the unit, the state folder) and, like them, starts nothing.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONFIG_DIR, PREFIX, STATE_DIR } from './debian.js';
import { nodeCheckFunction } from './node-check.js';
import { artifactBase, type BuildInfo } from './release-tree.js';

function installScript(info: BuildInfo): string {
  return `#!/bin/sh
# Installs this l9gpu release as the .deb does: ${PREFIX}, /usr/local/bin/l9gpu, the systemd unit,
# ${STATE_DIR} and ${CONFIG_DIR}. Starts and enables nothing. Run as root from the unpacked folder.
# DESTDIR=/some/root installs into another root (an image being built); L9GPU_SKIP_NODE_CHECK=1
# skips the Node.js check (run ${PREFIX}/bin/check-node once Node.js is there).
set -e
here=$(cd "$(dirname "$0")" && pwd)
dest=\${DESTDIR:-}
${nodeCheckFunction(info)}
if [ "\${L9GPU_SKIP_NODE_CHECK:-}" != 1 ]; then l9gpu_check_node || exit 1; fi
# the new tree beside the old one, then swapped: a hook running meanwhile finds one whole tree
mkdir -p "$dest${PREFIX.slice(0, PREFIX.lastIndexOf('/')) || '/'}"
rm -rf "$dest${PREFIX}.new"
cp -a "$here" "$dest${PREFIX}.new"
rm -f "$dest${PREFIX}.new/install.sh"
if [ -d "$dest${PREFIX}" ]; then mv "$dest${PREFIX}" "$dest${PREFIX}.old"; fi
mv "$dest${PREFIX}.new" "$dest${PREFIX}"
rm -rf "$dest${PREFIX}.old"
mkdir -p "$dest/usr/local/bin" "$dest/etc/systemd/system"
ln -sf ${PREFIX}/bin/run.js "$dest/usr/local/bin/l9gpu"
cp "$dest${PREFIX}/systemd/l9gpu.service" "$dest/etc/systemd/system/l9gpu.service"
install -d -m 0755 "$dest${STATE_DIR}" "$dest${CONFIG_DIR}"
if [ -z "$dest" ] && [ -d /run/systemd/system ]; then systemctl daemon-reload; fi
echo "l9gpu ${info.version} installed in $dest${PREFIX}; nothing was started. Next: ${CONFIG_DIR}/l9gpu.ini, systemctl enable --now l9gpu, l9gpu doctor."
`;
}

/** Builds <name>-<version>-<platform>.tar.gz with one top folder of that name; returns its path. */
export function buildTarball(tree: string, work: string, outDir: string, info: BuildInfo): string {
  const base = artifactBase(info);
  const top = join(work, base);
  rmSync(top, { recursive: true, force: true });
  cpSync(tree, top, { recursive: true, verbatimSymlinks: true });
  writeFileSync(join(top, 'install.sh'), installScript(info));
  chmodSync(join(top, 'install.sh'), 0o755);
  mkdirSync(outDir, { recursive: true });
  const out = join(outDir, `${base}.tar.gz`);
  execFileSync('tar', ['-C', work, '--owner=0', '--group=0', '--numeric-owner', '-czf', out, base]);
  rmSync(top, { recursive: true, force: true });
  return out;
}
