/**
 * Every number this plugin shares with NVIDIA's nvml.h, in one place: return
 * codes, enum values, field and GPM metric ids, bit masks, buffer sizes,
 * versioned-struct words, and the layouts of the structs read from raw
 * buffers. Each group is named so that its keys give the nvml.h name (the
 * comment on each says how); test/system/nvml-real.test.ts compiles a C program
 * against NVIDIA's own nvml.h (Debian's libnvidia-ml-dev) and fails on any
 * value here that differs, and on any key it cannot map.
 */

/** nvmlReturn_t: NVML_SUCCESS, else NVML_ERROR_<key>. */
export const NVML = {
  SUCCESS: 0,
  UNINITIALIZED: 1,
  INVALID_ARGUMENT: 2,
  NOT_SUPPORTED: 3,
  NO_PERMISSION: 4,
  NOT_FOUND: 6,
  INSUFFICIENT_SIZE: 7,
  DRIVER_NOT_LOADED: 9,
  TIMEOUT: 10,
  FUNCTION_NOT_FOUND: 13,
  GPU_IS_LOST: 15,
  RESET_REQUIRED: 16,
  LIB_RM_VERSION_MISMATCH: 18,
  UNKNOWN: 999,
} as const;

/** nvmlDeviceGetFieldValues field ids: NVML_FI_DEV_<key>. */
export const FIELD = {
  ECC_SBE_VOL_TOTAL: 3,
  ECC_DBE_VOL_TOTAL: 4,
  ECC_SBE_AGG_TOTAL: 5,
  ECC_DBE_AGG_TOTAL: 6,
  RETIRED_SBE: 29,
  RETIRED_DBE: 30,
  RETIRED_PENDING: 31,
  MEMORY_TEMP: 82,
  TOTAL_ENERGY_CONSUMPTION: 83,
  PCIE_REPLAY_COUNTER: 94,
  NVLINK_THROUGHPUT_DATA_TX: 138,
  NVLINK_THROUGHPUT_DATA_RX: 139,
  REMAPPED_COR: 142,
  REMAPPED_UNC: 143,
  REMAPPED_PENDING: 144,
  REMAPPED_FAILURE: 145,
  POWER_AVERAGE: 185,
  POWER_CURRENT_LIMIT: 190,
} as const;

/**
 * nvmlGpmMetricId_t: NVML_GPM_METRIC_<key>. *_UTIL: percent (0..100) of the window; *_PER_SEC: MiB/s over the window
 * (PCIe 20/21, NVLink all links 60/61). DMMA_TENSOR_UTIL and the cumulative counters from SM_CYCLES_ELAPSED (248) on came
 * with NVML v595 (CUDA 13.2's header; NVIDIA's change log: "Added new GPM UTIL metric NVML_GPM_METRIC_DMMA_TENSOR_UTIL.
 * Added new GPM raw metrics."): cycles, or bytes for PCIE_TX/RX, since the GPU's last reset ("since reboot").
 */
export const GPM_METRIC = {
  GRAPHICS_UTIL: 1,
  SM_UTIL: 2,
  SM_OCCUPANCY: 3,
  INTEGER_UTIL: 4,
  ANY_TENSOR_UTIL: 5,
  DFMA_TENSOR_UTIL: 6,
  HMMA_TENSOR_UTIL: 7,
  DMMA_TENSOR_UTIL: 8,
  IMMA_TENSOR_UTIL: 9,
  DRAM_BW_UTIL: 10,
  FP64_UTIL: 11,
  FP32_UTIL: 12,
  FP16_UTIL: 13,
  PCIE_TX_PER_SEC: 20,
  PCIE_RX_PER_SEC: 21,
  NVLINK_TOTAL_RX_PER_SEC: 60,
  NVLINK_TOTAL_TX_PER_SEC: 61,
  SM_CYCLES_ELAPSED: 248,
  SM_CYCLES_ACTIVE: 249,
  MMA_CYCLES_ACTIVE: 250,
  DMMA_CYCLES_ACTIVE: 251,
  HMMA_CYCLES_ACTIVE: 252,
  IMMA_CYCLES_ACTIVE: 253,
  DFMA_CYCLES_ACTIVE: 254,
  PCIE_TX: 255,
  PCIE_RX: 256,
  INTEGER_CYCLES_ACTIVE: 257,
  FP64_CYCLES_ACTIVE: 258,
  FP32_CYCLES_ACTIVE: 259,
  FP16_CYCLES_ACTIVE: 260,
} as const;

/** Clock event (throttle) reason bits: nvmlClocksThrottleReason<key> (12.2 renamed six of them nvmlClocksEventReason<key>, same bits). */
export const CLOCK_REASON = {
  GpuIdle: 0x1,
  ApplicationsClocksSetting: 0x2,
  SwPowerCap: 0x4,
  HwSlowdown: 0x8,
  SyncBoost: 0x10,
  SwThermalSlowdown: 0x20,
  HwThermalSlowdown: 0x40,
  HwPowerBrakeSlowdown: 0x80,
  DisplayClockSetting: 0x100,
} as const;

/** nvmlDeviceRegisterEvents types: nvmlEventType<key>. */
export const EVENT_TYPE = { SingleBitEccError: 0x1, DoubleBitEccError: 0x2, XidCriticalError: 0x8 } as const;

/** nvmlSamplingType_t: NVML_<key>. */
export const SAMPLING = { TOTAL_POWER_SAMPLES: 0, GPU_UTILIZATION_SAMPLES: 1, MEMORY_UTILIZATION_SAMPLES: 2 } as const;

/** nvmlValueType_t (which member of an nvmlValue_t union is set): NVML_VALUE_TYPE_<key>. UNSIGNED_SHORT is newer than CUDA 12.4. */
export const VALUE_TYPE = {
  DOUBLE: 0,
  UNSIGNED_INT: 1,
  UNSIGNED_LONG: 2,
  UNSIGNED_LONG_LONG: 3,
  SIGNED_LONG_LONG: 4,
  SIGNED_INT: 5,
  UNSIGNED_SHORT: 6,
} as const;

/** nvmlClockType_t: NVML_CLOCK_<key>. */
export const CLOCK = { GRAPHICS: 0, SM: 1, MEM: 2 } as const;

/** The arguments of the calls that take an enum, and the enum values read back: NVML_<key>. */
export const ENUM = {
  /** nvmlTemperatureSensors_t */
  TEMPERATURE_GPU: 0,
  /** nvmlMemoryErrorType_t */
  MEMORY_ERROR_TYPE_CORRECTED: 0,
  MEMORY_ERROR_TYPE_UNCORRECTED: 1,
  /** nvmlEccCounterType_t */
  VOLATILE_ECC: 0,
  AGGREGATE_ECC: 1,
  /** nvmlPageRetirementCause_t */
  PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS: 0,
  PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR: 1,
  /** nvmlPcieUtilCounter_t */
  PCIE_UTIL_TX_BYTES: 0,
  PCIE_UTIL_RX_BYTES: 1,
  /** nvmlPstates_t */
  PSTATE_UNKNOWN: 32,
} as const;

/** Buffer sizes the calls that fill a string want: NVML_<key>_BUFFER_SIZE. */
export const BUFFER_SIZE = {
  DEVICE_UUID_V2: 96,
  DEVICE_NAME_V2: 96,
  SYSTEM_DRIVER_VERSION: 80,
  DEVICE_SERIAL: 30,
  DEVICE_VBIOS_VERSION: 32,
} as const;

/** NVML_VALUE_NOT_AVAILABLE ((-1) in a 64-bit field: WDDM, or a MIG process without permission). */
export const VALUE_NOT_AVAILABLE = 0xffff_ffff_ffff_ffffn;
/**
 * What nvml.h's comments give as numbers with no name: the GPU and compute instance ids of a process or an event
 * without MIG ("set to 0xFFFFFFFF otherwise"), and the NVLink field scope that sums every link ("A scopeId of
 * UINT_MAX returns aggregate value summed up across all links").
 */
export const NO_INSTANCE = 0xffffffff;
export const ALL_LINKS = 0xffffffff;

/**
 * Versioned-struct words, sizeof | version << 24 (NVML_STRUCT_VERSION): the nvml.h macro named by each key.
 * A wrong one is NVML_ERROR_ARGUMENT_VERSION_MISMATCH.
 */
export const STRUCT_VERSION = {
  /** nvmlMemory_v2_t */
  nvmlMemory_v2: 40 | (2 << 24),
  /** nvmlTemperature_t { uint version; nvmlTemperatureSensors_t sensorType; int temperature } (CUDA 12.8 and later) */
  nvmlTemperature_v1: 12 | (1 << 24),
  /** nvmlGpmSupport_t and nvmlGpmMetricsGet_t carry a plain version number */
  NVML_GPM_SUPPORT_VERSION: 1,
  NVML_GPM_METRICS_GET_VERSION: 1,
} as const;

/**
 * Layouts of the structs read and written as raw buffers (x86-64 and aarch64 alike): size and the offset of each
 * member, keyed by the member's nvml.h name. `struct` is the nvml.h type.
 */
export interface Layout {
  readonly struct: string;
  /** sizeof; absent for a struct whose size is not fixed across headers */
  readonly size?: number;
  readonly at: Readonly<Record<string, number>>;
}
/** nvmlFieldValue_t: value is an nvmlValue_t union, its member set by valueType. */
export const FIELD_VALUE = {
  struct: 'nvmlFieldValue_t',
  size: 40,
  at: { fieldId: 0, scopeId: 4, timestamp: 8, latencyUsec: 16, valueType: 24, nvmlReturn: 28, value: 32 },
} as const satisfies Layout;
/** nvmlProcessInfo_t (v2 and v3 calls alike, 24 bytes, on every driver but early R535). */
export const PROCESS_INFO = {
  struct: 'nvmlProcessInfo_t',
  size: 24,
  at: { pid: 0, usedGpuMemory: 8, gpuInstanceId: 16, computeInstanceId: 20 },
} as const satisfies Layout;
/**
 * The 32-byte entries early R535 (535.54.03, 535.98) writes from nvmlDeviceGetComputeRunningProcesses_v3: the same
 * members plus usedGpuCcProtectedMemory. CUDA 12.2.0's nvml.h had it as nvmlProcessInfo_v3_t, later headers keep the
 * layout as nvmlProcessDetail_v1_t (for nvmlDeviceGetRunningProcessDetailList).
 */
export const PROCESS_INFO_CC = {
  struct: 'nvmlProcessDetail_v1_t',
  size: 32,
  at: { pid: 0, usedGpuMemory: 8, gpuInstanceId: 16, computeInstanceId: 20, usedGpuCcProtectedMemory: 24 },
} as const satisfies Layout;
/** The entries nvmlDeviceGetComputeRunningProcesses_v3 writes: one of the two. */
export type ProcessInfoLayout = typeof PROCESS_INFO | typeof PROCESS_INFO_CC;
/** nvmlEventData_t */
export const EVENT_DATA = {
  struct: 'nvmlEventData_t',
  size: 32,
  at: { device: 0, eventType: 8, eventData: 16, gpuInstanceId: 24, computeInstanceId: 28 },
} as const satisfies Layout;
/** nvmlSample_t: sampleValue is an 8-byte nvmlValue_t union. */
export const SAMPLE = { struct: 'nvmlSample_t', size: 16, at: { timeStamp: 0, sampleValue: 8 } } as const satisfies Layout;
/** nvmlGpmSupport_t */
export const GPM_SUPPORT = { struct: 'nvmlGpmSupport_t', size: 8, at: { version: 0, isSupportedDevice: 4 } } as const satisfies Layout;
/**
 * nvmlGpmMetricsGet_t up to its metrics array (its size follows NVML_GPM_METRIC_MAX: 98 in CUDA 12.4's header, 210 in
 * 12.9 to 13.1, 333 from 13.2, the version word 1 throughout: GPM_MAX_METRICS, at least the header's
 * NVML_GPM_METRIC_MAX, leaves room for the largest). NVIDIA's R535 and R550 libraries refuse a numMetrics above 98
 * (INVALID_ARGUMENT) and answer an id above 97 with that entry's nvmlReturn INVALID_ARGUMENT and a NaN value.
 */
export const GPM_METRICS_GET = {
  struct: 'nvmlGpmMetricsGet_t',
  at: { version: 0, numMetrics: 4, sample1: 8, sample2: 16, metrics: 24 },
} as const satisfies Layout;
export const GPM_MAX_METRICS = 333;
/** nvmlGpmMetric_t: { metricId; nvmlReturn; double value; metricInfo { char *shortName, *longName, *unit } } */
export const GPM_METRIC_ENTRY = {
  struct: 'nvmlGpmMetric_t',
  size: 40,
  at: { metricId: 0, nvmlReturn: 4, value: 8, metricInfo: 16 },
} as const satisfies Layout;

/** Every raw-buffer layout, for the header check. */
export const LAYOUTS: readonly Layout[] = [
  FIELD_VALUE,
  PROCESS_INFO,
  PROCESS_INFO_CC,
  EVENT_DATA,
  SAMPLE,
  GPM_SUPPORT,
  GPM_METRICS_GET,
  GPM_METRIC_ENTRY,
];
