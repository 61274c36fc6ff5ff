/**
 * The .rpm for RHEL-family nodes (RHEL, Rocky, Alma 8 to 10): the same files
 * as the .deb (release-tree.ts, the link on PATH, the stub configuration), the
 * unit in the EL path (/usr/lib/systemd/system), and scriptlets made of the
 * same fragments as the .deb's maintainer scripts (scriptlets.ts): nothing
 * started, a running daemon restarted onto the new release in %posttrans (once
 * the old version's files are gone too), a store newer than this version's
 * schema refused in %pre, the store kept on erase and upgrade (the state folder
 * is no file of the package's: rpm never resets its mode). rpmbuild's own dependency generator reads the ELF files and requires
 * exactly the glibc and libstdc++ versions they need (at most RHEL 8's:
 * elf.ts), for dnf to check before anything is unpacked. Debian's rpm builds it.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { description } from './debian.js';
import { CONFIG_DIR, layOut, PREFIX, type BuildInfo } from './release-tree.js';
import {
  DAEMON_RELOAD,
  EMPTY_COMPILE_CACHE,
  FILL_COMPILE_CACHE,
  INSTALLED,
  LEAVE_SHIMS,
  MAKE_DIRS,
  REMOVE_RELEASES,
  REMOVED,
  SCHEMA_CHECK,
  SLURM_NAMES_HOOKS,
  STOP_DAEMON,
  SWITCH_RELEASE,
} from './scriptlets.js';
import { machineOf } from './system-check.js';

export const RPM_UNIT = '/usr/lib/systemd/system/l9gpu.service';

/** The spec: %install copies the laid-out root; no build, no stripping, no debug package (the binaries are the tested ones). */
function spec(info: BuildInfo, staged: string, fast: boolean): string {
  return `Name: ${info.name}
Version: ${info.version}
Release: 1
Summary: GPU telemetry agent for HPC clusters (Slurm first)
License: Apache-2.0
BuildArch: ${machineOf(info)}
%global __os_install_post %{nil}
%global debug_package %{nil}
%global _build_id_links none
%global _binary_payload ${fast ? 'w1.xzdio' : 'w6.xzdio'}

%description
${description(info)}

%install
cp -a ${staged}/. %{buildroot}/

%pre
# $1: 1 on install, 2 on upgrade; the installed version's files are still there
${SCHEMA_CHECK}
l9gpu_schema_check ${info.schema} ${info.version} || exit 1
exit 0

%post
# $1: 1 on install, 2 on upgrade
${MAKE_DIRS}
${FILL_COMPILE_CACHE}
${DAEMON_RELOAD}
if [ "$1" -eq 1 ]; then echo "${INSTALLED}"; fi
exit 0

%posttrans
# after the old version's files are gone too: the release folder switched to the new files, the daemon restarted onto it
${SWITCH_RELEASE}
l9gpu_switch_release ${info.version}
exit 0

%preun
# $1: 0 on erase, 1 on upgrade (the new version's %posttrans restarts the daemon)
if [ "$1" -eq 0 ]; then
  ${STOP_DAEMON}
  ${EMPTY_COMPILE_CACHE}
  ${REMOVE_RELEASES}
fi
exit 0

%postun
# erase: the hooks' paths keep a stand-in while slurm.conf names them
if [ "$1" -eq 0 ]; then
  ${SLURM_NAMES_HOOKS}
  ${LEAVE_SHIMS}
  ${DAEMON_RELOAD}
  echo "${REMOVED}"
fi
exit 0

%files
%defattr(-,root,root,-)
${PREFIX}
/usr/bin/l9gpu
${RPM_UNIT}
%dir ${CONFIG_DIR}
%config(noreplace) ${CONFIG_DIR}/l9gpu.ini
`;
}

/** Builds <name>-<version>-1.<machine>.rpm around an assembled release tree; returns its path. */
export function buildRpm(tree: string, work: string, outDir: string, info: BuildInfo, fast = false): string {
  const top = join(work, 'rpmbuild');
  const staged = join(work, 'rpm-root');
  layOut(tree, staged, RPM_UNIT);
  rmSync(top, { recursive: true, force: true });
  mkdirSync(top, { recursive: true });
  writeFileSync(join(top, 'l9gpu.spec'), spec(info, staged, fast));
  try {
    execFileSync(
      'rpmbuild',
      [
        '-bb',
        '--quiet',
        '--define',
        `_topdir ${top}`,
        '--define',
        `_rpmdir ${join(top, 'out')}`,
        '--define',
        '_build_name_fmt %%{NAME}-%%{VERSION}-%%{RELEASE}.%%{ARCH}.rpm',
        '--target',
        machineOf(info),
        join(top, 'l9gpu.spec'),
      ],
      {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
        maxBuffer: 64 << 20,
      },
    );
  } catch (e) {
    const r = e as { stderr?: string; message: string };
    throw new Error(`rpmbuild failed (Debian: apt-get install rpm): ${r.stderr || r.message}`);
  }
  const [built] = readdirSync(join(top, 'out'));
  if (!built) throw new Error('rpmbuild made no package');
  mkdirSync(outDir, { recursive: true });
  const out = join(outDir, built);
  renameSync(join(top, 'out', built), out);
  rmSync(top, { recursive: true, force: true });
  rmSync(staged, { recursive: true, force: true });
  return out;
}
