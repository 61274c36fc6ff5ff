/** The `l9gpu health` flags as data: oclif's command and the light entry build on them. */
import { CONFIG_FLAG, type FlagSpec } from './flag-spec.js';

export const HEALTH_FLAGS: readonly FlagSpec[] = [
  CONFIG_FLAG,
  { name: 'json', type: 'boolean', description: 'Print JSON.', exclusive: ['nhc'] },
  { name: 'nhc', type: 'boolean', description: 'One line and an exit status for Slurm\'s HealthCheckProgram or NHC: exit 1 when a GPU failed, else 0.', exclusive: ['json'] },
  { name: 'drain', type: 'boolean', description: 'With --nhc, as HealthCheckProgram: drain this node through scontrol when a GPU failed (reason "l9gpu: ..."), and resume it when healthy again if l9gpu drained it.' },
  { name: 'unknown-fails', type: 'boolean', description: 'With --nhc: an unknown health (no daemon writing it) fails too, instead of passing with a warning.' },
  { name: 'clear', type: 'string', multiple: true, helpValue: 'GPU', description: 'Clear the Xid events recorded so far for a GPU (UUID, a prefix of one UUID, index, or all), once it has been reset or repaired; a GPU named that is missing (removed, no longer monitored) is forgotten. Root only.' },
];
