/**
 * Slurm job ids where they enter l9gpu: command-line arguments, the hooks'
 * and the slurmctld epilog's environment, a process's environment, a jobs
 * socket request, sacct's answer. One bound for all of them: Slurm's job id
 * and array task id are uint32_t (slurm.h), so at most 10 digits each. A
 * longer run of digits is no job of Slurm's; let through, it would go on into
 * the store, a PromQL query or an sacct command line.
 */
import { clip, printable } from './printable.js';

/** A raw job id, as SLURM_JOB_ID and slurm.job.id carry it. */
export const RAW_JOB_ID = /^\d{1,10}$/;
/** A job as users and accounting name it: its raw id, or an array task's ARRAYID_TASKID. */
export const JOB_ID = /^\d{1,10}(?:_\d{1,10})?$/;

/** "is not set", or the value (cut, printable) and that it is not a job id: for an environment variable that must hold one. */
export function jobIdVariableError(name: string, value: string | undefined): string {
  return value === undefined || value === '' ? `${name} is not set` : `${name} is "${printable(clip(value, 40))}", not a job id`;
}
