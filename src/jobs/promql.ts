/**
 * The PromQL side of the job reports, by concept: the queries of a job's
 * series (promql-series.ts), the report folded from them (promql-report.ts)
 * and job-end settling (job-end-settle.ts). Named here for the callers that
 * always took them from here.
 */
export type { PromqlOptions } from './promql-client.js';
export { JOBS_PER_QUERY } from './promql-series.js';
export { reportFromPromql, reportsFromPromql } from './promql-report.js';
export * from './job-end-settle.js';
