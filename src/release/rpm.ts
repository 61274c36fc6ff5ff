/**
 * The .rpm for RHEL-family nodes (RHEL, Rocky, Alma 8 to 10): the same files
 * as the .deb (release-tree.ts, the link on PATH, the stub configuration), the
 * unit in the EL path (/usr/lib/systemd/system), and scriptlets made of the
 * same fragments as the .deb's maintainer scripts (scriptlets.ts): nothing
 * started, the store kept on erase and upgrade (the state folder is no file of
 * the package's: rpm never resets its mode), daemon-reload only where systemd
 * runs. rpmbuild's own dependency generator reads the ELF files and requires
 * exactly the glibc and libstdc++ versions they need (at most RHEL 8's:
 * elf.ts), for dnf to check before anything is unpacked. Debian's rpm builds it.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { description } from './debian.js';
import { CONFIG_DIR, layOut, PREFIX, type BuildInfo } from './release-tree.js';
import { DAEMON_RELOAD, EMPTY_COMPILE_CACHE, FILL_COMPILE_CACHE, INSTALLED, MAKE_DIRS, REMOVED, STOP_DAEMON, UPGRADED_RUNNING } from './scriptlets.js';
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

%post
# $1: 1 on install, 2 on upgrade
${MAKE_DIRS}
${FILL_COMPILE_CACHE}
${DAEMON_RELOAD}
if [ "$1" -eq 1 ]; then echo "${INSTALLED}"; else ${UPGRADED_RUNNING}; fi
exit 0

%preun
# $1: 0 on erase, 1 on upgrade (the daemon keeps running from the new files)
if [ "$1" -eq 0 ]; then
  ${STOP_DAEMON}
  ${EMPTY_COMPILE_CACHE}
fi
exit 0

%postun
if [ "$1" -eq 0 ]; then
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
    execFileSync('rpmbuild', ['-bb', '--quiet', '--define', `_topdir ${top}`, '--define', `_rpmdir ${join(top, 'out')}`, '--define', '_build_name_fmt %%{NAME}-%%{VERSION}-%%{RELEASE}.%%{ARCH}.rpm', '--target', machineOf(info), join(top, 'l9gpu.spec')], {
      encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 << 20,
    });
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
