/** Slurm job states in which a job holds its node's resources: its run stays open, and it has no end state yet. */
export const ACTIVE = new Set(['RUNNING', 'COMPLETING', 'CONFIGURING', 'SUSPENDED', 'STAGE_OUT', 'RESIZING', 'SIGNALING']);
