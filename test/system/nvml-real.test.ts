/**
 * The nvml plugin against NVIDIA's own artifacts, no GPU needed (Debian
 * non-free, installed by test/setup/install-test-deps.sh): every number the
 * plugin shares with nvml.h compiled against NVIDIA's header, every symbol it
 * binds looked up in NVIDIA's R535 and R550 libraries (and the fake's driver
 * profiles compared with them), and the production binding on the real
 * library with no kernel driver.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { after, test } from 'node:test';
import * as abi from '../../plugins/nvml/abi.js';
import { KOFFI_STRUCTS, loadNvml } from '../../plugins/nvml/binding.js';
import { NvmlSession } from '../../plugins/nvml/session.js';
import { createLogger } from '../../src/core/log.js';
import { runCli } from '../helpers/daemon.js';
import { definedSymbols, fakeNvmlEntryPoints, fakeNvmlExports, type Profile } from '../helpers/fake-nvml.js';
import { tempDir } from '../helpers/paths.js';
import { realNvmlHeader, realNvmlLibraries } from '../helpers/real-nvml.js';

const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi').default;

/** One value the plugin hard-codes and the C expression nvml.h gives it by. */
interface Check {
  name: string;
  plugin: bigint;
  c: string;
}

/** The nvml.h name of each key of each constant group in abi.ts (the groups are named so that a rule gives it). */
const RULES: Record<string, (k: string) => string> = {
  NVML: (k) => (k === 'SUCCESS' ? 'NVML_SUCCESS' : `NVML_ERROR_${k}`),
  FIELD: (k) => `NVML_FI_DEV_${k}`,
  GPM_METRIC: (k) => `NVML_GPM_METRIC_${k}`,
  CLOCK_REASON: (k) => `nvmlClocksThrottleReason${k}`,
  EVENT_TYPE: (k) => `nvmlEventType${k}`,
  SAMPLING: (k) => `NVML_${k}`,
  VALUE_TYPE: (k) => `NVML_VALUE_TYPE_${k}`,
  CLOCK: (k) => `NVML_CLOCK_${k}`,
  ENUM: (k) => `NVML_${k}`,
  BUFFER_SIZE: (k) => `NVML_${k}_BUFFER_SIZE`,
  STRUCT_VERSION: (k) => k,
};
/** Single values: their C expression. */
const SCALARS: Record<string, string> = {
  VALUE_NOT_AVAILABLE: 'NVML_VALUE_NOT_AVAILABLE',
  // nvml.h: "A scopeId of UINT_MAX returns aggregate value summed up across all links"
  ALL_LINKS: 'UINT_MAX',
};
/** What abi.ts exports that no nvml.h name stands for, and why. */
const UNNAMED: Record<string, string> = {
  NO_INSTANCE: 'nvml.h names no constant: its comments say gpuInstanceId and computeInstanceId are "set to 0xFFFFFFFF otherwise"',
  GPM_MAX_METRICS: 'room for the metrics array: checked to be at least NVML_GPM_METRIC_MAX below',
  LAYOUTS: 'the list of the layouts, each checked member by member',
};
/**
 * nvml.h names the plugin uses that CUDA 12.4's header (trixie's libnvidia-ml-dev, the newest in Debian's stable
 * suites) does not have yet, with the header that first has them (NVIDIA's go-nvml mirrors each header): the check
 * below insists that the header indeed lacks each, so a newer header makes them checked.
 */
const NEWER_THAN_HEADER: Record<string, string> = {
  NVML_VALUE_TYPE_UNSIGNED_SHORT: 'CUDA 12.8',
  nvmlTemperature_v1: 'CUDA 12.8 (nvmlDeviceGetTemperatureV)',
  nvmlTemperature_t: 'CUDA 12.8 (nvmlDeviceGetTemperatureV)',
  // NVML v595 (NVIDIA's change log: "Added new GPM UTIL metric NVML_GPM_METRIC_DMMA_TENSOR_UTIL. Added new GPM raw
  // metrics."; go-nvml's copy of CUDA 13.2.1's nvml.h has them, that of 13.1.2 not)
  ...Object.fromEntries(
    Object.entries(abi.GPM_METRIC)
      .filter(([, id]) => id === 8 || id >= 248)
      .map(([k]) => [`NVML_GPM_METRIC_${k}`, 'CUDA 13.2 (NVML v595)']),
  ),
};

function isLayout(v: unknown): v is abi.Layout {
  return typeof v === 'object' && v !== null && 'struct' in v && 'at' in v;
}

/** Every value of abi.ts paired with its nvml.h expression; throws on an export with no rule. */
function abiChecks(): Check[] {
  const checks: Check[] = [];
  const add = (name: string, value: number | bigint, c: string): void => void checks.push({ name, plugin: BigInt(value), c });
  for (const [exp, value] of Object.entries(abi)) {
    if (UNNAMED[exp]) continue;
    if (isLayout(value)) {
      assert.ok(abi.LAYOUTS.includes(value), `abi.ts: layout ${exp} is not in LAYOUTS`);
      if (value.size !== undefined) add(`${exp}.size`, value.size, `sizeof(${value.struct})`);
      for (const [member, offset] of Object.entries(value.at)) add(`${exp}.at.${member}`, offset, `offsetof(${value.struct}, ${member})`);
    } else if (RULES[exp]) {
      for (const [k, v] of Object.entries(value as Record<string, number>)) add(`${exp}.${k}`, v, RULES[exp](k));
    } else if (SCALARS[exp]) {
      add(exp, value as number | bigint, SCALARS[exp]);
    } else {
      assert.fail(`plugins/nvml/abi.ts exports ${exp}, which this test does not know how to check against nvml.h: add a rule`);
    }
  }
  // the structs koffi marshals itself: their size and every member's offset, as koffi lays them out
  for (const struct of KOFFI_STRUCTS) {
    const t = koffi.type(struct) as unknown as { size: number; members: Record<string, { offset: number }> };
    add(`koffi ${struct} size`, t.size, `sizeof(${struct})`);
    for (const [member, { offset }] of Object.entries(t.members))
      add(`koffi ${struct}.${member}`, offset, `offsetof(${struct}, ${member})`);
  }
  add('GPM_MAX_METRICS >= NVML_GPM_METRIC_MAX', 1, `${abi.GPM_MAX_METRICS} >= NVML_GPM_METRIC_MAX`);
  return checks;
}

/** Compiles checks against the header and runs them: each expression's value as C computes it. */
function evaluate(header: string, checks: readonly Check[]): Map<string, bigint> {
  const dir = tempDir('l9gpu-nvml-h-');
  const src = join(dir, 'check.c');
  const lines = checks.map((c, i) => `  printf("%d %llu\\n", ${i}, (unsigned long long)(${c.c}));`);
  writeFileSync(
    src,
    [
      '#include <limits.h>',
      '#include <stddef.h>',
      '#include <stdio.h>',
      '#include <nvml.h>',
      'int main(void) {',
      ...lines,
      '  return 0;',
      '}',
      '',
    ].join('\n'),
  );
  const exe = join(dir, 'check');
  try {
    execFileSync('gcc', ['-Wall', '-Werror', '-I', dirname(header), '-o', exe, src], { stdio: 'pipe' });
  } catch (e) {
    throw new Error(
      `compiling the plugin's constants against ${header} failed (a name nvml.h ` +
        `lacks?):\n${(e as { stderr: Buffer }).stderr.toString().slice(0, 4000)}`,
    );
  }
  const out = execFileSync(exe, { encoding: 'utf8' });
  return new Map(
    out
      .trim()
      .split('\n')
      .map((l) => {
        const [i, v] = l.split(' ');
        return [checks[Number(i)]!.name, BigInt(v!)];
      }),
  );
}

test("every constant, raw-buffer layout and koffi struct the nvml plugin declares agrees with NVIDIA's nvml.h", () => {
  // the types are declared with the binding (koffi's registry is global)
  loadNvml(realNvmlLibraries()[0]!.library);
  const { header, package: pkg } = realNvmlHeader();
  const text = readFileSync(header, 'utf8');
  for (const [name, since] of Object.entries(NEWER_THAN_HEADER)) {
    assert.doesNotMatch(
      text,
      new RegExp(`\\b${name}\\b`),
      `${pkg}'s nvml.h has ${name} now (first in ${since}): take it off NEWER_THAN_HEADER so that it is checked`,
    );
  }
  const newer = (c: Check) => Object.keys(NEWER_THAN_HEADER).some((n) => new RegExp(`\\b${n}\\b`).test(c.c));
  const all = abiChecks();
  const checks = all.filter((c) => !newer(c));
  const v595 = [
    'DMMA_TENSOR_UTIL',
    'SM_CYCLES_ELAPSED',
    'SM_CYCLES_ACTIVE',
    'MMA_CYCLES_ACTIVE',
    'DMMA_CYCLES_ACTIVE',
    'HMMA_CYCLES_ACTIVE',
    'IMMA_CYCLES_ACTIVE',
    'DFMA_CYCLES_ACTIVE',
    'PCIE_TX',
    'PCIE_RX',
    'INTEGER_CYCLES_ACTIVE',
    'FP64_CYCLES_ACTIVE',
    'FP32_CYCLES_ACTIVE',
    'FP16_CYCLES_ACTIVE',
  ].map((k) => `GPM_METRIC.${k}`);
  assert.deepEqual(
    all
      .filter(newer)
      .map((c) => c.name)
      .sort(),
    [
      'STRUCT_VERSION.nvmlTemperature_v1',
      'VALUE_TYPE.UNSIGNED_SHORT',
      'koffi nvmlTemperature_t size',
      'koffi nvmlTemperature_t.sensorType',
      'koffi nvmlTemperature_t.temperature',
      'koffi nvmlTemperature_t.version',
      ...v595,
    ].sort(),
  );
  const c = evaluate(header, checks);
  const show = (v: bigint | undefined) => (v !== undefined && v > 0xffffn ? `0x${v.toString(16)}` : String(v));
  const wrong = checks
    .filter((x) => c.get(x.name) !== x.plugin)
    .map((x) => `${x.name}: the plugin has ${show(x.plugin)}, ${pkg}'s nvml.h ${x.c} = ${show(c.get(x.name))}`);
  assert.deepEqual(wrong, [], `the plugin disagrees with NVIDIA's header:\n${wrong.join('\n')}`);
  assert.ok(checks.length > 100, `${checks.length} checks`);
});

/** The nvml* symbols a library exports (nm -D). */
function exported(lib: string): Set<string> {
  return new Set([...definedSymbols(lib, true)].filter((s) => s.startsWith('nvml')));
}

test(
  "a library that is not NVML (glibc's libm) fails the load naming the library and the first " + 'entry point l9gpu needs that it lacks',
  () => {
    assert.throws(
      () => loadNvml('libm.so.6'),
      /^Error: NVML library libm\.so\.6 lacks nvmlDeviceGetMemoryInfo, which l9gpu needs \(.*\): not an NVML library, or one too old$/,
    );
  },
);

const PROFILE_OF: Record<string, Profile> = { bookworm: 'r535', trixie: 'r550' };

for (const real of realNvmlLibraries()) {
  const what = `NVIDIA ${real.version} (Debian ${real.suite}'s libnvidia-ml1 ${real.packages['libnvidia-ml1']})`;

  test(
    `${what}: every symbol the nvml plugin binds is looked up as the plugin declares it ` +
      `(required ones present, every optional feature by one of its names), and early-R535 ` +
      `detection says 24-byte process entries`,
    () => {
      const syms = exported(real.library);
      const nvml = loadNvml(real.library);
      const missingRequired = nvml.symbols.filter((s) => s.required && !syms.has(s.name)).map((s) => s.name);
      assert.deepEqual(missingRequired, [], `required symbols ${what} lacks`);
      const disagree = nvml.symbols
        .filter((s) => s.found !== syms.has(s.name))
        .map((s) => `${s.name}: koffi ${s.found ? 'found' : 'did not find'} it, nm -D ${syms.has(s.name) ? 'lists' : 'does not list'} it`);
      assert.deepEqual(disagree, []);
      const lost = Object.entries(nvml.variants)
        .filter(([, v]) => v === 'missing')
        .map(([k]) => k);
      assert.deepEqual(lost, [], `optional features none of whose names ${what} has`);
      assert.equal(nvml.symbols.length >= 49, true, `${nvml.symbols.length} symbols looked up`);
      assert.equal(
        nvml.processInfo,
        abi.PROCESS_INFO,
        "a library with nvmlDeviceGetRunningProcessDetailList writes nvml.h's 24-byte entries",
      );
    },
  );

  test(
    `${what}: the fake's ${PROFILE_OF[real.suite]} profile exports exactly what this library ` + `exports of the entry points the fake has`,
    () => {
      const syms = exported(real.library);
      const profile = PROFILE_OF[real.suite]!;
      const fake = fakeNvmlExports(profile);
      const diff = [...fakeNvmlEntryPoints()]
        .filter((s) => fake.has(s) !== syms.has(s))
        .map((s) => `${s}: ${syms.has(s) ? 'NVIDIA exports it, the fake does not' : 'the fake exports it, NVIDIA does not'}`);
      assert.deepEqual(
        diff,
        [],
        `profile ${profile} against ${real.library}: record the symbols again (test/fixtures/fake-nvml/symbols/record.sh)`,
      );
    },
  );
}

// as root the real library makes /dev/nvidiactl (char 195:255) when it is missing: remove it if this file made it
const hadNvidiactl = existsSync('/dev/nvidiactl');
after(() => {
  if (!hadNvidiactl && existsSync('/dev/nvidiactl')) unlinkSync('/dev/nvidiactl');
});

/** The commands that read NVML, naming the plugin where `plugins = auto` would leave it off. */
const COMMANDS = [
  ['gpus', '--plugin', 'nvml'],
  ['gpus', '--json', '--plugin', 'nvml'],
  ['doctor'],
  ['daemon', '--once', '--plugin', 'nvml', '--sink', 'stdout'],
];

for (const real of realNvmlLibraries()) {
  test(
    `NVIDIA ${real.version} with no kernel driver: nvmlInit_v2 through the production binding ` +
      `answers Driver Not Loaded, a session says so, and so does every command, at once`,
    async () => {
      const nvml = loadNvml(real.library);
      const r = await nvml.init();
      assert.equal(r, abi.NVML.DRIVER_NOT_LOADED, `nvmlInit_v2: ${nvml.errorString(r)} (${r})`);
      assert.equal(nvml.errorString(r), 'Driver Not Loaded');
      const session = new NvmlSession(
        { library: real.library, processes: true, events: true, stateInterval: 60 },
        createLogger('error', () => {}),
        () => {},
      );
      try {
        await assert.rejects(session.sample(AbortSignal.timeout(5000)), /nvmlInit_v2: Driver Not Loaded \(9\)/);
      } finally {
        await session.close();
      }
      for (const args of COMMANDS) {
        const t0 = performance.now();
        const out = await runCli(args, { L9GPU_NVML_LIBRARY: real.library, L9GPU_STATE_DIR: tempDir('l9gpu-nvml-real-') });
        const ms = performance.now() - t0;
        assert.match(out.stdout + out.stderr, /Driver Not Loaded/, `l9gpu ${args.join(' ')}: ${out.stdout}${out.stderr}`);
        // a guard against a wait (a retry, a backoff, a blocked call), not a timing target: those live in bench/.
        // Measured here: 0.25-0.45 s each on an idle 2-core machine, 1.7 s with eight builds beside it
        assert.ok(ms < 5000, `l9gpu ${args.join(' ')} took ${ms.toFixed(0)} ms to say the driver is not loaded`);
      }
    },
  );
}
