/**
 * The local store's schema, as numbered migrations (PRAGMA user_version).
 * Times are ms since the epoch. A job run is (job_id, run_key): requeue keeps
 * the job id and bumps the restart count (or the SLUID from Slurm 25.11).
 * Bindings are many-to-one: shards and MPS put several jobs on one GPU.
 *
 * Migrations only add (tables, columns, indexes), never rename or drop: an
 * older l9gpu (a downgrade) reads a newer store read-only with its own
 * queries (src/store/open-readonly.ts, openNewerStore).
 */
export const MIGRATIONS: readonly string[] = [
  // 1: inventory, jobs, bindings
  `
  CREATE TABLE gpus (
    uuid TEXT PRIMARY KEY,
    vendor TEXT NOT NULL,
    vendor_index INTEGER,
    minor INTEGER,
    pci_bus_id TEXT,
    model TEXT,
    mig_parent TEXT,
    mig_gi INTEGER,
    mig_ci INTEGER,
    first_seen INTEGER NOT NULL,
    last_seen INTEGER NOT NULL
  );
  CREATE INDEX gpus_minor ON gpus(minor) WHERE mig_parent IS NULL;

  CREATE TABLE jobs (
    job_id TEXT NOT NULL,
    run_key TEXT NOT NULL,
    cluster TEXT,
    user TEXT,
    uid INTEGER,
    account TEXT,
    partition TEXT,
    qos TEXT,
    name TEXT,
    array_job_id TEXT,
    array_task_id TEXT,
    het_job_id TEXT,
    het_job_offset TEXT,
    start_time INTEGER,
    end_time INTEGER,
    state TEXT,
    exit_code INTEGER,
    exit_signal INTEGER,
    source TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (job_id, run_key)
  );
  CREATE INDEX jobs_open ON jobs(job_id) WHERE end_time IS NULL;

  CREATE TABLE bindings (
    id INTEGER PRIMARY KEY,
    job_id TEXT NOT NULL,
    run_key TEXT NOT NULL,
    gpu_uuid TEXT NOT NULL,
    start_time INTEGER NOT NULL,
    end_time INTEGER,
    source TEXT NOT NULL,
    closed_by TEXT,
    shared INTEGER NOT NULL DEFAULT 0,
    UNIQUE (job_id, run_key, gpu_uuid),
    FOREIGN KEY (job_id, run_key) REFERENCES jobs(job_id, run_key)
  );
  CREATE INDEX bindings_open ON bindings(gpu_uuid) WHERE end_time IS NULL;

  CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
  `,
  // 2: per (job run x GPU) rollups and a per-minute series for plots
  `
  CREATE TABLE job_gpu (
    job_id TEXT NOT NULL,
    run_key TEXT NOT NULL,
    gpu_uuid TEXT NOT NULL,
    model TEXT,
    identity TEXT,
    samples INTEGER NOT NULL,
    covered_s REAL NOT NULL,
    gpu_hours REAL NOT NULL,
    util_mean REAL,
    mem_used_max REAL,
    mem_total REAL,
    energy_j REAL NOT NULL,
    state TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (job_id, run_key, gpu_uuid)
  );
  CREATE TABLE job_gpu_series (
    job_id TEXT NOT NULL,
    run_key TEXT NOT NULL,
    gpu_uuid TEXT NOT NULL,
    minute INTEGER NOT NULL,
    util_sum REAL NOT NULL,
    power_sum REAL NOT NULL,
    mem_used_max REAL,
    n INTEGER NOT NULL,
    PRIMARY KEY (job_id, run_key, gpu_uuid, minute)
  ) WITHOUT ROWID;
  CREATE INDEX jobs_start ON jobs(start_time);
  CREATE INDEX jobs_user_start ON jobs(user, start_time);
  `,
  // 3: what the inference engines a job ran served (requests, tokens, latency buckets), per engine endpoint and model
  `
  CREATE TABLE job_engine (
    job_id TEXT NOT NULL,
    run_key TEXT NOT NULL,
    engine TEXT NOT NULL,
    endpoint TEXT NOT NULL,
    model TEXT NOT NULL,
    first_time INTEGER NOT NULL,
    last_time INTEGER NOT NULL,
    requests REAL NOT NULL,
    prompt_tokens REAL,
    generation_tokens REAL,
    ttft TEXT,
    itl TEXT,
    PRIMARY KEY (job_id, run_key, engine, endpoint, model)
  ) WITHOUT ROWID;
  -- the last cumulative value of each engine series a job's figures were taken from: a daemon restart goes on
  -- from it instead of counting the engine's whole count again
  CREATE TABLE engine_series (
    key TEXT PRIMARY KEY,
    job_id TEXT NOT NULL,
    value REAL NOT NULL,
    hist TEXT,
    seen INTEGER NOT NULL
  ) WITHOUT ROWID;
  `,
  // 4: a job's NCCL communication (plugins/nccl), per communicator, collective, size bucket and rank on this node;
  // its cumulative series' last values go in engine_series like an engine's
  `
  CREATE TABLE job_nccl (
    job_id TEXT NOT NULL,
    run_key TEXT NOT NULL,
    comm TEXT NOT NULL,
    comm_name TEXT NOT NULL,
    collective TEXT NOT NULL,
    size TEXT NOT NULL,
    rank INTEGER NOT NULL,
    n_ranks INTEGER NOT NULL,
    n_nodes INTEGER NOT NULL,
    first_time INTEGER NOT NULL,
    last_time INTEGER NOT NULL,
    ops REAL NOT NULL,
    bytes REAL NOT NULL,
    seconds REAL NOT NULL,
    PRIMARY KEY (job_id, run_key, comm, collective, size, rank)
  ) WITHOUT ROWID;
  `,
  // 5: runs of other schedulers (Kubernetes pods) in the same tables: the provider that wrote a run, its attributes
  // as the provider puts them on points (JSON: namespace, pod uid, owners, promoted labels), and a binding's own
  // attributes (the container holding the GPU, the device ids)
  `
  ALTER TABLE jobs ADD COLUMN scheduler TEXT;
  ALTER TABLE jobs ADD COLUMN attrs TEXT;
  ALTER TABLE bindings ADD COLUMN attrs TEXT;
  `,
  // 6: a (job run x GPU)'s GPM means (src/figures/rollup.ts): SM, occupancy, tensor, DRAM and FP64/32/16 activity over the
  // seconds GPM covered, NVLink and PCIe bytes, and the idle seconds, for roll-ups across jobs (jobs --by, --waste) without
  // parsing each rollup's state; NULL where the GPU has no GPM, and for rows written before (their state has no GPM sums)
  `
  ALTER TABLE job_gpu ADD COLUMN gpm_s REAL;
  ALTER TABLE job_gpu ADD COLUMN sm_active REAL;
  ALTER TABLE job_gpu ADD COLUMN sm_occupancy REAL;
  ALTER TABLE job_gpu ADD COLUMN tensor_active REAL;
  ALTER TABLE job_gpu ADD COLUMN dram_active REAL;
  ALTER TABLE job_gpu ADD COLUMN fp64_active REAL;
  ALTER TABLE job_gpu ADD COLUMN fp32_active REAL;
  ALTER TABLE job_gpu ADD COLUMN fp16_active REAL;
  ALTER TABLE job_gpu ADD COLUMN nvlink_bytes REAL;
  ALTER TABLE job_gpu ADD COLUMN pcie_bytes REAL;
  ALTER TABLE job_gpu ADD COLUMN idle_s REAL;
  `,
  // 7: the prune's ranges (src/ledger/rollup-writer.ts): ended jobs by end time, engine series by when last seen;
  // without them each hourly prune scanned every job ever kept
  `
  CREATE INDEX jobs_end ON jobs(end_time) WHERE end_time IS NOT NULL;
  CREATE INDEX engine_series_seen ON engine_series(seen);
  `,
  // 8: both ends of a job run on the monotonic clock too, with the boot they are of (src/core/clock.ts): a run
  // time from them is right when the wall clock stepped during the job (NTP at boot, a VM migrated)
  `
  ALTER TABLE jobs ADD COLUMN start_mono REAL;
  ALTER TABLE jobs ADD COLUMN end_mono REAL;
  ALTER TABLE jobs ADD COLUMN boot_id TEXT;
  `,
];

export const SCHEMA_VERSION = MIGRATIONS.length;
