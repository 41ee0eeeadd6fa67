import type { Platform } from '../platform/types';

export const OPTIONAL_FEATURES = ['shader-f16', 'subgroups', 'timestamp-query'] as const;
export type OptionalFeature = (typeof OPTIONAL_FEATURES)[number];

/** Limits worth raising to the adapter's maximum for large tensors and big workgroups. */
const RAISED_LIMITS = [
  'maxBufferSize',
  'maxStorageBufferBindingSize',
  'maxComputeWorkgroupStorageSize',
  'maxComputeInvocationsPerWorkgroup',
  'maxComputeWorkgroupSizeX',
  'maxComputeWorkgroupSizeY',
  'maxComputeWorkgroupSizeZ',
  'maxComputeWorkgroupsPerDimension',
  'maxStorageBuffersPerShaderStage',
] as const;

export interface AdapterSummary {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  /** Stable key for caches of per-adapter measurements. */
  key: string;
}

export interface DeviceLost {
  reason: string;
  message: string;
}

export interface GpuContext {
  device: GPUDevice;
  adapter: AdapterSummary;
  /** Optional features that were granted. */
  features: ReadonlySet<OptionalFeature>;
  /** The subgroup size when `subgroups` was granted and the adapter has exactly one; else null. */
  subgroupSize: number | null;
  limits: Readonly<Record<(typeof RAISED_LIMITS)[number] | 'minUniformBufferOffsetAlignment', number>>;
  platform: Platform;
  /** Called once if the device is lost (reason and message from the implementation). */
  onLost(listener: (info: DeviceLost) => void): void;
  /** Called for every uncaptured validation or out-of-memory error. */
  onError(listener: (message: string) => void): void;
}

export class WebGPUUnavailableError extends Error {
  /** `detail` says what was missing; `advice` (from the platform) how to get WebGPU there. */
  constructor(detail: string, advice: string) {
    super(`WebGPU is not available ${detail}. ${advice}`);
    this.name = 'WebGPUUnavailableError';
  }
}

function summarizeAdapter(info: GPUAdapterInfo | undefined): AdapterSummary {
  const vendor = info?.vendor ?? '';
  const architecture = info?.architecture ?? '';
  const device = info?.device ?? '';
  const description = info?.description ?? '';
  const key = [vendor, architecture, device, description].map((s) => s || '-').join('/');
  return { vendor, architecture, device, description, key };
}

/** One code path for page, worker and Node: the platform supplies the `GPU` object. */
export async function acquireDevice(
  platform: Platform,
  options: {
    powerPreference?: GPUPowerPreference;
    /** Keep WebGPU's default limits instead of raising them to the adapter's (portability checks). */
    defaultLimits?: boolean;
  } = {},
): Promise<GpuContext> {
  const gpu = await platform.gpu();
  if (!gpu) throw new WebGPUUnavailableError(`in this ${platform.name} (no navigator.gpu)`, platform.unavailableAdvice());
  const adapter = await gpu.requestAdapter({ powerPreference: options.powerPreference ?? 'high-performance' });
  if (!adapter) throw new WebGPUUnavailableError(`in this ${platform.name} (no adapter was found)`, platform.unavailableAdvice());
  const features = OPTIONAL_FEATURES.filter((f) => adapter.features.has(f));
  const requiredLimits: Record<string, number> = {};
  if (!options.defaultLimits) for (const name of RAISED_LIMITS) requiredLimits[name] = adapter.limits[name];
  const device = await adapter.requestDevice({ requiredFeatures: features, requiredLimits });
  const lostListeners: ((info: DeviceLost) => void)[] = [];
  const errorListeners: ((message: string) => void)[] = [];
  void device.lost.then((info) => {
    const lost = { reason: String(info.reason ?? 'unknown'), message: info.message };
    for (const l of lostListeners) l(lost);
  });
  device.addEventListener('uncapturederror', (event) => {
    const message = (event as GPUUncapturedErrorEvent).error.message;
    for (const l of errorListeners) l(message);
  });
  const limits = {} as Record<(typeof RAISED_LIMITS)[number] | 'minUniformBufferOffsetAlignment', number>;
  for (const name of RAISED_LIMITS) limits[name] = device.limits[name];
  limits.minUniformBufferOffsetAlignment = device.limits.minUniformBufferOffsetAlignment;
  return {
    device,
    adapter: summarizeAdapter(adapter.info),
    features: new Set(features),
    subgroupSize: fixedSubgroupSize(adapter.info, features.includes('subgroups')),
    limits,
    platform,
    onLost: (l) => lostListeners.push(l),
    onError: (l) => errorListeners.push(l),
  };
}

function fixedSubgroupSize(info: GPUAdapterInfo, granted: boolean): number | null {
  // subgroupMinSize/MaxSize are newer than @webgpu/types' GPUAdapterInfo.
  const { subgroupMinSize: min, subgroupMaxSize: max } = info as GPUAdapterInfo & { subgroupMinSize?: number; subgroupMaxSize?: number };
  return granted && typeof min === 'number' && min === max ? min : null;
}
