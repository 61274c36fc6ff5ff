/**
 * systemd as the packages' scriptlets need it, in a root where systemd cannot be PID 1: /run/systemd/system
 * (what the scriptlets test for), a stand-in `systemctl` that records its argv and asks a stand-in service
 * manager, which runs l9gpu.service's ExecStart= (and Environment=, LogsDirectory=) read from the unit file
 * at each start, as systemd does after daemon-reload. Requests go through a FIFO in the root's /run, so a
 * scriptlet in another namespace (dpkg's, rpm's) reaches the manager running beside the daemon.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitFor } from './wait.js';

export const CALLS = 'var/log/systemctl.calls';
const RUN = '/run/l9gpu-test-init';

const SYSTEMCTL = `#!/bin/sh
# stand-in: records argv, asks the stand-in service manager (when one runs) about l9gpu.service
echo "$*" >> /${CALLS}
verb=; unit=; quiet=
for a; do
  case $a in -q|--quiet) quiet=1 ;; -*) ;; *) if [ -z "$verb" ]; then verb=$a; elif [ -z "$unit" ]; then unit=$a; fi ;; esac
done
[ -z "$unit" ] || [ "\${unit%.service}" = l9gpu ] || { [ "$verb" = is-active ] && exit 3; exit 0; }
case $verb in
  daemon-reload|enable|disable) exit 0 ;;
  start|stop|restart|try-restart|is-active) ;;
  *) echo "stand-in systemctl: $verb is not handled" >&2; exit 1 ;;
esac
if [ ! -p ${RUN}/ctl ]; then
  [ "$verb" = is-active ] && { [ -n "$quiet" ] || echo inactive; exit 3; }
  [ "$verb" = start ] || [ "$verb" = restart ] && { echo "stand-in systemctl: no service manager" >&2; exit 1; }
  exit 0
fi
echo "$verb" > ${RUN}/ctl
read -r state < ${RUN}/reply
[ "$verb" = is-active ] || exit 0
[ -n "$quiet" ] || echo "$state"
[ "$state" = active ]
`;

const INIT = `#!/bin/sh
# stand-in service manager for l9gpu.service: one request at a time from ${RUN}/ctl, the state answered on ${RUN}/reply
d=${RUN}
unit=/lib/systemd/system/l9gpu.service
[ -f $unit ] || unit=/usr/lib/systemd/system/l9gpu.service
pid=
start() {
  cmd=$(sed -n 's/^ExecStart=//p' $unit)
  mkdir -p /var/log/l9gpu
  env=$(sed -n 's/^Environment=//p' $unit)
  ( for e in $env; do export "$e"; done; cd /; exec $cmd ) >> /var/log/l9gpu-test-daemon.log 2>&1 &
  pid=$!
  echo $pid > $d/l9gpu.pid
}
stop() {
  if [ -n "$pid" ]; then kill -TERM $pid 2>/dev/null; wait $pid; fi
  pid=
  rm -f $d/l9gpu.pid
}
while :; do
  read -r verb < $d/ctl
  [ -n "$pid" ] && ! kill -0 $pid 2>/dev/null && { pid=; rm -f $d/l9gpu.pid; }
  case $verb in
    start) [ -n "$pid" ] || start ;;
    stop) stop ;;
    restart) stop; start ;;
    try-restart) [ -z "$pid" ] || { stop; start; } ;;
    exit) stop; echo inactive > $d/reply; exit 0 ;;
  esac
  echo "$verb" >> $d/handled
  if [ -n "$pid" ]; then echo active > $d/reply; else echo inactive > $d/reply; fi
done
`;

/** systemd's marks and the stand-in systemctl in a root (no service manager yet: systemctl says inactive). */
export function standInSystemd(root: string): void {
  mkdirSync(join(root, 'run/systemd/system'), { recursive: true });
  writeFileSync(join(root, 'usr/bin/systemctl'), SYSTEMCTL, { mode: 0o755 });
  chmodSync(join(root, 'usr/bin/systemctl'), 0o755);
  mkdirSync(join(root, 'usr/local/sbin'), { recursive: true });
  writeFileSync(join(root, 'usr/local/sbin/l9gpu-test-init'), INIT, { mode: 0o755 });
}

/** The systemctl calls recorded so far, one argv a line. */
export function systemctlCalls(root: string): string[] {
  const f = join(root, CALLS);
  return existsSync(f) ? readFileSync(f, 'utf8').trim().split('\n').filter(Boolean) : [];
}

/** The stand-in service manager, running in the root (its own mount namespace and /proc, no network), until stopped. */
export class ServiceManager {
  private readonly proc: ChildProcess;
  private constructor(private readonly root: string) {
    mkdirSync(join(root, RUN.slice(1)), { recursive: true });
    for (const f of ['ctl', 'reply']) {
      const p = join(root, RUN.slice(1), f);
      if (!existsSync(p) && spawnSync('mkfifo', ['-m', '0600', p]).status !== 0) throw new Error(`mkfifo ${p} failed`);
    }
    this.proc = spawn(
      'unshare',
      [
        '--mount-proc=' + join(root, 'proc'),
        '--net',
        'chroot',
        root,
        '/usr/bin/env',
        '-i',
        'PATH=/usr/sbin:/usr/bin:/sbin:/bin',
        'LANG=C.UTF-8',
        '/usr/local/sbin/l9gpu-test-init',
      ],
      { stdio: 'ignore' },
    );
  }

  static start(root: string): ServiceManager {
    return new ServiceManager(root);
  }

  /** The daemon's pid (this machine's: the manager shares its PID namespace), once one runs. */
  daemonPid(): number | undefined {
    const f = join(this.root, RUN.slice(1), 'l9gpu.pid');
    return existsSync(f) ? Number(readFileSync(f, 'utf8')) : undefined;
  }

  /** Waits for the manager to have handled n requests in all. */
  async handled(n: number): Promise<void> {
    const f = join(this.root, RUN.slice(1), 'handled');
    await waitFor(
      `${n} requests handled by the stand-in service manager`,
      () => existsSync(f) && readFileSync(f, 'utf8').trim().split('\n').length >= n,
    );
  }

  /** Stops the daemon (as systemd's shutdown would), then the manager. */
  async stop(): Promise<void> {
    if (this.proc.exitCode !== null) return;
    const exited = new Promise((r) => this.proc.once('exit', r));
    const r = spawnSync('sh', ['-c', 'echo exit > "$1/ctl" && read -r s < "$1/reply"', 'sh', join(this.root, RUN.slice(1))], {
      timeout: 60_000,
    });
    if (r.status !== 0) this.proc.kill('SIGKILL');
    await exited;
  }
}
