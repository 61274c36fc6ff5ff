/**
 * gpu.info of the AMD and Intel Gaudi plugins from the tools' own fields: which
 * field gives each fact, what is left out (N/A, blank, absent), and that a
 * value from the tool is bounded and printable. The golden cases check the
 * testdata outputs (plugins/<name>/testdata, in the tools' format); the inputs
 * here are made from them, changed where a test says so.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { infoFacts, parseIdentity } from '../../plugins/amdsmi/parse.js';
import { emitRows, parseCsv } from '../../plugins/hlsmi/parse.js';
import { PointBuffer } from '../../src/core/metrics/model.js';
import { ROOT } from '../helpers/paths.js';

/** GPU 0 of the MI300X `amd-smi static --json` of testdata/mi300x. */
function mi300x(): Record<string, unknown> {
  const text = readFileSync(join(ROOT, 'plugins', 'amdsmi', 'testdata', 'mi300x', 'static.json'), 'utf8');
  return (JSON.parse(text) as { gpu_data: Record<string, unknown>[] }).gpu_data[0]!;
}

test("amd-smi static: driver.version, asic.asic_serial and vbios.version of testdata's MI300X", () => {
  assert.deepEqual(infoFacts(mi300x()), {
    'gpu.driver.version': '6.8.5',
    'gpu.serial_number': '0x7B4FD9C1E28F0000',
    'gpu.firmware.version': '022.040.003.042.000001',
  });
});

test(
  "amd-smi static: the board's serial (board.product_serial) before the chip's, ifwi.version where a release " +
    'names the VBIOS section so, N/A and blanks left out',
  () => {
    const s = mi300x();
    // amdsmi_commands.py prints board {model_number, product_serial, fru_id, product_name, manufacturer_name}, N/A when
    // unread; testdata has no board section, so this one is made up
    assert.equal(infoFacts({ ...s, board: { product_serial: 'MADE-UP-1', fru_id: 'N/A' } })!['gpu.serial_number'], 'MADE-UP-1');
    assert.equal(infoFacts({ ...s, board: { product_serial: 'N/A' } })!['gpu.serial_number'], '0x7B4FD9C1E28F0000');
    const { vbios, ...noVbios } = s;
    assert.equal(infoFacts({ ...noVbios, ifwi: vbios })!['gpu.firmware.version'], '022.040.003.042.000001');
    // a failed read prints the whole section as "N/A"; a blank field is N/A too
    assert.deepEqual(infoFacts({ ...s, vbios: 'N/A', driver: { name: 'amdgpu', version: '  ' }, asic: { asic_serial: 'N/A' } }), undefined);
    assert.deepEqual(infoFacts({ gpu: 0, driver: { version: 6.8 }, asic: { asic_serial: ['x'] } }), undefined, 'no string, no fact');
    const [id] = parseIdentity('[{"gpu": 0, "uuid": "u", "bdf": "0000:03:00.0"}]', JSON.stringify([{ gpu: 0 }]), () => {});
    assert.equal(id!.info, undefined, 'a GPU whose static output has none of them gets no gpu.info');
  },
);

test("a tool's value is trimmed, made printable and bounded", () => {
  const hostile = infoFacts({ driver: { version: ' 6.8.5\u001b[2J ' }, vbios: { version: `V${'9'.repeat(200)}` } })!;
  assert.equal(hostile['gpu.driver.version'], '6.8.5?[2J');
  const fw = hostile['gpu.firmware.version'] as string;
  assert.ok(fw.length === 64 && fw.endsWith('...'), fw);
  const out = new PointBuffer();
  emitRows(parseCsv('index, uuid, driver_version, serial\n0, X, 1.18.0-ee698fb, AM5\u202e0016138\n'), out, 0);
  assert.equal(out.points.find((p) => p.metric.name === 'gpu.info')!.attributes['gpu.serial_number'], 'AM5?0016138');
});

test('hl-smi: gpu.info carries the serial column beside driver_version; [N/A] is left out', () => {
  // the nounits case with the serial column `-Q ...,serial` adds (its value as a published Gaudi 2 hl-smi -q prints "Serial Number")
  const text = readFileSync(join(ROOT, 'plugins', 'hlsmi', 'testdata', 'nounits', 'hl-smi.csv'), 'utf8')
    .trim()
    .split('\n');
  const info = (csv: string): Record<string, unknown> | undefined => {
    const out = new PointBuffer();
    emitRows(parseCsv(csv), out, 0);
    return out.points.find((p) => p.metric.name === 'gpu.info')?.attributes;
  };
  const withSerial = (cell: string) => `${text[0]}, serial\n${text[1]}, ${cell}\n`;
  const a = info(withSerial('AM50016138'))!;
  assert.equal(a['gpu.driver.version'], '1.15.1-62f612b');
  assert.equal(a['gpu.serial_number'], 'AM50016138');
  assert.equal(a['gpu.firmware.version'], undefined, 'no -Q field gives a firmware version');
  assert.equal(info(withSerial('[N/A]'))!['gpu.serial_number'], undefined);
  assert.equal('gpu.serial_number' in info(text.join('\n'))!, false, 'an output without the column: none');
  const noDriver = info(withSerial('AM50016138').replace('1.15.1-62f612b', '[N/A]'))!;
  assert.ok(!('gpu.driver.version' in noDriver) && noDriver['gpu.serial_number'] === 'AM50016138', 'a serial alone is a gpu.info too');
});
