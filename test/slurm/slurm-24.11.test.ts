/** Slurm 24.11 (Debian trixie): the attribution cases of helpers/slurm-suite.ts. */
import { slurmSuite } from '../helpers/slurm-suite.js';

slurmSuite('trixie');
