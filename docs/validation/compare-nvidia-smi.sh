#!/usr/bin/env bash
# Compares `l9gpu gpus --json` with nvidia-smi's CSV query on a real NVIDIA node.
# Usage: docs/validation/compare-nvidia-smi.sh [path/to/l9gpu] > record.txt
# Both are read back to back; utilization and power move, so they agree within a
# tolerance, while identity, memory total, clocks' units and temperatures must match.
set -euo pipefail
l9gpu=${1:-"$(dirname "$0")/../../bin/run.js"}
q=index,uuid,name,pci.bus_id,utilization.gpu,memory.used,memory.total,temperature.gpu,power.draw,clocks.sm
echo "# nvidia-smi --query-gpu=$q --format=csv,noheader,nounits"
nvidia-smi --query-gpu=$q --format=csv,noheader,nounits | tee /tmp/l9gpu-nvsmi.csv
echo "# l9gpu gpus --json"
node "$l9gpu" gpus --json --plugin nvml | tee /tmp/l9gpu-gpus.json
node - <<'JS'
const fs = require('fs');
const smi = fs.readFileSync('/tmp/l9gpu-nvsmi.csv', 'utf8').trim().split('\n').map((l) => l.split(', '));
const ours = JSON.parse(fs.readFileSync('/tmp/l9gpu-gpus.json', 'utf8')).gpus;
let bad = 0;
const check = (what, ok, a, b) => { console.log(`${ok ? 'ok  ' : 'DIFF'} ${what}: nvidia-smi ${a} / l9gpu ${b}`); if (!ok) bad++; };
for (const [index, uuid, name, bus, util, used, total, temp, power] of smi) {
  const g = ours.find((x) => x.uuid === uuid);
  if (!g) { check(`GPU ${index} ${uuid}`, false, 'present', 'missing'); continue; }
  check(`GPU ${index} index`, g.index === Number(index), index, g.index);
  check(`GPU ${index} model`, g.model === name, name, g.model);
  check(`GPU ${index} pci`, g.pci_bus_id === bus.toLowerCase().replace(/^0000/, ''), bus, g.pci_bus_id);
  check(`GPU ${index} memory.total MiB`, Math.round(g.memory_total_bytes / 2 ** 20) === Number(total), total, g.memory_total_bytes / 2 ** 20);
  check(`GPU ${index} memory.used MiB (+-64)`, Math.abs(g.memory_used_bytes / 2 ** 20 - Number(used)) <= 64, used, g.memory_used_bytes / 2 ** 20);
  check(`GPU ${index} temperature C (+-3)`, Math.abs(g.temperature_celsius.edge - Number(temp)) <= 3, temp, g.temperature_celsius.edge);
  check(`GPU ${index} utilization (+-0.3)`, Math.abs(g.utilization - Number(util) / 100) <= 0.3, `${util} %`, g.utilization);
  check(`GPU ${index} power W (+-25%)`, Math.abs(g.power_watts - Number(power)) <= Math.max(15, 0.25 * Number(power)), power, g.power_watts);
}
process.exit(bad ? 1 : 0);
JS

# Interval means: the daemon's 2 s ticks against nvidia-smi's own readings every 100 ms over
# the same time (nvidia-smi -lms), for utilization and power; and GPM activity (Hopper and
# later, and per MIG instance) printed for the record (nvidia-smi has no counterpart).
echo "# l9gpu daemon --interval 2s (8 s) beside nvidia-smi -lms 100"
nvidia-smi --query-gpu=timestamp,uuid,utilization.gpu,power.draw --format=csv,noheader,nounits -lms 100 > /tmp/l9gpu-nvsmi-lms.csv &
smi=$!
timeout 8 node "$l9gpu" daemon --plugin nvml --sink stdout --interval 2s > /tmp/l9gpu-daemon.jsonl || true
kill "$smi" 2>/dev/null || true
node - <<'JS'
const fs = require('fs');
const smi = fs.readFileSync('/tmp/l9gpu-nvsmi-lms.csv', 'utf8').trim().split('\n').map((l) => l.split(', ')).map(([ts, uuid, util, power]) => ({ t: Date.parse(ts.replace(/\//g, '-').replace(' ', 'T')), uuid, util: Number(util) / 100, power: Number(power) }));
const pts = fs.readFileSync('/tmp/l9gpu-daemon.jsonl', 'utf8').trim().split('\n').map((l) => JSON.parse(l));
let bad = 0;
for (const name of ['gpu.utilization', 'gpu.power.draw']) {
  const key = name === 'gpu.utilization' ? 'util' : 'power';
  const byGpu = new Map();
  for (const p of pts.filter((x) => x.name === name && !x.attributes['gpu.mig.parent_uuid'])) (byGpu.get(p.attributes['gpu.uuid']) ?? byGpu.set(p.attributes['gpu.uuid'], []).get(p.attributes['gpu.uuid'])).push(p);
  for (const [uuid, series] of byGpu) {
    for (let i = 1; i < series.length; i++) {
      const [a, b] = [Date.parse(series[i - 1].time), Date.parse(series[i].time)];
      const inside = smi.filter((r) => r.uuid === uuid && r.t > a && r.t <= b && Number.isFinite(r[key]));
      if (inside.length < 5) continue;
      const mean = inside.reduce((s, r) => s + r[key], 0) / inside.length;
      const tol = key === 'util' ? 0.1 : Math.max(10, 0.1 * mean);
      const ok = Math.abs(series[i].value - mean) <= tol;
      if (!ok) bad++;
      console.log(`${ok ? 'ok  ' : 'DIFF'} ${uuid} ${name} interval ${i}: nvidia-smi mean of ${inside.length} readings ${mean.toFixed(3)} / l9gpu ${series[i].value}`);
    }
  }
}
for (const p of pts.filter((x) => /^gpu\.(engine|sm|tensor|dram)\./.test(x.name))) console.log(`GPM ${p.attributes['gpu.uuid']} ${p.name} ${p.value}`);
process.exit(bad ? 1 : 0);
JS
