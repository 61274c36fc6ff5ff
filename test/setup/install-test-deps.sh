#!/usr/bin/env bash
# The real components the tests run against (Debian 12), provisioned once and kept:
#   - Prometheus 2.42 (Debian 12) for the pull path and promtool
#   - VictoriaMetrics 1.112 (Debian 13's package; runs on Debian 12) as the OTLP receiver
#   - Slurm 22.05 (Debian 12) with slurmdbd, munge and MariaDB; Slurm 24.11 (Debian 13) and
#     26.05 (Debian unstable) in chroots made by mmdebstrap under /var/cache/l9gpu-test
#     (~20 s and ~200 MB each the first time)
#   - gcc (the fake libnvidia-ml.so.1), systemd-analyze, a user for jobs that are not root's
#   - openssl (the certificates of the tests' API server and kubelet stand-ins, and of every TLS test)
#   - from Debian unstable, unpacked into .cache/sid-peers/ without installing: node_exporter 1.11
#     (prometheus-node-exporter: exporter-toolkit's --web.config.file, the reference the web_config
#     conformance table runs against, and the CPU/RSS peer of the bench) and Prometheus 3.5 (a
#     Prometheus 3 scraper: UTF-8 names, its Accept header, https with basic auth and client certificates)
#   - apache2-utils (htpasswd: the bcrypt hashes of the web_config tests, as sites make them)
#   - faketime (libfaketime: wall-clock steps of -1 h and +2 h on the daemon and the hooks, never the machine's clock)
#   - NVIDIA's own NVML without a GPU (Debian non-free): libnvidia-ml1 of bookworm (R535) and of trixie (R550)
#     and trixie's libnvidia-ml-dev (nvml.h), at whatever versions the mirror has, unpacked into
#     .cache/nvidia-ml/<suite>/ with a `packages` file naming them (test/system/nvml-real.test.ts)
#   - rollout: roots under /var/cache/l9gpu-test: a clean bookworm minbase one (the .deb's
#     install test), a clean bullseye minbase one (glibc 2.31, older than the build host's: the
#     .rpm is installed into it with rpm --root), and a bookworm one with ansible-core,
#     python3-apt and systemd (the role's run and systemd-analyze verify of the unit it
#     installs); ansible-core, ansible-lint, rpm (rpmbuild) and umoci (the container image) here
#   The mmdebstrap runs go in parallel: they wait on the mirror, not on the CPU.
# `npm test` runs this first: with everything present it says nothing and takes a few ms;
# as root it installs what is missing; otherwise it fails with one line naming what is
# missing and the command that installs it. VictoriaMetrics lands in .cache/ (git-ignored),
# without touching the machine's own apt lists.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cache="$root/.cache"
chroots=/var/cache/l9gpu-test
vm="$cache/victoria-metrics/usr/bin/victoria-metrics"
export DEBIAN_FRONTEND=noninteractive

# Debian packages whose command is missing
packages=()
command -v prometheus >/dev/null || packages+=(prometheus)
command -v gcc >/dev/null || packages+=(gcc)
command -v systemd-analyze >/dev/null || packages+=(systemd)
command -v slurmctld >/dev/null || packages+=(slurm-wlm munge)
command -v slurmdbd >/dev/null || packages+=(slurmdbd)
command -v mariadbd >/dev/null || packages+=(mariadb-server)
command -v mmdebstrap >/dev/null || packages+=(mmdebstrap)
command -v openssl >/dev/null || packages+=(openssl)
command -v ansible-playbook >/dev/null || packages+=(ansible-core)
command -v ansible-lint >/dev/null || packages+=(ansible-lint)
command -v unshare >/dev/null || packages+=(util-linux)
command -v rpmbuild >/dev/null || packages+=(rpm)
command -v umoci >/dev/null || packages+=(umoci)
command -v htpasswd >/dev/null || packages+=(apache2-utils)
command -v faketime >/dev/null || packages+=(faketime)
releases=()
for release in trixie sid; do
  [ -x "$chroots/slurm-$release/usr/sbin/slurmctld" ] && [ -x "$chroots/slurm-$release/usr/sbin/slurmdbd" ] || releases+=("$release")
done
# the rollout tests' roots: name (the suite first) and the packages beyond minbase
declare -A roots=([bookworm-minbase]="" [bullseye-minbase]="" [bookworm-ansible]="ansible-core,python3-apt,systemd,procps")
for r in "${!roots[@]}"; do [ -x "$chroots/$r/usr/bin/apt-get" ] && [ -e "$chroots/$r/.complete" ] && unset "roots[$r]"; done
other=()
[ -x "$vm" ] || other+=("VictoriaMetrics 1.112")
sid_peers="$cache/sid-peers"
[ -e "$sid_peers/packages" ] || other+=("node_exporter 1.11 and Prometheus 3.5 (Debian unstable)")
id l9gputest >/dev/null 2>&1 || other+=("user l9gputest")
# NVIDIA's NVML: suite -> packages
declare -A nvml=([bookworm]="libnvidia-ml1" [trixie]="libnvidia-ml1 libnvidia-ml-dev")
for r in "${!nvml[@]}"; do [ -e "$cache/nvidia-ml/$r/packages" ] && unset "nvml[$r]"; done
for r in "${!nvml[@]}"; do other+=("NVIDIA NVML ($r)"); done
# only root can see munge's key (its folder is munge's own)
[ "$(id -u)" != 0 ] || [ -s /etc/munge/munge.key ] || other+=("munge key")

missing=("${packages[@]}")
for r in "${releases[@]}"; do missing+=("Slurm chroot $r"); done
for r in "${!roots[@]}"; do missing+=("root $r"); done
missing+=("${other[@]}")
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "l9gpu tests: missing $(IFS=,; echo "${missing[*]}" | sed 's/,/, /g'): install them with \`sudo bash test/setup/install-test-deps.sh\` (Debian 12, as root)" >&2
  exit 1
fi
echo "l9gpu tests: installing the real components the tests need (once): ${missing[*]}" >&2

[ ${#packages[@]} -eq 0 ] || apt-get update -qq
# mmdebstrap first, alone: the roots it makes then download beside the other packages' install
# (it keeps its own apt state inside each root, so the two never share a lock)
if [ ${#releases[@]} -gt 0 ] || [ ${#roots[@]} -gt 0 ]; then
  command -v mmdebstrap >/dev/null || apt-get install -y -qq --no-install-recommends mmdebstrap >/dev/null
fi
# one root made by mmdebstrap: <folder name> <suite> <packages beyond minbase>, in the background
pids=()
make_root() {
  local dir="$chroots/$1"
  mkdir -p "$chroots"; rm -rf "$dir.tmp" "$dir"
  # the unstable mirror's Release file may be past its Valid-Until date
  mmdebstrap --quiet --variant=minbase --aptopt='Acquire::Check-Valid-Until "false"' \
    ${3:+--include=$3} "$2" "$dir.tmp" http://deb.debian.org/debian
  touch "$dir.tmp/.complete"
  mv "$dir.tmp" "$dir"
}
# newer Slurm releases, each in its own chroot (the tests bind-mount /proc, /dev, /sys, /tmp and the project)
for release in "${releases[@]}"; do
  make_root "slurm-$release" "$release" slurm-wlm,slurm-client,slurmdbd,munge & pids+=($!)
done
for r in "${!roots[@]}"; do make_root "$r" "${r%%-*}" "${roots[$r]}" & pids+=($!); done
if [ ${#packages[@]} -gt 0 ]; then
  # policy-rc.d keeps the packages from starting a system prometheus, slurmd or mariadb we do not want
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod 755 /usr/sbin/policy-rc.d
  apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
  rm -f /usr/sbin/policy-rc.d
fi

# an unprivileged user for jobs submitted by someone other than root
id l9gputest >/dev/null 2>&1 || useradd --create-home --shell /bin/sh l9gputest
# munge's key (the packages do not create one in a container)
if [ ! -s /etc/munge/munge.key ]; then
  mkdir -p /etc/munge
  dd if=/dev/urandom of=/etc/munge/munge.key bs=128 count=1 2>/dev/null
  chown munge:munge /etc/munge/munge.key; chmod 400 /etc/munge/munge.key
fi

# Downloads Debian packages (name or name=version) of a suite into $cache/apt-<suite>/dl, apt's own state kept
# beside them: the machine's sources and lists are never touched. Components main, contrib and non-free.
apt_download() {
  local suite=$1; shift
  local d="$cache/apt-$suite"
  rm -rf "$d"; mkdir -p "$d/lists/partial" "$d/dl/partial"
  echo "deb http://deb.debian.org/debian $suite main contrib non-free" > "$d/sources.list"
  # no installed-package state (any version the mirror has is a candidate); downloads as root (no _apt sandbox warning);
  # the unstable mirror's Release file may be past its Valid-Until date
  local o=(-o "Dir::Etc::sourcelist=$d/sources.list" -o "Dir::Etc::sourceparts=-" -o "Dir::State::Lists=$d/lists"
    -o "Dir::Cache::archives=$d/dl" -o "Dir::State::status=/dev/null" -o "APT::Sandbox::User=root"
    -o "Acquire::Check-Valid-Until=false")
  apt-get "${o[@]}" update -qq
  (cd "$d/dl" && apt-get "${o[@]}" download "$@" >/dev/null)
}

if [ ! -x "$vm" ]; then
  apt_download trixie victoria-metrics=1.112.0+ds1-2
  d="$cache/apt-trixie"
  dpkg -x "$d"/dl/victoria-metrics_*.deb "$cache/victoria-metrics"
  rm -rf "$d"
  echo "VictoriaMetrics: $("$vm" -version)" >&2
fi

# Unpacks the downloaded packages of a suite into a folder; `packages` (name and version of each) is written last:
# it marks the folder complete. Says what it unpacked, under the given title.
unpack_into() {
  local suite=$1 out=$2 title=$3
  local d="$cache/apt-$suite"
  rm -rf "$out"; mkdir -p "$out"
  for deb in "$d"/dl/*.deb; do
    dpkg-deb -x "$deb" "$out"
    echo "$(dpkg-deb -f "$deb" Package) $(dpkg-deb -f "$deb" Version)" >> "$out/packages.tmp"
  done
  mv "$out/packages.tmp" "$out/packages"
  rm -rf "$d"
  echo "$title: $(paste -sd, "$out/packages" | sed 's/,/, /g')" >&2
}

# node_exporter and Prometheus 3 from unstable
if [ ! -e "$sid_peers/packages" ]; then
  apt_download sid prometheus-node-exporter prometheus
  unpack_into sid "$sid_peers" "Debian unstable peers"
fi

# NVIDIA's libraries and header
for r in "${!nvml[@]}"; do
  # shellcheck disable=SC2086 # the package list is words
  apt_download "$r" ${nvml[$r]}
  unpack_into "$r" "$cache/nvidia-ml/$r" "NVIDIA NVML ($r)"
done

failed=0
for p in "${pids[@]}"; do wait "$p" || failed=1; done
[ "$failed" = 0 ] || { echo "l9gpu tests: a root could not be made (mmdebstrap failed above)" >&2; exit 1; }
for release in "${releases[@]}"; do echo "Slurm in $chroots/slurm-$release: $(chroot "$chroots/slurm-$release" slurmctld -V)" >&2; done

