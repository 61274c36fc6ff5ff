import { reportingCliErrors } from '../../cli/errors.js';
import { jobsList } from '../../cli/jobs-commands.js';
import Jobs from '../jobs/index.js';

/** `l9gpu jobs` under its Kubernetes name: a node's runs are pods there (namespace and workload columns). */
export default class Pods extends Jobs {
  static override summary = 'List pods that used GPUs on this node (Kubernetes mode: l9gpu jobs under its other name).';
  static override description = `One row per pod run, newest first, from this node's l9gpu store (kept by the daemon's kubernetes attribution):
namespace, workload (deployment/..., statefulset/..., cronjob/...), GPU-hours, utilization, peak memory, energy, cost, problems.
--account filters by namespace. For one pod in detail: l9gpu pods show <namespace>/<pod>.`;

  static override examples = ['<%= config.bin %> pods', '<%= config.bin %> pods --state running', '<%= config.bin %> pods --account ml-train --since 7d --csv', '<%= config.bin %> pods --by account'];

  override async run(): Promise<void> {
    const { flags } = await this.parse(Pods);
    await reportingCliErrors((code) => this.exit(code), () => jobsList(flags));
  }
}
