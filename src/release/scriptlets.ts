/**
 * The package's promises as sh fragments, one text each, shared by the .deb's
 * maintainer scripts, the .rpm's scriptlets and the tarball's install.sh (each
 * package manager calls them at its own moments, with its own arguments):
 * nothing is started or enabled; a daemon already running is restarted onto the
 * new version once its files are all in place, where systemd runs; the state
 * folder is made once and never changed after (an admin's mode stays); the
 * store is kept on removal and removed only by a purge, which says so first.
 *
 * One version runs at a time: the daemon and the hooks run from a release
 * folder (releases/<version>-<n>, hard links to the package's files, made once
 * they are all in place) that `current` names, switched by one rename. The files
 * the package manager replaces one by one are new inodes: the old release's
 * links keep the old ones, so the running daemon's later imports and workers
 * find its own version until it is restarted, and a hook starting during the
 * upgrade runs one whole version (the entry scripts go through `current`:
 * release-tree.ts).
 */
import { COMPILE_CACHE, CONFIG_DIR, NODE, PREFIX, STATE_DIR } from './release-tree.js';

export const UNIT_NAME = 'l9gpu.service';
export const LOG_DIR = '/var/log/l9gpu';
/** The release folders and the link naming the one the daemon and the hooks run. */
export const RELEASES = `${PREFIX}/releases`;
export const CURRENT = `${PREFIX}/current`;
/** Where the hooks are named from: the package's entries, and the Ansible role's wrappers that call them. */
const HOOK_PATHS = `${PREFIX}/slurm/|/etc/slurm/l9gpu/`;
export const HOOKS = ['prolog', 'epilog', 'ctld-epilog'] as const;

/** The state and configuration folders, made when missing (root's, readable by all: users' `l9gpu jobs` reach the daemon's socket there;
 * the
 * store file itself is 0600). */
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
export const STOP_DAEMON = `if [ -d /run/systemd/system ]; then systemctl stop ${UNIT_NAME} >/dev/null 2>&1 || true; fi`;

/**
 * A new release folder of the files now in place (hard links: no data copied; a copy where the
 * filesystem has none), switched to by one rename of `current`; then the daemon, where systemd
 * runs it, restarted onto it (try-restart: one that is stopped stays stopped), and the folders
 * no process runs from any more removed. Without systemd nothing restarts the daemon, and the
 * release it may still run from is kept until the next switch. Never fails the install.
 * $1: the version.
 */
export const SWITCH_RELEASE = `l9gpu_switch_release() {
  top="\${DESTDIR:-}${PREFIX}"
  mkdir -p "$top/releases"
  n=$$
  while [ -e "$top/releases/$1-$n" ] || [ -e "$top/releases/$1-$n.partial" ]; do n=$((n + 1)); done
  rel="$1-$n"
  part="$top/releases/$rel.partial"
  mkdir -m 0755 "$part"
  for e in "$top"/*; do
    case \${e##*/} in releases|current|current.new|cache) continue ;; esac
    cp -al "$e" "$part/" 2>/dev/null || { rm -rf "$part/\${e##*/}"; cp -a "$e" "$part/"; }
  done
  mkdir -m 0755 "$part/cache"
  mv "$part" "$top/releases/$rel"
  before=$(readlink "$top/current" 2>/dev/null || true)
  ln -sfn "releases/$rel" "$top/current.new"
  mv -T "$top/current.new" "$top/current"
  keep=
  if [ -z "\${DESTDIR:-}" ] && [ -d /run/systemd/system ]; then
    systemctl daemon-reload >/dev/null 2>&1 || true
    was=
    systemctl is-active --quiet ${UNIT_NAME} 2>/dev/null && was=1
    if systemctl try-restart ${UNIT_NAME} >/dev/null 2>&1; then
      [ -z "$was" ] || echo "l9gpu: the running daemon was restarted onto $1"
    else
      echo "l9gpu: the daemon did not restart onto $1: systemctl status ${UNIT_NAME}" >&2
      keep=\${before#releases/}
    fi
  else
    # no service manager here to restart a daemon running from the release before: it stays
    keep=\${before#releases/}
  fi
  for r in "$top"/releases/*; do
    case \${r##*/} in "$rel"|"$keep"|'*') ;; *) rm -rf "$r" ;; esac
  done
  return 0
}`;

/** After the package's files are gone: the release folders and the link to them, which are no files of the package's. */
export const REMOVE_RELEASES = `rm -rf ${RELEASES} ${CURRENT} ${CURRENT}.new`;

/**
 * Which of slurm.conf's hook settings (and the files it Includes, and the prolog.d/epilog.d
 * links beside it) still name l9gpu's hooks: printed one a line, nothing when none does.
 * slurm.conf is [slurm] slurm_conf where the configuration names one, else Slurm's own places.
 */
export const SLURM_NAMES_HOOKS =
  `l9gpu_slurm_names_hooks() {
  conf=$(sed -n -e '/^[[:space:]]*\\[slurm\\]/,/^[[:space:]]*\\[/{' \\
    -e 's/^[[:space:]]*slurm_conf[[:space:]]*=[[:space:]]*\\([^;#[:space:]]*\\).*/\\1/p' -e '}' ${CONFIG_DIR}/l9gpu.ini 2>/dev/null |
    tail -n 1)
  for c in $conf /etc/slurm/slurm.conf /etc/slurm-llnl/slurm.conf; do
    [ -f "$c" ] || continue
    d=\${c%/*}
    inc=$(sed -n 's/^[[:space:]]*[Ii][Nn][Cc][Ll][Uu][Dd][Ee][[:space:]]\\{1,\\}\\([^[:space:]]*\\).*/\\1/p' "$c" | while read -r i; ` +
  `do case $i in /*) echo "$i" ;; *) echo "$d/$i" ;; esac; done)
    for f in "$c" $inc; do
      [ -f "$f" ] && grep -iE '^[[:space:]]*(Prolog|Epilog|PrologSlurmctld|EpilogSlurmctld)[[:space:]]*=.*(${HOOK_PATHS})' "$f" | ` +
  `sed "s|^|$f: |"
    done
    for l in "$d"/prolog.d/* "$d"/epilog.d/*; do
      [ -L "$l" ] && case $(readlink "$l") in *l9gpu*) echo "$l -> $(readlink "$l")" ;; esac
    done
    return 0
  done
  return 0
}`;

/** What is left at the hooks' paths once the package is removed while slurm.conf names them: a job's prolog must not fail the job. */
export const HOOK_SHIM = `#!/bin/sh
# l9gpu was removed while slurm.conf still named its hooks: this stand-in exits 0 so that jobs run.
# Remove the l9gpu lines from slurm.conf (scontrol reconfigure), then dpkg --purge l9gpu removes it.
exit 0
`;

/** After removal (the package's files gone): shims at the hooks' paths while slurm.conf names them, with a warning saying what to change.
 * */
export const LEAVE_SHIMS =
  `named=$(l9gpu_slurm_names_hooks)
if [ -n "$named" ]; then
  mkdir -p ${PREFIX}/slurm
  for h in ${HOOKS.join(' ')}; do
    printf '%s' '${HOOK_SHIM}' > ${PREFIX}/slurm/$h
    chmod 0755 ${PREFIX}/slurm/$h
  done
  echo "l9gpu: WARNING: slurm.conf still names l9gpu's hooks:" >&2
  echo "$named" | sed 's/^/  /' >&2
  echo "l9gpu: ${PREFIX}/slurm/{${HOOKS.join(',')}} are left as stand-ins that exit 0, so jobs still start; remove those lines ` +
  `(scontrol reconfigure), then purge removes the stand-ins" >&2
fi`;

/** On purge: the stand-ins go only once slurm.conf no longer names them. */
export const PURGE_SHIMS = `if [ -e ${PREFIX}/slurm/prolog ]; then
  named=$(l9gpu_slurm_names_hooks)
  if [ -n "$named" ]; then
    echo "l9gpu: WARNING: slurm.conf still names l9gpu's hooks; the stand-ins in ${PREFIX}/slurm that exit 0 are kept:" >&2
    echo "$named" | sed 's/^/  /' >&2
  else
    for h in ${HOOKS.join(' ')}; do rm -f ${PREFIX}/slurm/$h; done
    rmdir ${PREFIX}/slurm ${PREFIX} 2>/dev/null || true
  fi
fi`;

/** On purge: what the package and its daemon made, said before it goes. A store elsewhere ([daemon] state_dir) is the admin's. */
export const PURGE_DATA =
  `if [ -e ${STATE_DIR} ] || [ -e ${LOG_DIR} ]; then
  echo "l9gpu purge: removing the job store ${STATE_DIR}/l9gpu.db with its -wal and -shm, the rest of ${STATE_DIR} (hooks.log, the ` +
  `jobs socket, the lock) and the logs in ${LOG_DIR}"
  rm -rf ${STATE_DIR} ${LOG_DIR}
fi`;

/**
 * Before anything is unpacked: a store whose schema is newer than this version's (a newer
 * l9gpu migrated it) refuses the install with the reason; L9GPU_ALLOW_NEWER_STORE=1 installs
 * anyway. The schema (PRAGMA user_version) is read by the installed runtime where it is still
 * there (it reads the WAL too, where a migration may still be), else from the file's header
 * (offset 60), which a WAL left by a daemon that did not close may hold back.
 * $1: this version's schema; $2: this version.
 */
export const SCHEMA_CHECK =
  `l9gpu_schema_check() {
  dir=$(sed -n -e '/^[[:space:]]*\\[daemon\\]/,/^[[:space:]]*\\[/{' \\
    -e 's/^[[:space:]]*state_dir[[:space:]]*=[[:space:]]*\\([^;#[:space:]]*\\).*/\\1/p' -e '}' ${CONFIG_DIR}/l9gpu.ini 2>/dev/null |
    tail -n 1)
  db="\${dir:-${STATE_DIR}}/l9gpu.db"
  [ -s "$db" ] || return 0
  have=
  if [ -x ${NODE} ] && [ -d ${PREFIX}/node_modules/better-sqlite3 ]; then
    have=$(${NODE} -e 'const D = require(process.argv[1]); const db = new D(process.argv[2], { readonly: true, fileMustExist: true ` +
  `}); process.stdout.write(String(db.pragma("user_version", { simple: true })))' ${PREFIX}/node_modules/better-sqlite3 "$db" ` +
  `2>/dev/null) || have=
  fi
  how="read by the installed l9gpu"
  case $have in ''|*[!0-9]*)
    set -- "$1" "$2" $(od -An -tu1 -j60 -N4 "$db" 2>/dev/null)
    [ $# -eq 6 ] || return 0
    have=$(( ($3 << 24) + ($4 << 16) + ($5 << 8) + $6 ))
    how="from its header"
    [ -s "$db-wal" ] && how="from its header, which the WAL beside it may hold back" ;;
  esac
  [ "$have" -gt "$1" ] || return 0
  if [ "\${L9GPU_ALLOW_NEWER_STORE:-}" = 1 ]; then
    echo "l9gpu $2: installing over a job store of schema $have (newer than this version's $1), as L9GPU_ALLOW_NEWER_STORE=1 says: ` +
  `the daemon must keep it read-only" >&2
    return 0
  fi
  echo "l9gpu $2: refusing to install: the job store $db has schema $have ($how), newer than this version's $1: a newer l9gpu ` +
  `migrated it, and this one would not attribute jobs with it. Install a version with schema $have or newer, or move the store ` +
  `aside, or set L9GPU_ALLOW_NEWER_STORE=1 to install anyway." >&2
  return 1
}`;

export const INSTALLED =
  `l9gpu installed in ${PREFIX}; nothing was started. Next: ${CONFIG_DIR}/l9gpu.ini (every ` +
  `key: ${PREFIX}/docs/l9gpu.example.ini), systemctl enable --now l9gpu, l9gpu doctor.`;
export const REMOVED = `l9gpu removed; kept: ${STATE_DIR} (the job store) and ${CONFIG_DIR}`;
