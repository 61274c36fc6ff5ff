/** Slurm 22.05 (Debian bookworm): the attribution cases of helpers/slurm-suite.ts. */
import { slurmSuite } from '../helpers/slurm-suite.js';

slurmSuite('bookworm');
