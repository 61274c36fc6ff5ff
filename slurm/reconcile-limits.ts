/**
 * What one reconcile may ask slurmctld: bounded, so that its cost does not
 * grow with the queue or with a backlog of ended jobs.
 */

/** At most this many jobs in one sacct call. */
export const SACCT_BATCH = 100;
/** At most this many single-job scontrol calls per reconcile. */
export const SCONTROL_PER_TICK = 10;
