/** Slurm 26.05 (Debian sid): the attribution cases of helpers/slurm-suite.ts. */
import { slurmSuite } from '../helpers/slurm-suite.js';

slurmSuite('sid');
