/**
 * The Xid catalog against NVIDIA's catalog text
 * (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html, table "Xids";
 * cross-checked with NVIDIA/NVSentinel xiderrorsmapping.csv @ 6f8b0fcf): each
 * expectation below quotes that table's Description and Immediate Action.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { XID_CATALOG, XID_NVIDIA, xidEntry, type XidAction, type XidOrigin } from '../../src/health/xid-catalog.js';

interface Expect {
  name: string;
  mnemonic: string;
  immediate: string;
  origin: XidOrigin;
  action: XidAction;
  severity: 0 | 1 | 2;
}

const EXPECTED: Record<number, Expect> = {
  // "This event is logged for general user application faults."
  13: {
    name: 'Graphics Engine Exception',
    mnemonic: 'ROBUST_CHANNEL_GR_EXCEPTION / ROBUST_CHANNEL_GR_ERROR_SW_NOTIFY',
    immediate: 'RESTART_APP',
    origin: 'application',
    action: 'restart-app',
    severity: 0,
  },
  // "Typically these are application-level bugs"
  31: {
    name: 'GPU memory page fault',
    mnemonic: 'ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT',
    immediate: 'RESTART_APP',
    origin: 'application',
    action: 'restart-app',
    severity: 0,
  },
  // "The GPU remains in a healthy state."
  43: {
    name: 'GPU stopped processing',
    mnemonic: 'ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR',
    immediate: 'IGNORE',
    origin: 'application',
    action: 'none',
    severity: 0,
  },
  45: {
    name: 'Preemptive cleanup, due to previous errors – Most likely to see when running multiple cuda applications and hitting a DBE',
    mnemonic: 'ROBUST_CHANNEL_PREEMPTIVE_REMOVAL',
    immediate: 'WORKFLOW_XID_45',
    origin: 'application',
    action: 'none',
    severity: 0,
  },
  // "A GPU reset or node reboot is needed to clear this error."
  48: {
    name: 'Double Bit ECC Error',
    mnemonic: 'ROBUST_CHANNEL_GPU_ECC_DBE',
    immediate: 'WORKFLOW_XID_48',
    origin: 'memory',
    action: 'reset-gpu',
    severity: 2,
  },
  // IGNORE / IGNORE in the catalog; l9gpu warns (remap applied at the next reset).
  63: {
    name: 'GPU memory remapping event',
    mnemonic: 'INFOROM_DRAM_RETIREMENT_EVENT',
    immediate: 'IGNORE',
    origin: 'memory',
    action: 'none',
    severity: 1,
  },
  64: {
    name: 'GPU memory remapping failure',
    mnemonic: 'INFOROM_DRAM_RETIREMENT_FAILURE',
    immediate: 'RESET_GPU',
    origin: 'memory',
    action: 'reset-gpu',
    severity: 2,
  },
  74: {
    name: 'NVLINK Error',
    mnemonic: 'NVLINK_ERROR',
    immediate: 'WORKFLOW_NVLINK_ERR',
    origin: 'nvlink',
    action: 'check-nvlink',
    severity: 2,
  },
  79: {
    name: 'GPU has fallen off the bus',
    mnemonic: 'ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS',
    immediate: 'RESTART_BM',
    origin: 'hardware',
    action: 'reboot',
    severity: 2,
  },
  // IGNORE / CONTACT_SUPPORT in the catalog; l9gpu warns.
  92: {
    name: 'High single-bit ECC error rate',
    mnemonic: 'EXCESSIVE_SBE_INTERRUPTS',
    immediate: 'IGNORE',
    origin: 'memory',
    action: 'none',
    severity: 1,
  },
  // "these errors are contained to one application, and the application that encountered this error must be restarted"
  94: {
    name: 'Contained memory error',
    mnemonic: 'ROBUST_CHANNEL_CONTAINED_ERROR',
    immediate: 'RESTART_APP',
    origin: 'memory',
    action: 'restart-app',
    severity: 1,
  },
  // "the affected GPU must be reset before applications can restart"
  95: {
    name: 'Uncontained memory error',
    mnemonic: 'ROBUST_CHANNEL_UNCONTAINED_ERROR',
    immediate: 'RESET_GPU',
    origin: 'memory',
    action: 'reset-gpu',
    severity: 2,
  },
  119: { name: 'GSP RPC Timeout', mnemonic: 'GSP_RPC_TIMEOUT', immediate: 'RESET_GPU', origin: 'driver', action: 'reset-gpu', severity: 2 },
  120: { name: 'GSP Error', mnemonic: 'GSP_ERROR', immediate: 'RESET_GPU', origin: 'driver', action: 'reset-gpu', severity: 2 },
  154: {
    name: 'GPU Recovery Action Changed',
    mnemonic: 'GPU_RECOVERY_ACTION_CHANGED',
    immediate: 'XID_154',
    origin: 'system',
    action: 'reset-gpu',
    severity: 2,
  },
};

test("representative codes match NVIDIA's catalog text", () => {
  for (const [key, want] of Object.entries(EXPECTED)) {
    const code = Number(key);
    const e = xidEntry(code);
    assert.equal(e, XID_CATALOG.get(code), `xid ${code}: xidEntry returns the catalog's entry`);
    assert.deepEqual(
      { name: e.name, origin: e.origin, action: e.action, severity: e.severity },
      { name: want.name, origin: want.origin, action: want.action, severity: want.severity },
      `xid ${code}`,
    );
    assert.deepEqual(XID_NVIDIA.get(code), { mnemonic: want.mnemonic, immediate: want.immediate }, `xid ${code} NVIDIA row`);
  }
  assert.match(xidEntry(79).advice, /fell off the bus/);
  assert.match(xidEntry(79).advice, /RMA/);
});

test('unknown code: a conservative warning that says it is not in the catalog', () => {
  const e = xidEntry(9999);
  assert.equal(e.code, 9999);
  assert.equal(e.severity, 1);
  assert.equal(e.origin, 'unknown');
  assert.match(e.advice, /not in l9gpu's catalog/);
  assert.ok(e.name.includes('9999'));
  assert.equal(XID_CATALOG.has(9999), false);
  assert.equal(xidEntry(0).severity, 1);
});

test('covers every code NVIDIA lists, 1..172', () => {
  assert.equal(XID_CATALOG.size, 172);
  for (let c = 1; c <= 172; c++) assert.ok(XID_CATALOG.has(c), `xid ${c} missing`);
  // "Unused" codes: NVIDIA says contact support if seen.
  for (const c of [1, 9, 24, 57, 58, 90, 122, 138]) {
    const e = xidEntry(c);
    assert.match(e.name, /^Unused \(/, `xid ${c}`);
    assert.equal(e.action, 'contact-support');
    assert.equal(XID_NVIDIA.get(c)?.immediate, 'CONTACT_SUPPORT');
  }
});

const ORIGINS: readonly XidOrigin[] = ['application', 'driver', 'hardware', 'memory', 'nvlink', 'thermal-power', 'system', 'unknown'];
const ACTIONS: readonly XidAction[] = [
  'none',
  'restart-app',
  'reset-gpu',
  'reboot',
  'check-nvlink',
  'check-hardware',
  'update-software',
  'contact-support',
];
/** NVIDIA's immediate-action bucket -> the action it must map to (the file header's table). */
const BUCKET: Record<string, XidAction> = {
  IGNORE: 'none',
  WORKFLOW_XID_45: 'none',
  RESTART_APP: 'restart-app',
  RESET_GPU: 'reset-gpu',
  WORKFLOW_XID_48: 'reset-gpu',
  CHECK_UVM: 'reset-gpu',
  XID_154: 'reset-gpu',
  RESTART_BM: 'reboot',
  RESTART_VM: 'reboot',
  WORKFLOW_NVLINK_ERR: 'check-nvlink',
  WORKFLOW_NVLINK5_ERR: 'check-nvlink',
  CHECK_MECHANICALS: 'check-hardware',
  UPDATE_SWFW: 'update-software',
  CONTACT_SUPPORT: 'contact-support',
};

test("every entry is well-formed and follows NVIDIA's bucket", () => {
  for (const [key, e] of XID_CATALOG) {
    assert.equal(e.code, key, `xid ${key}: code matches key`);
    assert.ok(Number.isInteger(e.code) && e.code > 0);
    assert.ok(e.name.trim().length > 0, `xid ${key}: name`);
    assert.ok(e.advice.trim().length > 0, `xid ${key}: advice`);
    assert.ok(!e.advice.includes('\n'), `xid ${key}: advice is one line`);
    assert.ok(ORIGINS.includes(e.origin), `xid ${key}: origin`);
    assert.ok(ACTIONS.includes(e.action), `xid ${key}: action`);
    assert.ok(e.severity === 0 || e.severity === 1 || e.severity === 2, `xid ${key}: severity`);
    if (e.action === 'none' || e.action === 'restart-app')
      assert.ok(e.severity <= 1, `xid ${key}: ${e.action} with severity ${e.severity}`);
    if (e.action === 'reset-gpu' || e.action === 'reboot' || e.action === 'contact-support')
      assert.equal(e.severity, 2, `xid ${key}: ${e.action} must drain`);
    if (e.origin === 'application') assert.equal(e.severity, 0, `xid ${key}: an application's fault leaves the GPU ok`);
    const row = XID_NVIDIA.get(key);
    assert.ok(row && row.mnemonic.length > 0, `xid ${key}: NVIDIA row`);
    if (row.immediate !== '') assert.equal(e.action, BUCKET[row.immediate], `xid ${key}: bucket ${row.immediate}`);
    else assert.ok(key >= 162, `xid ${key}: only 162.. lack a bucket in the catalog`);
  }
});
