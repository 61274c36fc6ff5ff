/** The metrics the Kubernetes provider itself emits: the transform uses the definitions, the manifest lists their names. */
import { metric } from '../../core/metrics/registry.js';

export const K8S_METRIC = {
  share: metric('gpu.job.share'),
  outside: metric('gpu.process.outside_allocation'),
  bindings: metric('l9gpu.kubernetes.bindings'),
  syncAge: metric('l9gpu.kubernetes.sync.age'),
  unmatched: metric('l9gpu.kubernetes.unmatched'),
} as const;
