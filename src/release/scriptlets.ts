/**
 * The package's promises as sh fragments, one text each, shared by the .deb's
 * maintainer scripts, the .rpm's scriptlets and the tarball's install.sh (each
 * package manager calls them at its own moments, with its own arguments):
 * nothing is started, enabled or restarted; the state folder is made once and
 * never changed after (an admin's mode stays); the store is never removed;
 * systemd is asked to reload only where it runs.
 */
import { COMPILE_CACHE, CONFIG_DIR, NODE, PREFIX, STATE_DIR } from './release-tree.js';

/** The state and configuration folders, made when missing (root's, readable by all: users' `l9gpu jobs` reach the daemon's socket there; the store file itself is 0600). */
export const MAKE_DIRS = `for d in ${STATE_DIR} ${CONFIG_DIR}; do [ -d "\${DESTDIR:-}$d" ] || install -d -m 0755 "\${DESTDIR:-}$d"; done`;

/**
 * The compile cache (bin/run.js, slurm/hook-run, bin/code-cache.cjs): emptied, since the files
 * it was made from were replaced, and filled again as root for the commands users type: Node's
 * own for bin/run.js by `--version`, the light bundle's by one read-only `jobs` (without a
 * store it fails, still having compiled what the commands share: the configuration), which
 * each other command starts from until root has run it. The hooks fill their own at the
 * first job.
 */
export const FILL_COMPILE_CACHE = `rm -rf ${COMPILE_CACHE}/*
${NODE} ${PREFIX}/bin/run.js --version >/dev/null 2>&1 || true
${NODE} ${PREFIX}/bin/run.js jobs --limit 1 >/dev/null 2>&1 || true`;

export const EMPTY_COMPILE_CACHE = `rm -rf ${COMPILE_CACHE}/*`;

/** systemd re-reads the unit files, where systemd runs (not in a chroot, an image being built, a container). */
export const DAEMON_RELOAD = 'if [ -d /run/systemd/system ]; then systemctl daemon-reload >/dev/null 2>&1 || true; fi';

/** Before removal: the daemon runs from the files about to go. */
export const STOP_DAEMON = 'if [ -d /run/systemd/system ]; then systemctl stop l9gpu >/dev/null 2>&1 || true; fi';

export const INSTALLED = `l9gpu installed in ${PREFIX}; nothing was started. Next: ${CONFIG_DIR}/l9gpu.ini (every key: ${PREFIX}/docs/l9gpu.example.ini), systemctl enable --now l9gpu, l9gpu doctor.`;
export const UPGRADED_RUNNING = 'if [ -d /run/systemd/system ] && systemctl is-active --quiet l9gpu 2>/dev/null; then echo "l9gpu upgraded: the daemon running now is the old one until systemctl restart l9gpu"; fi';
export const REMOVED = `l9gpu removed; kept: ${STATE_DIR} (the job store) and ${CONFIG_DIR}`;
