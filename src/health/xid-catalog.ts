/**
 * NVIDIA Xid catalog: every Xid code 1..172 that NVIDIA's catalog lists, with
 * l9gpu's verdict for the GPU while the event is current.
 *
 * Sources (every row below comes from them; nothing was added that they do
 * not list):
 *  1. NVIDIA, "Analyzing Xid Errors with the Xid Catalog", table "Xids",
 *     https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html
 *     (the page's table of the spreadsheet https://docs.nvidia.com/Xid-Catalog.xlsx:
 *     Code, Mnemonic, Description, Applies to A100/H100/B100/GB200,
 *     Resolution Bucket (Immediate Action), Resolution Bucket (Investigatory
 *     Action), Xid 154 linkage, Trigger Conditions; plus the "XID 144-150
 *     Decode" and "Guidance Classes" sheets). Read from a stored, undated copy
 *     of the page; the newest driver branch it names is R575 (CUDA 12.9) and
 *     its last code is 172. Primary source for names, buckets and advice.
 *  2. NVIDIA/NVSentinel, distros/kubernetes/nvsentinel/charts/gpu-health-monitor/xiderrorsmapping.csv
 *     at commit 6f8b0fcfa8e502bdda78fabf96facef729a9285b (NVIDIA's own copy of
 *     the catalog's code, mnemonic and immediate action, codes 1..162), used
 *     to cross-check. Where it disagrees with (1), (1) wins and the row says so:
 *     108 (it names DESTINATION_FLA_TRANSLATION_ERROR, action
 *     UNEXPECTED_ERR_REPORT_ISSUE), 137 (NVLINK_FLA_PRIV_ERR), 160 (RESTART_BM
 *     where (1) says IGNORE), 162 (RESET_GPU, no mnemonic, where (1) gives
 *     no bucket); for the "Unused" codes it says UNEXPECTED_ERR_REPORT_ISSUE
 *     where (1) says CONTACT_SUPPORT (the same advice).
 * Volta and older GPUs: NVIDIA keeps a separate, older list
 * (https://docs.nvidia.com/deploy/xid-errors/archive/index.html), not used
 * here; codes (1) lists as "Unused" may have meant something on those GPUs.
 *
 * NVIDIA's immediate-action bucket -> XidAction:
 *   IGNORE -> none; RESTART_APP -> restart-app; RESET_GPU, WORKFLOW_XID_48
 *   (solo: RESET_GPU; with 63/64: drain and reset), CHECK_UVM (UVM/vGPU in
 *   use: RESET_GPU, else IGNORE; CUDA on a compute node uses UVM) and
 *   XID_154 (follow the recovery action the message names) -> reset-gpu;
 *   RESTART_BM, RESTART_VM -> reboot; WORKFLOW_NVLINK_ERR (74),
 *   WORKFLOW_NVLINK5_ERR (144-150) -> check-nvlink; CHECK_MECHANICALS ->
 *   check-hardware; UPDATE_SWFW -> update-software; CONTACT_SUPPORT ->
 *   contact-support; WORKFLOW_XID_45 (solo: RESTART_FM, not solo: IGNORE and
 *   follow the other Xid) -> none. Codes 162..172 have no bucket in (1), only
 *   prose or nothing: their action is l9gpu's reading of that prose or, where
 *   there is none, of the code's name (said in the row's advice).
 *
 * Severity policy (l9gpu's, 0 ok / 1 warning / 2 failed = drain):
 *  - 0: the catalog puts the fault on the application or user, or says to
 *    ignore it with no hint of hardware trouble (13, 31, 43, 45; RESTART_APP
 *    rows whose investigatory action is CHECK_APP/CUDA, WORKFLOW_XID_13/31 or
 *    INVESTIGATE_SW; IGNORE rows for driver/firmware/test events).
 *  - 1: the app must restart but the catalog points at the GPU (investigatory
 *    CONTACT_SUPPORT, e.g. copy-engine/NVDEC/NVJPG exceptions, 32 PCIe
 *    quality, 94 contained ECC), or it says IGNORE for an event that still
 *    tells of hardware wear: 63 row remapping recorded (takes effect at the
 *    next reset), 92 high single-bit ECC rate, 93, 121, 157, 160, 161; and
 *    NVLink5 Xids 144-148 whose decode (the "XID 144-150 Decode" sheet) is
 *    mostly non-fatal, the fatal subcodes come with an Xid 154.
 *  - 2: a GPU reset, a reboot, support/RMA or a hands-on check is needed, or
 *    the GPU is gone: 48, 62, 64, 74, 79, 95, 119, 120, 136, 140, 149, 150,
 *    154, 155, 156, 158 etc. Every reset-gpu/reboot/contact-support row is 2.
 * Deviations from NVIDIA's immediate action, on purpose: 63, 92, 93, 121,
 * 157, 160, 161 (IGNORE) are warnings; 154 is 2 although its message may
 * name "None": the health rules should read the action out of the message.
 * "Unused" codes (CONTACT_SUPPORT) are 2: on A100 and newer they should not
 * happen at all.
 */

/** Who or what an Xid points at. */
export type XidOrigin = 'application' | 'driver' | 'hardware' | 'memory' | 'nvlink' | 'thermal-power' | 'system' | 'unknown';
/** What to do, NVIDIA's resolution as one word. */
export type XidAction =
  'none' | 'restart-app' | 'reset-gpu' | 'reboot' | 'check-nvlink' | 'check-hardware' | 'update-software' | 'contact-support';
export interface XidEntry {
  code: number;
  /** NVIDIA's short description. */
  name: string;
  origin: XidOrigin;
  action: XidAction;
  /** l9gpu's verdict for the GPU while the event is current: 0 ok (an application's fault: the GPU is fine), 1 warning, 2 failed (drain).
   * */
  severity: 0 | 1 | 2;
  /** One line for an admin: what happened and what to do, e.g. "the GPU fell off the bus: open a hardware ticket (RMA)". */
  advice: string;
}

/** What NVIDIA's catalog says of a code, as written there: its mnemonic and its immediate-action bucket ('' where it gives none). */
export interface XidNvidiaRow {
  mnemonic: string;
  immediate: string;
}

type Row = readonly [
  code: number,
  mnemonic: string,
  name: string,
  immediate: string,
  origin: XidOrigin,
  action: XidAction,
  severity: 0 | 1 | 2,
  advice: string,
];

const UNUSED_ADVICE =
  'NVIDIA lists this code as unused on A100 and newer GPUs: if one reports it, contact NVIDIA ' +
  "support (Volta and older: see NVIDIA's archived Xid list)";
/** A code the catalog describes as "Unused" with immediate action CONTACT_SUPPORT. */
const U = (code: number, mnemonic: string): Row => [
  code,
  mnemonic,
  `Unused (${mnemonic})`,
  'CONTACT_SUPPORT',
  'unknown',
  'contact-support',
  2,
  UNUSED_ADVICE,
];

const APP_CE = 'restart the app; the catalog points at the GPU: if it repeats, run DCGM diagnostics and contact support';

const ROWS: readonly Row[] = [
  U(1, 'ROBUST_CHANNEL_FIFO_ERROR_FIFO_METHOD'),
  U(2, 'ROBUST_CHANNEL_FIFO_ERROR_SW_METHOD'),
  U(3, 'ROBUST_CHANNEL_FIFO_ERROR_UNK_METHOD'),
  U(4, 'ROBUST_CHANNEL_FIFO_ERROR_CHANNEL_BUSY'),
  U(5, 'ROBUST_CHANNEL_FIFO_ERROR_RUNOUT_OVERFLOW'),
  U(6, 'ROBUST_CHANNEL_FIFO_ERROR_PARSE_ERR'),
  U(7, 'ROBUST_CHANNEL_FIFO_ERROR_PTE_ERR'),
  [
    8,
    'ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT',
    'GPU stopped processing',
    'RESTART_APP',
    'driver',
    'restart-app',
    1,
    "the GPU stopped processing the app's work: restart the app; contact support if it repeats",
  ],
  U(9, 'ROBUST_CHANNEL_GR_ERROR_INSTANCE'),
  U(10, 'ROBUST_CHANNEL_GR_ERROR_SINGLE_STEP'),
  [
    11,
    'ROBUST_CHANNEL_GR_ERROR_MISSING_HW',
    'Invalid or corrupted push buffer stream',
    'RESTART_APP',
    'application',
    'restart-app',
    0,
    'the app likely sent bad data or methods to the GPU (the message may name its PID): restart ' + 'it and check the app/CUDA',
  ],
  U(12, 'ROBUST_CHANNEL_GR_ERROR_SW_METHOD'),
  [
    13,
    'ROBUST_CHANNEL_GR_EXCEPTION / ROBUST_CHANNEL_GR_ERROR_SW_NOTIFY',
    'Graphics Engine Exception',
    'RESTART_APP',
    'application',
    'restart-app',
    0,
    'application fault (out-of-bounds access, illegal instruction): restart the app and debug ' +
      'it with compute-sanitizer/cuda-gdb; repeats on the same TPC/GPC: run DCGM diagnostics',
  ],
  [
    14,
    'ROBUST_CHANNEL_FAKE_ERROR',
    'Unused; fake or injected error from userspace',
    'IGNORE',
    'application',
    'none',
    0,
    'a fake Xid injected from userspace: nothing to do on the GPU',
  ],
  U(15, 'ROBUST_CHANNEL_SCANLINE_TIMEOUT'),
  U(16, 'ROBUST_CHANNEL_VBLANK_CALLBACK_TIMEOUT'),
  U(17, 'ROBUST_CHANNEL_PARAMETER_ERROR'),
  U(18, 'ROBUST_CHANNEL_BUS_MASTER_TIMEOUT_ERROR'),
  U(19, 'ROBUST_CHANNEL_DISP_MISSED_NOTIFIER'),
  U(20, 'ROBUST_CHANNEL_MPEG_ERROR_SW_METHOD'),
  U(21, 'ROBUST_CHANNEL_ME_ERROR_SW_METHOD'),
  U(22, 'ROBUST_CHANNEL_VP_ERROR_SW_METHOD'),
  U(23, 'ROBUST_CHANNEL_RC_LOGGING_ENABLED'),
  U(24, 'ROBUST_CHANNEL_GR_SEMAPHORE_TIMEOUT'),
  [
    25,
    'ROBUST_CHANNEL_GR_ILLEGAL_NOTIFY',
    'Invalid or illegal push buffer stream',
    'RESTART_APP',
    'application',
    'restart-app',
    0,
    'the app likely sent bad data or methods to the GPU: restart it and check the app/CUDA',
  ],
  U(26, 'ROBUST_CHANNEL_FIFO_ERROR_FBISTATE_TIMEOUT'),
  U(27, 'ROBUST_CHANNEL_VP_ERROR'),
  U(28, 'ROBUST_CHANNEL_VP2_ERROR'),
  U(29, 'ROBUST_CHANNEL_BSP_ERROR'),
  U(30, 'ROBUST_CHANNEL_BAD_ADDR_ACCESS'),
  [
    31,
    'ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT',
    'GPU memory page fault',
    'RESTART_APP',
    'application',
    'restart-app',
    0,
    'illegal memory access, typically an application bug: restart the app and debug it with ' +
      'compute-sanitizer; repeated faults on the same GPU across apps: run DCGM diagnostics',
  ],
  [
    32,
    'ROBUST_CHANNEL_PBDMA_ERROR',
    'Invalid or corrupted push buffer stream',
    'RESTART_APP',
    'hardware',
    'restart-app',
    1,
    'the DMA stream between driver and GPU broke, mostly PCIe quality rather than the app: ' +
      'restart the app; check the PCIe link if it repeats',
  ],
  U(33, 'ROBUST_CHANNEL_SEC_ERROR'),
  U(34, 'ROBUST_CHANNEL_MSVLD_ERROR'),
  U(35, 'ROBUST_CHANNEL_MSPDEC_ERROR'),
  U(36, 'ROBUST_CHANNEL_MSPPP_ERROR'),
  [
    37,
    'ROBUST_CHANNEL_FECS_ERR_UNIMP_FIRMWARE_METHOD',
    'Driver firmware error',
    'IGNORE',
    'driver',
    'none',
    0,
    'driver firmware error, no action needed; check the app/CUDA if it repeats',
  ],
  [
    38,
    'ROBUST_CHANNEL_FECS_ERR_WATCHDOG_TIMEOUT',
    'Driver firmware error',
    'IGNORE',
    'driver',
    'none',
    0,
    'driver firmware watchdog timeout, no action needed; contact support if it repeats',
  ],
  [
    39,
    'ROBUST_CHANNEL_CE0_ERROR',
    'Copy Engine Exception',
    'RESTART_APP',
    'hardware',
    'restart-app',
    1,
    `copy engine 0 exception: ${APP_CE}`,
  ],
  [
    40,
    'ROBUST_CHANNEL_CE1_ERROR',
    'Copy Engine Exception',
    'RESTART_APP',
    'hardware',
    'restart-app',
    1,
    `copy engine 1 exception: ${APP_CE}`,
  ],
  [
    41,
    'ROBUST_CHANNEL_CE2_ERROR',
    'Copy Engine Exception',
    'RESTART_APP',
    'hardware',
    'restart-app',
    1,
    `copy engine 2 exception: ${APP_CE}`,
  ],
  U(42, 'ROBUST_CHANNEL_VIC_ERROR'),
  [
    43,
    'ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR',
    'GPU stopped processing',
    'IGNORE',
    'application',
    'none',
    0,
    'the app hit a software-induced fault and was terminated; the GPU stays healthy: nothing to ' + 'do on the GPU',
  ],
  [
    44,
    'ROBUST_CHANNEL_GR_FAULT_DURING_CTXSW',
    'Graphics Engine fault during context switch',
    'IGNORE',
    'driver',
    'none',
    0,
    'graphics engine fault during a context switch, no action needed; contact support if it ' + 'repeats',
  ],
  [
    45,
    'ROBUST_CHANNEL_PREEMPTIVE_REMOVAL',
    'Preemptive cleanup, due to previous errors – Most likely to see when running multiple cuda ' + 'applications and hitting a DBE',
    'WORKFLOW_XID_45',
    'application',
    'none',
    0,
    'the driver tore down an aborted app (Ctrl-C, kill, GPU reset): follow the other Xid logged ' +
      'with it; seen alone: restart Fabric Manager',
  ],
  [
    46,
    'ROBUST_CHANNEL_GPU_TIMEOUT_ERROR',
    'GPU stopped processing',
    'RESET_GPU',
    'hardware',
    'reset-gpu',
    2,
    'the GPU timed out: drain and reset the GPU; contact support if it repeats',
  ],
  U(47, 'ROBUST_CHANNEL_NVENC0_ERROR'),
  [
    48,
    'ROBUST_CHANNEL_GPU_ECC_DBE',
    'Double Bit ECC Error',
    'WORKFLOW_XID_48',
    'memory',
    'reset-gpu',
    2,
    'uncorrectable (double-bit) ECC error: drain and reset the GPU; with 63/64 follow row ' +
      'remapping; SRAM errors over threshold: run field diagnostics and RMA',
  ],
  U(49, 'SILENT_RUNNING_CONSTANT_LEVEL_SET_BY_REGISTRY'),
  U(50, 'SILENT_RUNNING_LEVEL_TRANSITION_DUE_TO_RC_ERROR'),
  U(51, 'SILENT_RUNNING_STRESS_TEST_FAILURE'),
  U(52, 'SILENT_RUNNING_LEVEL_TRANS_DUE_TO_TEMP_RISE'),
  U(53, 'SILENT_RUNNING_TEMP_REDUCED_CLOCKING'),
  [
    54,
    'SILENT_RUNNING_PWR_REDUCED_CLOCKING',
    'Auxiliary power is not connected to the GPU board',
    'CHECK_MECHANICALS',
    'thermal-power',
    'check-hardware',
    2,
    'auxiliary power is not connected to the GPU board: check the seating and power ' + 'connections; contact support if it persists',
  ],
  U(55, 'SILENT_RUNNING_TEMPERATURE_READ_ERROR'),
  U(56, 'DISPLAY_CHANNEL_EXCEPTION'),
  U(57, 'FB_LINK_TRAINING_FAILURE_ERROR'),
  U(58, 'FB_MEMORY_ERROR'),
  U(59, 'PMU_ERROR'),
  [
    60,
    'ROBUST_CHANNEL_SEC2_ERROR',
    'Video processor exception',
    'RESTART_APP',
    'driver',
    'restart-app',
    0,
    'video processor exception: restart the app; investigate the user or NVIDIA software if it ' + 'repeats',
  ],
  U(61, 'PMU_BREAKPOINT'),
  [
    62,
    'PMU_HALT_ERROR',
    'Internal micro-controller halt (newer drivers)',
    'RESET_GPU',
    'driver',
    'reset-gpu',
    2,
    'an internal micro-controller halted: drain and reset the GPU; contact support if it ' + 'repeats',
  ],
  [
    63,
    'INFOROM_DRAM_RETIREMENT_EVENT',
    'GPU memory remapping event',
    'IGNORE',
    'memory',
    'none',
    1,
    'the GPU recorded a row remapping (or page retirement) after ECC errors, applied at the ' +
      'next GPU reset: no immediate action; reset when convenient and watch the remap counts',
  ],
  [
    64,
    'INFOROM_DRAM_RETIREMENT_FAILURE',
    'GPU memory remapping failure',
    'RESET_GPU',
    'memory',
    'reset-gpu',
    2,
    'row remapping (or page retirement) failed: drain and reset the GPU; if it comes back, ' + 'contact support (RMA)',
  ],
  U(65, 'ROBUST_CHANNEL_NVENC1_ERROR'),
  [
    66,
    'ROBUST_CHANNEL_FECS_ERR_REG_ACCESS_VIOLATION',
    'Illegal access by driver',
    'IGNORE',
    'driver',
    'none',
    0,
    'illegal register access by the driver, no action needed; investigate the software if it ' + 'repeats',
  ],
  [
    67,
    'ROBUST_CHANNEL_FECS_ERR_VERIF_VIOLATION',
    'Illegal access by driver',
    'IGNORE',
    'driver',
    'none',
    0,
    'illegal access by the driver, no action needed; contact support if it repeats',
  ],
  [
    68,
    'ROBUST_CHANNEL_NVDEC0_ERROR',
    'NVDEC0 Exception',
    'RESTART_APP',
    'hardware',
    'restart-app',
    1,
    `video decoder NVDEC0 exception: ${APP_CE}`,
  ],
  [
    69,
    'ROBUST_CHANNEL_GR_CLASS_ERROR',
    'Graphics Engine class error',
    'RESTART_APP',
    'application',
    'restart-app',
    0,
    'the app used a graphics engine class wrongly: restart it and check the app/CUDA',
  ],
  [70, 'ROBUST_CHANNEL_CE3_ERROR', 'CE3: Unknown Error', 'RESTART_APP', 'hardware', 'restart-app', 1, `copy engine 3 error: ${APP_CE}`],
  [71, 'ROBUST_CHANNEL_CE4_ERROR', 'CE4: Unknown Error', 'RESTART_APP', 'hardware', 'restart-app', 1, `copy engine 4 error: ${APP_CE}`],
  [72, 'ROBUST_CHANNEL_CE5_ERROR', 'CE5: Unknown Error', 'RESTART_APP', 'hardware', 'restart-app', 1, `copy engine 5 error: ${APP_CE}`],
  U(73, 'ROBUST_CHANNEL_NVENC2_ERROR'),
  [
    74,
    'NVLINK_ERROR',
    'NVLINK Error',
    'WORKFLOW_NVLINK_ERR',
    'nvlink',
    'check-nvlink',
    2,
    'NVLink error to a GPU or NVSwitch (may be the far end failing): decode the registers per ' +
      "NVIDIA's NVLink workflow, reset the GPU or reboot; if it persists, check link mechanics " +
      'and contact the vendor',
  ],
  [75, 'ROBUST_CHANNEL_CE6_ERROR', 'CE6: Unknown Error', 'RESTART_APP', 'hardware', 'restart-app', 1, `copy engine 6 error: ${APP_CE}`],
  [76, 'ROBUST_CHANNEL_CE7_ERROR', 'CE7: Unknown Error', 'RESTART_APP', 'hardware', 'restart-app', 1, `copy engine 7 error: ${APP_CE}`],
  [77, 'ROBUST_CHANNEL_CE8_ERROR', 'CE8: Unknown Error', 'RESTART_APP', 'hardware', 'restart-app', 1, `copy engine 8 error: ${APP_CE}`],
  [
    78,
    'VGPU_START_ERROR',
    'vGPU Start Error',
    'UPDATE_SWFW',
    'driver',
    'update-software',
    1,
    'a vGPU failed to start (guest/host driver mismatch or unsupported vGPU type): update ' + 'drivers and firmware',
  ],
  [
    79,
    'ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS',
    'GPU has fallen off the bus',
    'RESTART_BM',
    'hardware',
    'reboot',
    2,
    'the GPU fell off the bus (PCIe link down): drain and reboot the node, review PCIe/system ' +
      'event logs; if it repeats, open a hardware ticket (RMA)',
  ],
  [
    80,
    'PBDMA_PUSHBUFFER_CRC_MISMATCH',
    'Corrupted data sent to GPU',
    'RESTART_APP',
    'application',
    'restart-app',
    0,
    'corrupted data was sent to the GPU: restart the app and check the app/CUDA',
  ],
  U(81, 'ROBUST_CHANNEL_VGA_SUBSYSTEM_ERROR'),
  [82, 'ROBUST_CHANNEL_NVJPG0_ERROR', 'NVJPG0 Error', 'RESTART_APP', 'hardware', 'restart-app', 1, `JPEG engine NVJPG0 error: ${APP_CE}`],
  [83, 'ROBUST_CHANNEL_NVDEC1_ERROR', 'NVDEC1 Error', 'RESTART_APP', 'hardware', 'restart-app', 1, `video decoder NVDEC1 error: ${APP_CE}`],
  [84, 'ROBUST_CHANNEL_NVDEC2_ERROR', 'NVDEC2 Error', 'RESTART_APP', 'hardware', 'restart-app', 1, `video decoder NVDEC2 error: ${APP_CE}`],
  [85, 'ROBUST_CHANNEL_CE9_ERROR', 'CE9: Unknown Error', 'RESTART_APP', 'hardware', 'restart-app', 1, `copy engine 9 error: ${APP_CE}`],
  [
    86,
    'ROBUST_CHANNEL_OFA0_ERROR',
    'OFA Exception',
    'RESTART_APP',
    'hardware',
    'restart-app',
    1,
    `optical flow accelerator exception: ${APP_CE}`,
  ],
  U(87, 'NVTELEMETRY_DRIVER_REPORT'),
  [88, 'ROBUST_CHANNEL_NVDEC3_ERROR', 'NVDEC3 Error', 'RESTART_APP', 'hardware', 'restart-app', 1, `video decoder NVDEC3 error: ${APP_CE}`],
  [89, 'ROBUST_CHANNEL_NVDEC4_ERROR', 'NVDEC4 Error', 'RESTART_APP', 'hardware', 'restart-app', 1, `video decoder NVDEC4 error: ${APP_CE}`],
  U(90, 'LTC_ERROR'),
  U(91, 'RESERVED_XID'),
  [
    92,
    'EXCESSIVE_SBE_INTERRUPTS',
    'High single-bit ECC error rate',
    'IGNORE',
    'memory',
    'none',
    1,
    'high rate of corrected single-bit ECC errors: no immediate action (NVIDIA: ignore); watch ' +
      'the ECC counters and contact support if it keeps up',
  ],
  [
    93,
    'INFOROM_ERASE_LIMIT_EXCEEDED',
    'Non-fatal violation of provisioned InfoROM wear limit',
    'IGNORE',
    'hardware',
    'none',
    1,
    'the driver could not update the InfoROM (provisioned wear limit): clear the limit with ' +
      'nvflash --elsessionclear; report to NVIDIA if that does not help',
  ],
  [
    94,
    'ROBUST_CHANNEL_CONTAINED_ERROR',
    'Contained memory error',
    'RESTART_APP',
    'memory',
    'restart-app',
    1,
    'contained (ECC) memory error, only the affected app must restart; other apps are ' + 'unaffected: reset the GPU when convenient',
  ],
  [
    95,
    'ROBUST_CHANNEL_UNCONTAINED_ERROR',
    'Uncontained memory error',
    'RESET_GPU',
    'memory',
    'reset-gpu',
    2,
    'uncontained (ECC) memory error affecting several apps: drain and reset the GPU before apps ' + 'restart',
  ],
  [96, 'ROBUST_CHANNEL_NVDEC5_ERROR', 'NVDEC5 Error', 'RESTART_APP', 'hardware', 'restart-app', 1, `video decoder NVDEC5 error: ${APP_CE}`],
  [97, 'ROBUST_CHANNEL_NVDEC6_ERROR', 'NVDEC6 Error', 'RESTART_APP', 'hardware', 'restart-app', 1, `video decoder NVDEC6 error: ${APP_CE}`],
  [98, 'ROBUST_CHANNEL_NVDEC7_ERROR', 'NVDEC7 Error', 'RESTART_APP', 'hardware', 'restart-app', 1, `video decoder NVDEC7 error: ${APP_CE}`],
  [99, 'ROBUST_CHANNEL_NVJPG1_ERROR', 'NVJPG1 Error', 'RESTART_APP', 'hardware', 'restart-app', 1, `JPEG engine NVJPG1 error: ${APP_CE}`],
  [100, 'ROBUST_CHANNEL_NVJPG2_ERROR', 'NVJPG2 Error', 'RESTART_APP', 'hardware', 'restart-app', 1, `JPEG engine NVJPG2 error: ${APP_CE}`],
  [101, 'ROBUST_CHANNEL_NVJPG3_ERROR', 'NVJPG3 Error', 'RESTART_APP', 'hardware', 'restart-app', 1, `JPEG engine NVJPG3 error: ${APP_CE}`],
  [102, 'ROBUST_CHANNEL_NVJPG4_ERROR', 'NVJPG4 Error', 'RESTART_APP', 'hardware', 'restart-app', 1, `JPEG engine NVJPG4 error: ${APP_CE}`],
  [103, 'ROBUST_CHANNEL_NVJPG5_ERROR', 'NVJPG5 Error', 'RESTART_APP', 'hardware', 'restart-app', 1, `JPEG engine NVJPG5 error: ${APP_CE}`],
  [104, 'ROBUST_CHANNEL_NVJPG6_ERROR', 'NVJPG6 Error', 'RESTART_APP', 'hardware', 'restart-app', 1, `JPEG engine NVJPG6 error: ${APP_CE}`],
  [105, 'ROBUST_CHANNEL_NVJPG7_ERROR', 'NVJPG7 Error', 'RESTART_APP', 'hardware', 'restart-app', 1, `JPEG engine NVJPG7 error: ${APP_CE}`],
  [106, 'SMBPBI_TEST_MESSAGE', 'SMBPBI Test Message', 'IGNORE', 'system', 'none', 0, 'an SMBPBI (out-of-band) test message: nothing to do'],
  [
    107,
    'SMBPBI_TEST_MESSAGE_SILENT',
    'SMBPBI Test Message Silent',
    'IGNORE',
    'system',
    'none',
    0,
    'an SMBPBI (out-of-band) test message: nothing to do',
  ],
  [
    108,
    'NVLINK_REMOTE_TRANSLATION_ERROR',
    'Unused (NVLINK_REMOTE_TRANSLATION_ERROR)',
    'IGNORE',
    'nvlink',
    'none',
    0,
    "listed as unused, NVIDIA says ignore; with app faults follow the Xid 137 flow (an app's " +
      "illegal NVLink peer access) (NVSentinel's CSV: DESTINATION_FLA_TRANSLATION_ERROR, report " +
      'issue)',
  ],
  [
    109,
    'ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR',
    'Context Switch Timeout Error',
    'RESET_GPU',
    'driver',
    'reset-gpu',
    2,
    'context switch timed out: drain and reset the GPU; contact support if it repeats',
  ],
  [
    110,
    'SEC_FAULT_ERROR',
    'Security Fault Error',
    'RESET_GPU',
    'hardware',
    'reset-gpu',
    2,
    'security fault, uncommon unless hardware failed: drain, revert recent hardware changes and ' +
      'cold-reset the node; contact the hardware vendor if it persists',
  ],
  U(111, 'BUNDLE_ERROR_EVENT'),
  U(112, 'DISP_SUPERVISOR_ERROR'),
  U(113, 'DP_LT_FAILURE'),
  U(114, 'HEAD_RG_UNDERFLOW'),
  U(115, 'CORE_CHANNEL_REGS'),
  U(116, 'WINDOW_CHANNEL_REGS'),
  U(117, 'CURSOR_CHANNEL_REGS'),
  U(118, 'HEAD_REGS'),
  [
    119,
    'GSP_RPC_TIMEOUT',
    'GSP RPC Timeout',
    'RESET_GPU',
    'driver',
    'reset-gpu',
    2,
    "the GPU's GSP core did not answer an RPC: drain and reset the GPU (power-cycle the node " +
      "if it persists); recurring after a power cycle: follow NVIDIA's GPU debug guidelines",
  ],
  [
    120,
    'GSP_ERROR',
    'GSP Error',
    'RESET_GPU',
    'driver',
    'reset-gpu',
    2,
    "error in code running on the GPU's GSP core: drain and reset the GPU (power-cycle the " +
      "node if it persists); recurring after a power cycle: follow NVIDIA's GPU debug guidelines",
  ],
  [
    121,
    'C2C_ERROR',
    'C2C Error',
    'IGNORE',
    'nvlink',
    'none',
    1,
    'corrected errors on the C2C NVLink to the Grace CPU, no operational impact: reset the GPU ' +
      'at a service window to retrain the link',
  ],
  U(122, 'SPI_PMU_RPC_READ_FAIL'),
  U(123, 'SPI_PMU_RPC_WRITE_FAIL'),
  U(124, 'SPI_PMU_RPC_ERASE_FAIL'),
  U(125, 'INFOROM_FS_ERROR'),
  [126, 'ROBUST_CHANNEL_CE10_ERROR', 'CE10: Unknown Error', 'RESTART_APP', 'hardware', 'restart-app', 1, `copy engine 10 error: ${APP_CE}`],
  [127, 'ROBUST_CHANNEL_CE11_ERROR', 'CE11: Unknown Error', 'RESTART_APP', 'hardware', 'restart-app', 1, `copy engine 11 error: ${APP_CE}`],
  [128, 'ROBUST_CHANNEL_CE12_ERROR', 'CE12: Unknown Error', 'RESTART_APP', 'hardware', 'restart-app', 1, `copy engine 12 error: ${APP_CE}`],
  [129, 'ROBUST_CHANNEL_CE13_ERROR', 'CE13: Unknown Error', 'RESTART_APP', 'hardware', 'restart-app', 1, `copy engine 13 error: ${APP_CE}`],
  [130, 'ROBUST_CHANNEL_CE14_ERROR', 'CE14: Unknown Error', 'RESTART_APP', 'hardware', 'restart-app', 1, `copy engine 14 error: ${APP_CE}`],
  [131, 'ROBUST_CHANNEL_CE15_ERROR', 'CE15: Unknown Error', 'RESTART_APP', 'hardware', 'restart-app', 1, `copy engine 15 error: ${APP_CE}`],
  [132, 'ROBUST_CHANNEL_CE16_ERROR', 'CE16: Unknown Error', 'RESTART_APP', 'hardware', 'restart-app', 1, `copy engine 16 error: ${APP_CE}`],
  [133, 'ROBUST_CHANNEL_CE17_ERROR', 'CE17: Unknown Error', 'RESTART_APP', 'hardware', 'restart-app', 1, `copy engine 17 error: ${APP_CE}`],
  [134, 'ROBUST_CHANNEL_CE18_ERROR', 'CE18: Unknown Error', 'RESTART_APP', 'hardware', 'restart-app', 1, `copy engine 18 error: ${APP_CE}`],
  [135, 'ROBUST_CHANNEL_CE19_ERROR', 'CE19: Unknown Error', 'RESTART_APP', 'hardware', 'restart-app', 1, `copy engine 19 error: ${APP_CE}`],
  [
    136,
    'ALI_TRAINING_FAIL',
    'Link Training Failed',
    'RESET_GPU',
    'nvlink',
    'reset-gpu',
    2,
    'NVLink link training failed: drain and reset the GPU; investigate link signal integrity if ' + 'it repeats',
  ],
  [
    137,
    'NVLINK_PRIV_ERR',
    'NVLink Privilege Error',
    'IGNORE',
    'application',
    'none',
    0,
    'illegal NVLink peer-to-peer access, typically an app bug: debug the app with ' +
      'compute-sanitizer/cuda-gdb; file a bug if inconclusive',
  ],
  U(138, 'ROBUST_CHANNEL_DLA_ERROR'),
  [
    139,
    'ROBUST_CHANNEL_OFA1_ERROR',
    'OFA1 Error',
    'RESTART_APP',
    'hardware',
    'restart-app',
    1,
    `optical flow accelerator OFA1 error: ${APP_CE}`,
  ],
  [
    140,
    'UNRECOVERABLE_ECC_ERROR_ESCAPE',
    'ECC Unrecovered Error',
    'RESET_GPU',
    'memory',
    'reset-gpu',
    2,
    'uncorrectable memory errors the driver could not offline or remap: drain and reset the ' +
      'GPU; contact the hardware vendor if it persists',
  ],
  [
    141,
    'ROBUST_CHANNEL_FAST_PATH_ERROR',
    'CUDA Fast Path Error',
    'IGNORE',
    'driver',
    'none',
    0,
    'CUDA fast path error, no action needed; contact support if it repeats',
  ],
  [
    142,
    'ROBUST_CHANNEL_NVENC3_ERROR',
    'NVENC3 Error',
    'CONTACT_SUPPORT',
    'hardware',
    'contact-support',
    2,
    'video encoder NVENC3 error: drain the GPU and contact NVIDIA support',
  ],
  [
    143,
    'GPU_INIT_ERROR',
    'GPU Initialization Error',
    'RESET_GPU',
    'hardware',
    'reset-gpu',
    2,
    'the GPU failed to initialize: reset the GPU; contact support if it repeats',
  ],
  [
    144,
    'NVLINK_SAW_ERROR',
    'NVLINK: SAW Error',
    'WORKFLOW_NVLINK5_ERR',
    'nvlink',
    'check-nvlink',
    1,
    "NVLink5 SAW error: decode IntrInfo/ErrorStatus per NVIDIA's Xid 144-150 table (non-fatal: " +
      'ignore; fatal: reset the GPU, an Xid 154 will say so)',
  ],
  [
    145,
    'NVLINK_RLW_ERROR',
    'NVLINK: RLW Error',
    'WORKFLOW_NVLINK5_ERR',
    'nvlink',
    'check-nvlink',
    1,
    "NVLink5 RLW error: decode IntrInfo/ErrorStatus per NVIDIA's Xid 144-150 table (non-fatal: " +
      'ignore or restart the app; fatal: reset the GPU, an Xid 154 will say so)',
  ],
  [
    146,
    'NVLINK_TLW_ERROR',
    'NVLINK: TLW Error',
    'WORKFLOW_NVLINK5_ERR',
    'nvlink',
    'check-nvlink',
    1,
    "NVLink5 TLW error: decode IntrInfo/ErrorStatus per NVIDIA's Xid 144-150 table (non-fatal: " +
      'ignore; fatal: reset the GPU, an Xid 154 will say so)',
  ],
  [
    147,
    'NVLINK_TREX_ERROR',
    'NVLINK: TREX Error',
    'WORKFLOW_NVLINK5_ERR',
    'nvlink',
    'check-nvlink',
    1,
    "NVLink5 TREX error, non-fatal per NVIDIA's Xid 144-150 table: no immediate action; " + 'contact support',
  ],
  [
    148,
    'NVLINK_NVLPW_CTRL_ERROR',
    'NVLINK: NVLPW_CTRL Error',
    'WORKFLOW_NVLINK5_ERR',
    'nvlink',
    'check-nvlink',
    1,
    "NVLink5 NVLPW_CTRL error, non-fatal per NVIDIA's Xid 144-150 table: no immediate action; " + 'contact support',
  ],
  [
    149,
    'NVLINK_NETIR_ERROR',
    'NVLINK: NETIR Error',
    'WORKFLOW_NVLINK5_ERR',
    'nvlink',
    'check-nvlink',
    2,
    "NVLink5 NETIR error, mostly link-fatal per NVIDIA's Xid 144-150 table: drain and reset " +
      'the GPU; check link signal integrity, cables and the peer device',
  ],
  [
    150,
    'NVLINK_MSE_ERROR',
    'NVLINK: MSE Error',
    'WORKFLOW_NVLINK5_ERR',
    'nvlink',
    'check-nvlink',
    2,
    "NVLink5 MSE error, fatal per NVIDIA's Xid 144-150 table: drain and reset the GPU; contact " + 'support',
  ],
  [
    151,
    'ROBUST_CHANNEL_KEY_ROTATION_ERROR',
    'Key rotation Error',
    'RESTART_VM',
    'driver',
    'reboot',
    2,
    'key rotation error (confidential computing): restart the VM that owns the GPU; contact ' + 'support if it repeats',
  ],
  [
    152,
    'ROBUST_CHANNEL_DLA_SMMU_ERROR',
    'DLA SMMU Error',
    'IGNORE',
    'hardware',
    'none',
    0,
    'DLA SMMU error, no action needed; contact support if it repeats',
  ],
  [
    153,
    'ROBUST_CHANNEL_DLA_TIMEOUT',
    'DLA timeout Error',
    'IGNORE',
    'hardware',
    'none',
    0,
    'DLA timeout, no action needed; contact support if it repeats',
  ],
  [
    154,
    'GPU_RECOVERY_ACTION_CHANGED',
    'GPU Recovery Action Changed',
    'XID_154',
    'system',
    'reset-gpu',
    2,
    "the driver changed the GPU's required recovery action (logged with another Xid): do what " +
      'the message names (Drain P2P, Drain and Reset, GPU Reset Required, Node Reboot Required; ' +
      'None: nothing)',
  ],
  [
    155,
    'NVLINK_SW_DEFINED_ERROR',
    'NVLINK: SW Defined Error',
    'RESET_GPU',
    'nvlink',
    'reset-gpu',
    2,
    'an NVLink went down on purpose (e.g. to sleep): drain and reset the GPU; investigate the ' + 'software or user if unexpected',
  ],
  [
    156,
    'RESOURCE_RETIREMENT_EVENT',
    'Resource Retirement Event',
    'RESET_GPU',
    'memory',
    'reset-gpu',
    2,
    'the GPU retired a resource: drain and reset the GPU to apply it',
  ],
  [
    157,
    'RESOURCE_RETIREMENT_FAILURE',
    'Resource Retirement Failure',
    'IGNORE',
    'memory',
    'none',
    1,
    'no repair possible for lack of spare resources: workloads may still run but the Xid may ' + 'recur; contact support',
  ],
  [
    158,
    'GPU_FATAL_TIMEOUT',
    'GPU Fatal Timeout',
    'RESET_GPU',
    'hardware',
    'reset-gpu',
    2,
    'fatal GPU timeout: drain and reset the GPU; contact support if it repeats',
  ],
  [
    159,
    'ROBUST_CHANNEL_CHI_NON_DATA_ERROR',
    'CHI Non-Data Error',
    'CHECK_UVM',
    'nvlink',
    'reset-gpu',
    2,
    'CHI non-data error on the C2C link: if UVM or vGPU is in use (CUDA uses UVM), drain and ' +
      'reset the GPU, otherwise ignore; usually sympathetic to another error',
  ],
  [
    160,
    'CHANNEL_RETIREMENT_EVENT',
    'Channel Retirement Event',
    'IGNORE',
    'driver',
    'none',
    1,
    'a channel was retired: no immediate action (NVIDIA: ignore, investigate software; ' +
      "NVSentinel's CSV: restart bare metal); reboot if it repeats",
  ],
  [
    161,
    'CHANNEL_RETIREMENT_FAILURE',
    'Channel Retirement Failure',
    'IGNORE',
    'driver',
    'none',
    1,
    'a channel could not be retired: no immediate action (NVIDIA: ignore); investigate the ' + 'software if it repeats',
  ],
  [
    162,
    'PSHC_REENGAGED',
    'Power Smoothing HW Circuitry capability reengaged',
    '',
    'thermal-power',
    'none',
    0,
    "power smoothing is back on: nothing to do (the catalog gives no bucket; NVSentinel's CSV " + 'says RESET_GPU for 162)',
  ],
  [
    163,
    'PSHC_DISENGAGED',
    'Power Smoothing HW Circuitry capability disengaged',
    '',
    'thermal-power',
    'check-hardware',
    1,
    'power smoothing turned off, no GPU reset required: resolve the thermal events if it is ' +
      'wanted; if disabled by a timeout, reload the driver or reset the GPU',
  ],
  [
    164,
    'PSHC_LOW_LIFETIME',
    'Power Smoothing HW Circuitry low lifetime reached',
    '',
    'thermal-power',
    'check-hardware',
    1,
    'power smoothing circuitry near end of life and soon disabled: watch power swings; plan to ' + 'replace the GPU if smoothing is needed',
  ],
  [
    165,
    'PSHC_ZERO_LIFETIME',
    'Power Smoothing HW Circuitry lifetime exhausted',
    '',
    'thermal-power',
    'check-hardware',
    1,
    'power smoothing circuitry exhausted, power swings will occur: replace the GPU if they are ' +
      'not acceptable; check the site can absorb them',
  ],
  [
    166,
    'NVLINK_SECURE_CRYPTO_ERR',
    'CC traffic seen prior to link properly being configured for encrypted traffic',
    '',
    'nvlink',
    'check-nvlink',
    1,
    'confidential-computing traffic before the NVLink was set up for encryption (CC mode only): ' +
      'check the NVLink CC configuration (the catalog gives no bucket)',
  ],
  [
    167,
    'PCIE_FATAL_TIMEOUT',
    'PCIE_FATAL_TIMEOUT',
    '',
    'hardware',
    'check-hardware',
    2,
    'fatal PCIe timeout: drain the GPU and check its PCIe link (the catalog gives no bucket)',
  ],
  [
    168,
    'REDUCED_GPU_MEMORY_CAPACITY',
    'Errors found in WPR (write protected region)',
    '',
    'memory',
    'reboot',
    2,
    'memory errors in the write-protected region, seen only with ECC off: enable ECC (for row ' +
      'remapping) or reboot to retry with a shifted WPR',
  ],
  [
    169,
    'SEC2_HALT_ERROR',
    'Internal micro-controller halt',
    '',
    'driver',
    'reset-gpu',
    2,
    'an internal micro-controller (SEC2) halted: drain and reset the GPU as for Xid 62 (the ' + 'catalog gives no bucket)',
  ],
  [
    170,
    'NVLINK_SECURE_OTHER',
    'Interrupt seen in CC mode',
    '',
    'nvlink',
    'check-nvlink',
    1,
    'NVLink interrupt in confidential-computing mode (CC mode only): check the NVLink (the ' + 'catalog gives no bucket)',
  ],
  [
    171,
    'UNCORRECTABLE_DRAM_ERROR',
    'Additional to Xid 48 providing more details on particulars of fault to differentiate ' + 'DRAM/SRAM',
    '',
    'memory',
    'reset-gpu',
    2,
    'details of an Xid 48 in DRAM: drain and reset the GPU and follow row remapping (Xid 63/64) ' + 'as for Xid 48',
  ],
  [
    172,
    'UNCORRECTABLE_SRAM_ERROR',
    'Additional to Xid 48 providing more details on particulars of fault to differentiate ' + 'DRAM/SRAM',
    '',
    'memory',
    'reset-gpu',
    2,
    'details of an Xid 48 in SRAM: drain and reset the GPU; SRAM error threshold exceeded: run ' + 'field diagnostics and RMA',
  ],
];

function build(): { catalog: Map<number, XidEntry>; nvidia: Map<number, XidNvidiaRow> } {
  const catalog = new Map<number, XidEntry>();
  const nvidia = new Map<number, XidNvidiaRow>();
  for (const [code, mnemonic, name, immediate, origin, action, severity, advice] of ROWS) {
    if (catalog.has(code)) throw new Error(`xid-catalog: code ${code} twice`);
    catalog.set(code, Object.freeze({ code, name, origin, action, severity, advice }));
    nvidia.set(code, Object.freeze({ mnemonic, immediate }));
  }
  return { catalog, nvidia };
}

const BUILT = build();

/** Every Xid code NVIDIA's catalog lists (1..172), keyed by code. */
export const XID_CATALOG: ReadonlyMap<number, XidEntry> = BUILT.catalog;
/** NVIDIA's mnemonic and immediate-action bucket for each catalog code, as the catalog writes them. */
export const XID_NVIDIA: ReadonlyMap<number, XidNvidiaRow> = BUILT.nvidia;

/** The entry for a code; an unknown code gets a conservative warning entry that says it is not in the catalog. */
export function xidEntry(code: number): XidEntry {
  const known = XID_CATALOG.get(code);
  if (known) return known;
  return {
    code,
    name: `Unknown Xid ${code}`,
    origin: 'unknown',
    action: 'none',
    severity: 1,
    advice:
      `Xid ${code} is not in l9gpu's catalog (NVIDIA's, codes 1..172): look it up at ` +
      `https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html; treated as a warning`,
  };
}
