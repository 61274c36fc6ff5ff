/** The [jobs] section: who sees what, and what a GPU-hour costs. */
import type { SectionSpec } from '../config/schema.js';

export const JOBS_SECTION: SectionSpec = {
  name: 'jobs',
  description: '`l9gpu jobs` reports: visibility and prices.',
  keys: [
    { key: 'admin_group', type: 'string', default: null, example: 'hpcadmin', description: 'Members of this Unix group see every user\'s jobs (root always does; others see their own).' },
    { key: 'gpu_hour_price', type: 'number', default: null, min: 0, example: '2.50', description: 'Price of one GPU-hour, for the cost column (unset: no cost shown).' },
    { key: 'gpu_hour_prices', type: 'map', default: {}, example: 'H100=3.20,A100=1.80', description: 'Per-model GPU-hour prices: the first key contained in the GPU model wins over gpu_hour_price.' },
    { key: 'kwh_price', type: 'number', default: null, min: 0, example: '0.25', description: 'Price of one kWh of GPU energy, added to the cost.' },
    { key: 'currency', type: 'string', default: 'USD', description: 'Currency shown with costs.' },
  ],
};
