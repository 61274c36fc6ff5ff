/**
 * A GPU's MIG devices: each slot of nvmlDeviceGetMigDeviceHandleByIndex up
 * to nvmlDeviceGetMaxMigDeviceCount, with its identity (UUID, name, GPU and
 * compute instance). The sampler enumerates them when it reads MIG mode, and
 * again when a cached one fails or a process runs on a GPU instance it lacks.
 */
import { NVML } from './abi.js';
import { cString, type Handle, type NvmlBinding } from './binding.js';

export interface MigInstance {
  handle: Handle;
  uuid: string;
  name: string;
  gi: number;
  ci: number;
}

/**
 * The MIG devices of the GPU `parent` (named `parentName`, which a device
 * without a name of its own takes); undefined when the count call fails.
 * `answered` is the sampler's check of a MIG call's answer (said once, lost
 * thrown); `idBuf` holds a UUID or a name.
 */
export async function enumerateMig(
  nvml: NvmlBinding,
  parent: Handle,
  parentName: string,
  idBuf: Buffer,
  answered: (r: number) => boolean,
): Promise<MigInstance[] | undefined> {
  const max: [number] = [0];
  if (!answered(await nvml.maxMigCount(parent, max))) return undefined;
  const migs: MigInstance[] = [];
  for (let i = 0; i < max[0]; i++) {
    const mh: [Handle | null] = [null];
    const r = await nvml.migHandle(parent, i, mh);
    if (r === NVML.NOT_FOUND) continue; // empty slot
    if (!answered(r)) continue;
    const h = mh[0]!;
    if ((await nvml.uuid(h, idBuf)) !== NVML.SUCCESS) continue;
    const m: MigInstance = {
      handle: h,
      uuid: cString(idBuf),
      name: (await nvml.name(h, idBuf)) === NVML.SUCCESS ? cString(idBuf) : parentName,
      gi: 0,
      ci: 0,
    };
    const id: [number] = [0];
    if ((await nvml.gpuInstanceId(h, id)) === NVML.SUCCESS) m.gi = id[0];
    if ((await nvml.computeInstanceId(h, id)) === NVML.SUCCESS) m.ci = id[0];
    migs.push(m);
  }
  return migs;
}
