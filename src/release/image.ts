/**
 * The container image of the Kubernetes mode (the DaemonSet in
 * src/attribution/kubernetes/deploy/): the release tree at /opt/l9gpu on the
 * smallest base it runs on. That base is made here, offline, from this build
 * machine's own files: the libraries the tree's ELF files load (glibc,
 * libstdc++, libgcc_s: what `ldd` resolves, the dynamic loader included), a
 * static ldconfig (the NVIDIA container toolkit's update-ldcache hook runs it
 * after it injects libnvidia-ml), /etc/passwd and /etc/group for root and
 * nobody, /tmp. No shell, no package manager: nothing for an attacker in the
 * pod to use, and nothing of a distribution's to patch.
 *
 * Built without a container daemon: umoci writes an OCI image layout, packed
 * as an oci-archive (load it with `skopeo copy oci-archive:FILE
 * docker://REGISTRY/l9gpu:VERSION` or `podman load -i FILE`).
 */
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { artifactBase, CONFIG_DIR, PREFIX, STATE_DIR, elfFiles, type BuildInfo } from './release-tree.js';

/** The image's name in the DaemonSet, before the admin's registry prefix; its tag is the version. */
export const IMAGE_NAME = 'l9gpu/l9gpu';
/** What the container runs: bin/run.js names the bundled runtime in its #! line. */
export const IMAGE_ENTRYPOINT = `${PREFIX}/bin/run.js`;
/** Found by a probe of the host here, or null: umoci is only needed for the image. */
export function umociPath(): string | null {
  for (const d of ['/usr/bin', '/usr/local/bin', '/usr/sbin']) if (existsSync(join(d, 'umoci'))) return join(d, 'umoci');
  return null;
}

const OCI_ARCH: Record<string, string> = { 'linux-x64': 'amd64', 'linux-arm64': 'arm64' };
/** The top-level links of a merged-/usr system, kept as they are so that the paths ldd prints are the paths in the image. */
const MERGED_USR = ['bin', 'sbin', 'lib', 'lib64'];

/** Every library the ELF files under dir load, as ldd resolves them on this machine (paths, not the link targets). */
function librariesOf(dir: string): string[] {
  const libs = new Set<string>();
  for (const f of elfFiles(dir)) {
    let out: string;
    try {
      out = execFileSync('ldd', [f.path], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (e) {
      // "not a dynamic executable": a static file needs nothing
      if (/not a dynamic executable|statically linked/.test(String((e as { stderr?: string }).stderr ?? ''))) continue;
      throw e;
    }
    if (/statically linked/.test(out)) continue;
    for (const line of out.split('\n')) {
      if (/not found/.test(line)) throw new Error(`${f.path}: ${line.trim()}: this machine lacks a library the image would need`);
      const m = /=>\s*(\/\S+)|^\s*(\/\S+)\s+\(/.exec(line);
      const p = m?.[1] ?? m?.[2];
      if (p) libs.add(p);
    }
  }
  return [...libs].sort();
}

/** A file of this machine into the image at the same path, its content (a link is followed). */
function copyIn(rootfs: string, path: string, mode?: number): void {
  const to = join(rootfs, path);
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(path, to);
  if (mode !== undefined) chmodSync(to, mode);
}

/** The image's root filesystem: the base described above, and the tree at PREFIX. */
export function imageRootfs(tree: string, rootfs: string): void {
  rmSync(rootfs, { recursive: true, force: true });
  mkdirSync(rootfs, { recursive: true });
  for (const top of MERGED_USR) {
    const st = lstatSync(`/${top}`, { throwIfNoEntry: false });
    if (st?.isSymbolicLink()) {
      mkdirSync(join(rootfs, readlinkSync(`/${top}`)), { recursive: true });
      symlinkSync(readlinkSync(`/${top}`), join(rootfs, top));
    }
  }
  cpSync(tree, join(rootfs, PREFIX), { recursive: true, verbatimSymlinks: true });
  for (const lib of librariesOf(tree)) copyIn(rootfs, lib);
  const ldconfig = ['/usr/sbin/ldconfig', '/sbin/ldconfig'].find((p) => existsSync(p));
  if (ldconfig) copyIn(rootfs, ldconfig, 0o755);
  mkdirSync(join(rootfs, 'etc'), { recursive: true });
  writeFileSync(join(rootfs, 'etc/passwd'), 'root:x:0:0:root:/root:/nonexistent\nnobody:x:65534:65534:nobody:/nonexistent:/nonexistent\n');
  writeFileSync(join(rootfs, 'etc/group'), 'root:x:0:\nnogroup:x:65534:\n');
  writeFileSync(join(rootfs, 'etc/nsswitch.conf'), 'passwd: files\ngroup: files\nhosts: files dns\n');
  for (const d of [CONFIG_DIR, STATE_DIR, '/root', '/var/log/l9gpu']) mkdirSync(join(rootfs, d), { recursive: true, mode: 0o755 });
  mkdirSync(join(rootfs, 'tmp'), { recursive: true });
  chmodSync(join(rootfs, 'tmp'), 0o1777);
  // the loader's cache of the libraries above: a library dlopen()ed by its name (libnvidia-ml.so.1, once injected) is found
  if (ldconfig) execFileSync(ldconfig, ['-r', rootfs], { stdio: 'ignore' });
}

/** The oci-archive of the image, in outDir. */
export function buildImage(tree: string, work: string, outDir: string, info: BuildInfo): string {
  const umoci = umociPath();
  if (!umoci)
    throw new Error(
      'umoci is not installed (apt-get install umoci; dnf install umoci): the image is built with it, without a container daemon',
    );
  const arch = OCI_ARCH[info.platform];
  if (!arch) throw new Error(`no OCI architecture for ${info.platform}`);
  const layout = join(work, 'oci');
  const bundle = join(work, 'bundle');
  const ref = `${layout}:${info.version}`;
  rmSync(layout, { recursive: true, force: true });
  rmSync(bundle, { recursive: true, force: true });
  const u = (...args: string[]) => execFileSync(umoci, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  u('init', '--layout', layout);
  u('new', '--image', ref);
  // as root the files keep root's ownership; another user's build maps them to root in the image
  const rootless = process.getuid?.() !== 0 ? ['--rootless'] : [];
  u('unpack', ...rootless, '--image', ref, bundle);
  rmSync(join(bundle, 'rootfs'), { recursive: true, force: true });
  imageRootfs(tree, join(work, 'image-rootfs'));
  renameSync(join(work, 'image-rootfs'), join(bundle, 'rootfs'));
  u('repack', ...rootless, '--image', ref, bundle);
  u(
    'config',
    '--image',
    ref,
    '--os',
    'linux',
    '--architecture',
    arch,
    '--config.entrypoint',
    IMAGE_ENTRYPOINT,
    '--config.cmd',
    'daemon',
    '--config.user',
    '0:0',
    '--config.workingdir',
    '/',
    '--config.env',
    `PATH=${PREFIX}/node/bin:/usr/sbin:/usr/bin`,
    '--config.env',
    `L9GPU_STATE_DIR=${STATE_DIR}`,
    '--config.label',
    `org.opencontainers.image.title=l9gpu`,
    '--config.label',
    `org.opencontainers.image.version=${info.version}`,
    '--config.label',
    `org.opencontainers.image.revision=${info.commit}`,
    '--config.label',
    'org.opencontainers.image.description=l9gpu GPU telemetry agent (Kubernetes mode: see src/attribution/kubernetes/deploy)',
  );
  u('gc', '--layout', layout);
  mkdirSync(outDir, { recursive: true });
  const out = join(outDir, `${artifactBase(info)}.oci.tar`);
  execFileSync('tar', ['-C', layout, '--owner=0', '--group=0', '--numeric-owner', '-cf', out, '.']);
  rmSync(layout, { recursive: true, force: true });
  rmSync(bundle, { recursive: true, force: true });
  return out;
}
