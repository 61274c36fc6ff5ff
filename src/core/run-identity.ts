/**
 * A job run's identity, declared once: what the scheduler says of the run
 * (its job id, the run key that tells its runs apart, cluster, user, account,
 * partition, name, array and het job parts, start and end). Each place that
 * holds a run (a Slurm job as squeue says it, a store record or binding, the
 * report's header and list row, an accounting record) extends it or picks
 * from it, in camelCase (the model) or snake_case (the store's columns and
 * the --json outputs) through SnakeKeys: one list of fields, one meaning each.
 */
import type { SnakeKeys } from './snake-case.js';

export interface RunIdentity {
  /** Display id: "123", array task "122_4", het component "123+0". */
  jobId: string;
  /** The run of the job id (a requeued job runs again under the same id). */
  runKey: string;
  cluster: string | null;
  user: string | null;
  uid: number | null;
  account: string | null;
  partition: string | null;
  qos: string | null;
  name: string | null;
  arrayJobId: string | null;
  arrayTaskId: string | null;
  hetJobId: string | null;
  hetJobOffset: string | null;
  /** ms since epoch, null when unknown */
  startTime: number | null;
  endTime: number | null;
}

/** Who ran it and where it was charged: the fields every holder of a run names alike. */
export type RunOwner = Pick<RunIdentity, 'cluster' | 'user' | 'uid' | 'account' | 'partition' | 'qos' | 'name'>;

/** The run identity's fields as the store's columns and the --json outputs name them (job_id, run_key, start_time...). */
export type RunIdentityRow = SnakeKeys<RunIdentity>;
