/**
 * The .tar.gz for distributions without dpkg or rpm: the same release tree
 * (its own Node.js included), with an install.sh that does what the packages'
 * files and scripts do (scriptlets.ts: /opt/l9gpu, the unit, the state folder,
 * nothing started). Whoever unpacked it, what install.sh installs is root's,
 * with the package's modes: the hooks and the daemon run it as root.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { artifactBase, CONFIG_DIR, CONFIG_STUB, PREFIX, type BuildInfo } from './release-tree.js';
import { FILL_COMPILE_CACHE, INSTALLED, MAKE_DIRS, SWITCH_RELEASE } from './scriptlets.js';
import { systemCheckFunction } from './system-check.js';

function installScript(info: BuildInfo): string {
  return (
    `#!/bin/sh
# Installs this l9gpu release as the .deb and the .rpm do: ${PREFIX} (with its own Node.js), /usr/local/bin/l9gpu,
# the systemd unit, the state and configuration folders. Starts and enables nothing. Run as root from the unpacked
# folder, whoever unpacked it: what is installed is copied, root's, with the package's modes, never the unpacked
# files' owner (who could otherwise change what root runs). DESTDIR=/some/root installs into another root.
set -e
if [ "$(id -u)" != 0 ]; then
  echo "l9gpu install.sh: run it as root: the daemon and the Slurm hooks run as root from what it installs" >&2
  exit 1
fi
here=$(cd "$(dirname "$0")" && pwd)
dest=\${DESTDIR:-}
${systemCheckFunction(info)}
l9gpu_check_system || exit 1
# the new tree beside the old one, then swapped: a hook running meanwhile finds one whole tree
mkdir -p "$dest${PREFIX.slice(0, PREFIX.lastIndexOf('/')) || '/'}"
rm -rf "$dest${PREFIX}.new"
cp -R -P "$here" "$dest${PREFIX}.new"
rm -f "$dest${PREFIX}.new/install.sh"
chown -R -h 0:0 "$dest${PREFIX}.new"
chmod -R u=rwX,go=rX "$dest${PREFIX}.new"
# the release folders (the running daemon's among them) go on in the new tree, until the switch below
for k in releases current; do if [ -e "$dest${PREFIX}/$k" ] || [ -L "$dest${PREFIX}/$k" ]; then mv "$dest${PREFIX}/$k" ` +
    `"$dest${PREFIX}.new/$k"; fi; done
if [ -d "$dest${PREFIX}" ]; then mv "$dest${PREFIX}" "$dest${PREFIX}.old"; fi
mv "$dest${PREFIX}.new" "$dest${PREFIX}"
rm -rf "$dest${PREFIX}.old"
mkdir -p "$dest/usr/local/bin" "$dest/etc/systemd/system"
ln -sf ${PREFIX}/bin/run.js "$dest/usr/local/bin/l9gpu"
install -m 0644 -o 0 -g 0 "$dest${PREFIX}/systemd/l9gpu.service" "$dest/etc/systemd/system/l9gpu.service"
${MAKE_DIRS}
# the configuration is the admin's once there: never replaced
[ -e "$dest${CONFIG_DIR}/l9gpu.ini" ] || cat > "$dest${CONFIG_DIR}/l9gpu.ini" <<'INI'
${CONFIG_STUB}INI
if [ -z "$dest" ]; then
  ${FILL_COMPILE_CACHE.replace(/\n/g, '\n  ')}
fi
${SWITCH_RELEASE}
l9gpu_switch_release ${info.version}
echo "\${dest:+$dest: }${INSTALLED}"
`
  );
}

/** Builds <name>-<version>-<platform>.tar.gz with one top folder of that name; returns its path. */
export function buildTarball(tree: string, work: string, outDir: string, info: BuildInfo, fast = false): string {
  const base = artifactBase(info);
  const top = join(work, base);
  rmSync(top, { recursive: true, force: true });
  cpSync(tree, top, { recursive: true, verbatimSymlinks: true });
  writeFileSync(join(top, 'install.sh'), installScript(info));
  chmodSync(join(top, 'install.sh'), 0o755);
  mkdirSync(outDir, { recursive: true });
  const out = join(outDir, `${base}.tar.gz`);
  execFileSync('tar', [
    '-C',
    work,
    '--owner=0',
    '--group=0',
    '--numeric-owner',
    '-cf',
    out,
    `--use-compress-program=gzip -${fast ? 1 : 6}`,
    base,
  ]);
  rmSync(top, { recursive: true, force: true });
  return out;
}
