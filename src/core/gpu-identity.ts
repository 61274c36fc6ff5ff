/**
 * The identity attributes every GPU point carries, built in one place for
 * every vendor: a backend joins series of one GPU on exactly these keys, so a
 * vendor that spelled one differently would split its GPUs' series.
 */
import type { Attributes } from './metrics/model.js';
import { SCOPE_ATTRIBUTES } from './metrics/registry.js';

export interface GpuIdentity {
  /** The vendor's enumeration index (not Slurm's GRES index, not /dev/nvidiaN). */
  readonly index: number;
  readonly uuid: string;
  readonly model: string;
  readonly vendor: string;
  /** Normalised domain:bus:device.function (core/pci.ts). */
  readonly pciBusId: string;
}

export interface MigIdentity {
  readonly parentUuid: string;
  readonly gpuInstance: number;
  readonly computeInstance: number;
}

export function gpuAttributes(id: GpuIdentity, mig?: MigIdentity): Attributes {
  const a: Attributes = {
    'gpu.index': id.index,
    'gpu.uuid': id.uuid,
    'gpu.model': id.model,
    'gpu.vendor': id.vendor,
    'gpu.pci.bus_id': id.pciBusId,
  };
  if (mig) {
    a['gpu.mig.instance_id'] = mig.gpuInstance;
    a['gpu.mig.compute_instance_id'] = mig.computeInstance;
    a['gpu.mig.parent_uuid'] = mig.parentUuid;
  }
  return a;
}

const IDENTITY_KEYS = [...SCOPE_ATTRIBUTES.gpu.required, ...SCOPE_ATTRIBUTES.gpu.optional];

/** The identity part of a GPU point's attributes (drops the metric's own attributes and any job attributes). */
export function identityOf(a: Attributes): Attributes {
  const id: Attributes = {};
  for (const k of IDENTITY_KEYS) if (k in a) id[k] = a[k]!;
  return id;
}
