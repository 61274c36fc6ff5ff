/**
 * A stand-in slurmctld host for the EpilogSlurmctld worker: the real
 * slurm/ctld-epilog entry run with the environment slurmctld gives it
 * (job_common_env_vars: SLURM_JOB_ID, SLURM_JOB_NODELIST,
 * SLURM_SCRIPT_CONTEXT=epilog_slurmctld, no PATH), a slurm.conf with GPU and
 * CPU nodes, accounting as sacct/scontrol/sacctmgr stand-ins over a folder
 * (one file a job; every AdminComment write logged), and a real
 * VictoriaMetrics with each job's GPU series imported as the daemons export
 * them (dotted OTLP names).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, tempDir } from './paths.js';
import type { VictoriaMetrics } from './victoriametrics.js';

const SACCT = `#!/bin/sh
# sacct -j A,B,... -D -P -n --delimiter=X --noconvert --format=...: one allocation line a job with a record
d="$(dirname "$0")/../acct"
echo "sacct $*" >> "$d/../calls"
ids=""
while [ $# -gt 0 ]; do case "$1" in -j) ids="$2"; shift ;; esac; shift; done
IFS=,
for id in $ids; do
  [ -f "$d/$id" ] || continue
  end=Unknown; [ -f "$d/$id.end" ] && end=$(cat "$d/$id.end")
  c=""; [ -f "$d/$id.comment" ] && c=$(cat "$d/$id.comment")
  f='%s\\037%s\\037zoe\\0371000\\037ml\\037gpu\\037normal\\037stand\\037COMPLETED\\0370:0\\037'
  f="$f"'%s\\037%s\\03760\\03760\\0371\\0371000M\\037\\0371\\037gpu1\\037gres/gpu=1\\037%s\\n'
  printf "$f" "$id" "$id" "$(cat "$d/$id")" "$end" "$c"
done
`;

const SCONTROL = `#!/bin/sh
# scontrol update JobId=ID AdminComment=TEXT
d="$(dirname "$0")/../acct"
[ "$1" = update ] || { echo "scontrol: only update here" >&2; exit 1; }
id=\${2#JobId=}
printf '%s\\n' "$id" >> "$d/../writes"
printf '%s' "\${3#AdminComment=}" > "$d/$id.comment"
`;

export interface StandIn {
  dir: string;
  stateDir: string;
  config: string;
  /** One job's accounting record: started at `start` (s), ended (End set) unless `ended` is false. */
  record(id: string, start: number, ended?: boolean): void;
  /** Accounting gets the job's end. */
  end(id: string): void;
  /** The job ids whose AdminComment was written, once per write. */
  writes(): string[];
  /** Runs the real slurm/ctld-epilog as slurmctld does; resolves with its exit code and stderr. */
  epilog(
    id: string,
    nodes: string,
    extraEnv?: Record<string, string>,
  ): Promise<{ code: number | null; stderr: string; ms: number; pid: number }>;
  log(): string;
}

/** `root`: the checkout whose slurm/ctld-epilog runs (another build of the project, to compare). */
export function standIn(vm: VictoriaMetrics, root = ROOT): StandIn {
  const dir = tempDir('l9gpu-ctld-');
  const bin = join(dir, 'bin');
  const acct = join(dir, 'acct');
  const stateDir = join(dir, 'state');
  for (const d of [bin, acct, stateDir]) mkdirSync(d, { recursive: true });
  writeFileSync(join(bin, 'sacct'), SACCT, { mode: 0o755 });
  writeFileSync(join(bin, 'scontrol'), SCONTROL, { mode: 0o755 });
  writeFileSync(join(bin, 'sacctmgr'), '#!/bin/sh\necho "sacctmgr: not here" >&2\nexit 1\n', { mode: 0o755 });
  const slurmConf = join(dir, 'slurm.conf');
  writeFileSync(
    slurmConf,
    'ClusterName=stand\nSlurmctldHost=ctl\nGresTypes=gpu\nNodeName=DEFAULT ' +
      'CPUs=8\nNodeName=gpu[1-4] Gres=gpu:h100:4\nNodeName=cpu[1-2]\nPartitionName=all ' +
      'Nodes=ALL\n',
  );
  const config = join(dir, 'l9gpu.ini');
  writeFileSync(
    config,
    `[daemon]\nstate_dir = ${stateDir}\n\n[jobs]\npromql_url = ${vm.url}\nsummary_wait = ` +
      `60\n\n[slurm]\nbin_dir = ${bin}\nslurm_conf = ${slurmConf}\n`,
  );
  return {
    dir,
    stateDir,
    config,
    record: (id, start, ended = true) => {
      writeFileSync(join(acct, id), String(start));
      if (ended) writeFileSync(join(acct, `${id}.end`), String(start + 60));
    },
    end: (id) => writeFileSync(join(acct, `${id}.end`), String(Math.floor(Date.now() / 1000))),
    writes: () => (existsSync(join(dir, 'writes')) ? readFileSync(join(dir, 'writes'), 'utf8').split('\n').filter(Boolean) : []),
    epilog: (id, nodes, extraEnv = {}) =>
      new Promise((resolve, reject) => {
        const t0 = performance.now();
        // what slurmctld sets (no PATH, no HOME), and the two a checkout's EpilogSlurmctld wrapper adds
        const env = {
          SLURM_JOB_ID: id,
          SLURM_JOBID: id,
          SLURM_JOB_NODELIST: nodes,
          SLURM_SCRIPT_CONTEXT: 'epilog_slurmctld',
          SLURM_JOB_USER: 'zoe',
          SLURM_JOB_PARTITION: 'all',
          SLURM_CLUSTER_NAME: 'stand',
          L9GPU_CONFIG: config,
          L9GPU_NODE: process.execPath,
          L9GPU_CTLD_LINGER: '0',
          ...extraEnv,
        };
        const p = spawn(join(root, 'slurm', 'ctld-epilog'), [], { env, stdio: ['ignore', 'ignore', 'pipe'] });
        let stderr = '';
        p.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
        p.on('error', reject);
        p.on('close', (code) => resolve({ code, stderr, ms: performance.now() - t0, pid: p.pid! }));
      }),
    log: () => {
      const p = join(stateDir, 'ctld-epilog.log');
      return existsSync(p) ? readFileSync(p, 'utf8') : '';
    },
  };
}

/** Imports a finished 1-GPU job's series: its share and utilization over `samples` 10 s ticks, and its GPU's job-end summary. */
export async function pushGpuJob(vm: VictoriaMetrics, ids: readonly string[], endMs = Date.now() - 20_000, samples = 6): Promise<void> {
  const lines: string[] = [];
  ids.forEach((id, i) => {
    const node = `gpu${(i % 4) + 1}`;
    const gpu = {
      'host.name': node,
      'gpu.uuid': `GPU-${id.padStart(8, '0')}-0000-0000-0000-000000000000`,
      'gpu.index': '0',
      'gpu.model': 'NVIDIA H100 80GB HBM3',
    };
    const job = { 'slurm.job.id': id, 'slurm.user': 'zoe', 'slurm.account': 'ml', 'slurm.partition': 'gpu' };
    const ts = Array.from({ length: samples }, (_, k) => endMs - (samples - 1 - k) * 10_000);
    lines.push(
      JSON.stringify({ metric: { __name__: 'gpu.job.share', ...gpu, ...job }, values: ts.map(() => 1), timestamps: ts }),
      JSON.stringify({
        metric: { __name__: 'gpu.utilization', ...gpu, ...job },
        values: ts.map((_, k) => 0.5 + (k % 2) * 0.25),
        timestamps: ts,
      }),
      // the node's figures of the binding: no energy samples were sent, so 0 J agrees with the samples
      JSON.stringify({ metric: { __name__: 'gpu.job.energy', ...gpu, ...job }, values: [0], timestamps: [endMs] }),
    );
  });
  for (let i = 0; i < lines.length; i += 3000) {
    const r = await fetch(`${vm.url}/api/v1/import`, { method: 'POST', body: lines.slice(i, i + 3000).join('\n') });
    if (!r.ok) throw new Error(`VictoriaMetrics import: HTTP ${r.status} ${await r.text()}`);
  }
  await vm.flush();
}

/** VictoriaMetrics' count of PromQL instant queries answered (vm_http_requests_total{path="/api/v1/query"}). */
export async function queryCount(vm: VictoriaMetrics): Promise<number> {
  const s = await vm.ownMetrics();
  return s.filter((x) => x.name === 'vm_http_requests_total' && x.labels.path === '/api/v1/query').reduce((a, x) => a + x.value, 0);
}
