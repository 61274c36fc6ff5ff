#!/usr/bin/env bash
# Installs the real components the tests run against (Debian 12, root):
#   - Prometheus 2.42 (Debian 12) for the pull path and promtool
#   - VictoriaMetrics 1.112 (Debian 13's package; runs on Debian 12) as the OTLP receiver
#   - Slurm 22.05 (Debian 12) with slurmdbd, munge and MariaDB; Slurm 24.11 (Debian 13) and
#     26.05 (Debian unstable) in chroots made by mmdebstrap under /var/cache/l9gpu-test
#     (kept between runs: ~20 s and ~200 MB each the first time)
# Idempotent: skips what is already there. VictoriaMetrics lands in .cache/ (git-ignored),
# without touching the machine's own apt lists.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cache="$root/.cache"
export DEBIAN_FRONTEND=noninteractive

need=()
command -v prometheus >/dev/null || need+=(prometheus)
command -v gcc >/dev/null || need+=(gcc)
command -v systemd-analyze >/dev/null || need+=(systemd)
# a real Slurm 22.05 (slurmctld, slurmd, slurmdbd) with munge and MariaDB for accounting
command -v slurmctld >/dev/null || need+=(slurm-wlm munge)
command -v slurmdbd >/dev/null || need+=(slurmdbd)
command -v mariadbd >/dev/null || need+=(mariadb-server)
command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  # policy-rc.d keeps the package from starting a system prometheus we do not want
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod 755 /usr/sbin/policy-rc.d
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
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

# newer Slurm releases, each in its own chroot (the tests bind-mount /proc, /dev, /sys, /tmp and the project)
chroots=/var/cache/l9gpu-test
for release in trixie sid; do
  dir="$chroots/slurm-$release"
  [ -x "$dir/usr/sbin/slurmctld" ] && [ -x "$dir/usr/sbin/slurmdbd" ] && continue
  mkdir -p "$chroots"; rm -rf "$dir.tmp"
  # the unstable mirror's Release file may be past its Valid-Until date
  mmdebstrap --quiet --variant=minbase --aptopt='Acquire::Check-Valid-Until "false"' \
    --include=slurm-wlm,slurm-client,slurmdbd,munge "$release" "$dir.tmp" http://deb.debian.org/debian
  mv "$dir.tmp" "$dir"
done
for release in trixie sid; do echo "Slurm in $chroots/slurm-$release: $(chroot "$chroots/slurm-$release" slurmctld -V)"; done

vm="$cache/victoria-metrics/usr/bin/victoria-metrics"
if [ ! -x "$vm" ]; then
  d="$cache/apt-trixie"
  mkdir -p "$d/lists/partial" "$d/dl/partial"
  echo "deb http://deb.debian.org/debian trixie main" > "$d/sources.list"
  o=(-o "Dir::Etc::sourcelist=$d/sources.list" -o "Dir::Etc::sourceparts=-" -o "Dir::State::Lists=$d/lists" -o "Dir::Cache::archives=$d/dl")
  apt-get "${o[@]}" update -qq
  (cd "$d/dl" && apt-get "${o[@]}" download victoria-metrics=1.112.0+ds1-2 >/dev/null)
  dpkg -x "$d"/dl/victoria-metrics_*.deb "$cache/victoria-metrics"
  rm -rf "$d"
fi
"$vm" -version
prometheus --version 2>&1 | head -1
