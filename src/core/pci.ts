/**
 * gpu.pci.bus_id for every vendor in the Linux sysfs form that `lspci -D`,
 * /sys/bus/pci/devices and device plugins use: 4-digit domain, lower case
 * ("0000:18:00.0"). NVML prints "00000000:18:00.0", amd-smi "0000:18:00.0".
 */
export function normalizePciBusId(id: string): string {
  const m = /^(?:([0-9a-f]{1,8}):)?([0-9a-f]{1,2}):([0-9a-f]{1,2})\.([0-7])$/i.exec(id.trim());
  if (!m) return id.trim();
  const dom = parseInt(m[1] ?? '0', 16) & 0xffff;
  return `${dom.toString(16).padStart(4, '0')}:${m[2]!.padStart(2, '0')}:${m[3]!.padStart(2, '0')}.${m[4]}`.toLowerCase();
}
