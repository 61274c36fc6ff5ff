/**
 * The reconciler's conversation with Slurm, across the releases it runs
 * under: which command asks what, in which form each release answers, and
 * what an answer means (no such job, no step here, no such command). What
 * this cluster's Slurm can do is learned from its answers and kept in one
 * place (`can`), so the reconciler asks each question once and gets one
 * answer shape whatever the release.
 */
import type { Logger } from '../src/core/log.js';
import { requireTool, runTool } from '../src/core/tool.js';
import {
  AmbiguousJobRecord,
  SACCT_FIELDS,
  parseSacct,
  parseScontrolRecords,
  parseSqueueJson,
  type SacctRecord,
  type SlurmJob,
} from './jobs-query.js';
import { isNoSteps, isUnknownKeyword, parseListJobs, parseListPids } from './local-jobs.js';
import { SLURM_DIRS } from './tools.js';

export interface SlurmClientOptions {
  binDir: string | null;
  slurmConf: string | null;
  commandTimeoutMs: number;
  log: Logger;
}

/** Which command a list of the node's jobs came from (doctor and the tests name it). */
export type ListSource = 'scontrol listjobs' | 'scontrol listpids' | 'squeue --json' | 'scontrol show job -d';

export class SlurmClient {
  /** What this cluster's Slurm can do, as its answers showed. */
  private readonly can = {
    /** `scontrol listjobs` (24.05+); after "invalid keyword", listpids (every release). */
    listjobs: true,
    /** `scontrol --json show job` (23.02+); undefined until asked, false after "unrecognized option". */
    jobJson: undefined as boolean | undefined,
    /** sacct answers (accounting storage enabled); after a failure not asked again until this time (ms). */
    sacctAfter: 0,
  };

  constructor(private readonly o: SlurmClientOptions) {}

  /** False once this Slurm showed it has no `scontrol --json` (22.05): its one-RPC job answer carries no GPU indices. */
  get jobJson(): boolean | undefined {
    return this.can.jobJson;
  }

  private run(name: string, args: string[]): Promise<string> {
    // without SLURM_CONF client commands try a DNS "configless" lookup
    return runTool(
      requireTool(name, SLURM_DIRS, '[slurm] bin_dir', this.o.binDir ? [this.o.binDir] : []),
      args,
      this.o.commandTimeoutMs,
      undefined,
      this.o.slurmConf ? { SLURM_CONF: this.o.slurmConf } : {},
    );
  }

  /**
   * Every job of the cluster on this node from squeue --json, else scontrol's
   * text (Slurm without JSON support). unreadable: jobs whose text record a
   * user's text made ambiguous (parseScontrolRecords): neither read nor to be
   * taken for ended.
   */
  async jobsOnNode(node: string): Promise<{ jobs: SlurmJob[]; source: ListSource; unreadable: Map<string, string> }> {
    let jobs: SlurmJob[];
    let unreadable = new Map<string, string>();
    let source: ListSource = 'squeue --json';
    try {
      jobs = parseSqueueJson(await this.run('squeue', ['--json']));
    } catch (e) {
      const msg = (e as Error).message;
      if (/not found in PATH/.test(msg)) throw e;
      source = 'scontrol show job -d';
      // the ids slurmctld holds (numbers, no one's text), asked first: a job submitted in between has a record squeue
      // did not list (the record before it is then not read), never a listed id without its own record
      const known = await this.knownIds([]);
      const text = await this.run('scontrol', ['show', 'job', '-d']);
      ({ jobs, unreadable } = parseScontrolRecords(text, { detail: true, known, sluid: await this.printsSluid() }));
    }
    return { jobs: jobs.filter((j) => j.nodes.includes(node)), source, unreadable };
  }

  private sluidPrinted: Promise<boolean> | undefined;
  /** Whether this Slurm prints SLUID= in `scontrol show job -d` (25.11+): `scontrol --version`, no RPC, asked once. */
  private printsSluid(): Promise<boolean> {
    return (this.sluidPrinted ??= this.run('scontrol', ['--version']).then(
      (v) => {
        const m = /slurm[- ](\d+)\.(\d+)/i.exec(v);
        return !!m && Number(m[1]) * 100 + Number(m[2]) >= 2511;
      },
      () => false,
    ));
  }

  /** Job ids as squeue lists them, every state slurmctld still holds, array tasks one a line (`-j`: those jobs only). */
  private async knownIds(jobs: string[]): Promise<Set<string>> {
    const out = await this.run('squeue', [
      '--noheader',
      '--states=all',
      '--array',
      '--format=%A',
      ...(jobs.length ? ['--jobs', jobs.join(',')] : []),
    ]).catch((e: Error) => {
      // a job slurmctld forgot since scontrol answered
      if (/Invalid job id/i.test(e.message)) return '';
      throw e;
    });
    return new Set(
      out
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => /^\d+$/.test(l)),
    );
  }

  /** Job ids with a step on this node, from the step daemons (no slurmctld RPC). */
  async localJobIds(node: string, guessed: boolean): Promise<{ ids: Set<string>; source: ListSource }> {
    // a guessed name is scontrol's own guess too (NodeHostname= in slurm.conf maps it); a known one is passed
    const at = guessed ? [] : [node];
    const list = async (source: 'scontrol listjobs' | 'scontrol listpids', args: string[], parse: (t: string) => Set<string>) => {
      try {
        return { ids: parse(await this.run('scontrol', args)), source };
      } catch (e) {
        if (isNoSteps((e as Error).message)) return { ids: new Set<string>(), source };
        throw e;
      }
    };
    if (this.can.listjobs) {
      try {
        return await list('scontrol listjobs', ['listjobs', ...at], parseListJobs);
      } catch (e) {
        if (!isUnknownKeyword((e as Error).message)) throw e;
        this.can.listjobs = false;
      }
    }
    return list('scontrol listpids', ['listpids', ...(at.length ? ['*', ...at] : [])], parseListPids);
  }

  /**
   * One job, asked of slurmctld alone, in one RPC where Slurm allows it:
   * `--local` skips the federation lookup, and `--json` (23.02+) carries the
   * GPU indices without the node table `show job -d` loads. 22.05 has no
   * --json: its text form without -d is one RPC too, and -d (one more, the
   * whole node table) is asked only when the GPU indices are needed. A job
   * slurmctld has forgotten (MinJobAge) is null.
   */
  async queryJob(id: string, detail: boolean): Promise<SlurmJob | null> {
    const pick = (jobs: SlurmJob[]) => jobs.find((j) => j.jobId === id) ?? null; // an array's meta id lists its other tasks too
    if (this.can.jobJson !== false) {
      try {
        const job = pick(parseSqueueJson(await this.run('scontrol', ['--local', '--json', 'show', 'job', id])));
        this.can.jobJson = true;
        // 24.11's --json answers an unknown job and an unreachable controller alike (exit 0, no job, no error):
        // the text form tells them apart
        if (job) return job;
      } catch (e) {
        const msg = (e as Error).message;
        if (/Invalid job id/i.test(msg)) return null;
        if (this.can.jobJson || !/unrecognized option/i.test(msg)) throw e;
        this.can.jobJson = false;
      }
    }
    let text: string;
    try {
      text = await this.run('scontrol', ['--local', 'show', 'job', ...(detail ? ['-d'] : []), id]);
    } catch (e) {
      if (/Invalid job id/i.test((e as Error).message)) return null;
      throw e;
    }
    // text (22.05): a record a user's text could have forged is not read (one more RPC: squeue of this id alone)
    const { jobs, unreadable } = parseScontrolRecords(text, { detail, known: await this.knownIds([id]), sluid: await this.printsSluid() });
    const why = unreadable.get(id);
    if (why !== undefined) throw new AmbiguousJobRecord(why);
    return pick(jobs);
  }

  /** Every node of the cluster with its NodeHostName (`scontrol show node -o`), in Slurm's order. */
  async nodeHosts(): Promise<{ name: string; host: string }[]> {
    const nodes: { name: string; host: string }[] = [];
    for (const line of (await this.run('scontrol', ['--local', 'show', 'node', '-o'])).split('\n')) {
      const name = /^NodeName=(\S+)/.exec(line)?.[1];
      const host = /\sNodeHostName=(\S+)/.exec(line)?.[1];
      if (name && host) nodes.push({ name, host });
    }
    return nodes;
  }

  /** Whether Slurm knows a node by this name (false on its "not found"; throws when it does not answer). */
  async knowsNode(node: string): Promise<boolean> {
    let out: string;
    try {
      out = await this.run('scontrol', ['--local', 'show', 'node', '-o', node]);
    } catch (e) {
      if (/not found/i.test((e as Error).message)) out = '';
      else throw e;
    }
    return new RegExp(`^NodeName=${node.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s`).test(out);
  }

  /**
   * End states of these jobs from sacct; null when accounting cannot answer
   * ("accounting storage is disabled", or sacct fails): then not asked again
   * for 10 minutes, and slurmctld's memory of recent jobs (queryJob) is all
   * there is.
   */
  async endStates(ids: readonly string[], now: number): Promise<SacctRecord[] | null> {
    if (now < this.can.sacctAfter) return null;
    try {
      return parseSacct(await this.run('sacct', ['-X', '-P', '-n', '-o', SACCT_FIELDS, '-j', ids.join(',')]));
    } catch (e) {
      this.can.sacctAfter = now + 600_000;
      this.o.log.debug('sacct unavailable: using scontrol for end states', { error: (e as Error).message });
      return null;
    }
  }
}
