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
  /** The WebGPU implementation and its version where it says: the browser's user agent, or the platform's name. */
  client: string;
  /**
   * Stable key for caches of per-adapter measurements: the adapter's fields (a browser may
   * leave them all empty) and the client, so that a browser or driver update measures again.
   */
  key: string;
}

/**
 * A subgroup-matrix shape the device multiplies f16 operands in, with an f32 result
 * (`chromium-experimental-subgroup-matrix`: tensor cores through Vulkan's cooperative
 * matrices, Apple's simdgroup matrices), and the adapter's largest subgroup, which a kernel's
 * workgroup width must be a multiple of.
 */
export interface SubgroupMatrixShape {
  M: number;
  N: number;
  K: number;
  subgroupMaxSize: number;
  /**
   * matmul_mma's builtins emulated in ordinary invocations (its MMA_EMULATED): for the float64
   * tests of the kernel on devices without subgroup matrices (RuntimeOptions.subgroupMatrix),
   * far slower than any other variant, so never tuned. subgroupMaxSize is then the pretend
   * subgroup's width.
   */
  emulated?: true;
}

/** The experimental feature behind subgroup matrices (Dawn exposes it with its toggle allow_unsafe_apis). */
export const SUBGROUP_MATRIX_FEATURE = 'chromium-experimental-subgroup-matrix';

/** An adapter's subgroup matrix configuration as GPUAdapterInfo.subgroupMatrixConfigs lists it. */
export interface SubgroupMatrixConfig {
  componentType: string;
  resultComponentType: string;
  M: number;
  N: number;
  K: number;
}

/**
 * The configuration matmul_mma multiplies in: the first listed (the adapter lists its
 * preferred first) with f16 operands and an f32 result whose blocks tile the kernel's
 * workgroup (32 rows a whole number of M; M·N at most 256, so that the results staged in
 * workgroup memory fit 8 KiB; K dividing the 64 elements staged a step). Null where none does,
 * or where four subgroups (the kernel's workgroup) pass the device's invocations a workgroup or
 * are fewer invocations than the 32 rows they stage.
 */
export function pickSubgroupMatrix(configs: readonly SubgroupMatrixConfig[], subgroupMaxSize: number, maxInvocations: number): SubgroupMatrixShape | null {
  const c = configs.find(
    (x) => x.componentType === 'f16' && x.resultComponentType === 'f32' && 32 % x.M === 0 && x.M * x.N <= 256 && 64 % x.K === 0 && x.K % 8 === 0,
  );
  // At least one invocation per staged row: the norm prologue sums a row's squares with MM_WG / 32 each.
  return c && 4 * subgroupMaxSize >= 32 && 4 * subgroupMaxSize <= maxInvocations ? { M: c.M, N: c.N, K: c.K, subgroupMaxSize } : null;
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
  /** The subgroup matrices f16 products run on (matmul_mma), where the device was granted them and one suits; else null. */
  subgroupMatrix: SubgroupMatrixShape | null;
  limits: Readonly<Record<(typeof RAISED_LIMITS)[number] | 'minUniformBufferOffsetAlignment', number>>;
  platform: Platform;
  /** Whether other runtimes of this process use the device too (see Platform.shareDevice): a runtime's end leaves it. */
  shared: boolean;
  /** Called once if the device is lost (reason and message from the implementation); returns the unsubscribe. */
  onLost(listener: (info: DeviceLost) => void): () => void;
  /** Called for every uncaptured validation or out-of-memory error; returns the unsubscribe. */
  onError(listener: (message: string) => void): () => void;
}

export class WebGPUUnavailableError extends Error {
  /** `detail` says what was missing; `advice` (from the platform) how to get WebGPU there. */
  constructor(detail: string, advice: string) {
    super(`WebGPU is not available ${detail}. ${advice}`);
    this.name = 'WebGPUUnavailableError';
  }
}

/** Limits a caller may request below the adapter's (tests of limits that are not powers of two). */
export type RequestedLimits = Partial<Record<'maxBufferSize' | 'maxStorageBufferBindingSize', number>>;

/** A field of adapter info as a string: implementations differ in which they fill, and with what. */
const field = (info: GPUAdapterInfo | undefined, name: keyof GPUAdapterInfo): string => {
  const v = info?.[name];
  return typeof v === 'string' ? v : '';
};

/**
 * The adapter's info where the implementation has it: `adapter.info` is newer than
 * requestAdapterInfo, and some browsers shipped neither.
 */
function adapterInfo(adapter: GPUAdapter): GPUAdapterInfo | undefined {
  return (adapter as { info?: GPUAdapterInfo }).info ?? undefined;
}

export function summarizeAdapter(info: GPUAdapterInfo | undefined, platformName: string, userAgent = globalThis.navigator?.userAgent): AdapterSummary {
  const vendor = field(info, 'vendor');
  const architecture = field(info, 'architecture');
  const device = field(info, 'device');
  const description = field(info, 'description');
  const client = userAgent ? `${platformName}; ${userAgent}` : platformName;
  const key = [vendor, architecture, device, description, client].map((s) => s || '-').join('/');
  return { vendor, architecture, device, description, client, key };
}

export interface DeviceOptions {
  powerPreference?: GPUPowerPreference;
  /** Keep WebGPU's default limits instead of raising them to the adapter's (portability checks). */
  defaultLimits?: boolean;
  /** These limits requested as given (applied after defaultLimits or the adapter's). */
  limits?: RequestedLimits;
}

/** The devices runtimes share, per WebGPU entry point and device options (see Platform.shareDevice). */
const sharedDevices = new WeakMap<GPU, Map<string, Promise<GpuContext>>>();

/**
 * One code path for page, worker and Node: the platform supplies the `GPU` object. Where the
 * platform shares devices, a runtime asking with the options of a live device gets that one.
 */
export async function acquireDevice(platform: Platform, options: DeviceOptions = {}): Promise<GpuContext> {
  const gpu = await platform.gpu();
  if (!gpu) throw new WebGPUUnavailableError(`in this ${platform.name} (no navigator.gpu)`, platform.unavailableAdvice());
  if (!platform.shareDevice) return newDevice(platform, gpu, options, false);
  let devices = sharedDevices.get(gpu);
  if (!devices) sharedDevices.set(gpu, (devices = new Map()));
  const key = JSON.stringify([options.powerPreference, options.defaultLimits ?? false, options.limits ?? {}]);
  let made = devices.get(key);
  if (!made) {
    made = newDevice(platform, gpu, options, true);
    devices.set(key, made);
    // A device that failed or was lost is not handed out again: the next runtime makes its own.
    made.then((c) => c.onLost(() => devices.delete(key)), () => devices.delete(key));
  }
  // The device is shared; the platform (its cache file, its sandboxes) stays the caller's.
  return { ...(await made), platform };
}

async function newDevice(platform: Platform, gpu: GPU, options: DeviceOptions, shared: boolean): Promise<GpuContext> {
  const adapter = await gpu.requestAdapter({ powerPreference: options.powerPreference ?? 'high-performance' });
  if (!adapter) throw new WebGPUUnavailableError(`in this ${platform.name} (no adapter was found)`, platform.unavailableAdvice());
  const features = OPTIONAL_FEATURES.filter((f) => adapter.features.has(f));
  const matrixFeature = adapter.features.has(SUBGROUP_MATRIX_FEATURE) && features.includes('shader-f16') && features.includes('subgroups');
  const requiredLimits: Record<string, number> = {};
  if (!options.defaultLimits) for (const name of RAISED_LIMITS) requiredLimits[name] = adapter.limits[name];
  for (const [name, value] of Object.entries(options.limits ?? {})) {
    if (value > adapter.limits[name as keyof RequestedLimits]) {
      throw new Error(`${name} ${value} exceeds this adapter's ${adapter.limits[name as keyof RequestedLimits]}`);
    }
    requiredLimits[name] = value;
  }
  // Granted wherever offered with the features it needs, so that its kernels compile even
  // where no configuration suits them (Dawn's null backend lists none: the compile tests).
  const requiredFeatures: GPUFeatureName[] = matrixFeature ? [...features, SUBGROUP_MATRIX_FEATURE as GPUFeatureName] : [...features];
  const device = await adapter.requestDevice({ requiredFeatures, requiredLimits });
  const lostListeners = new Set<(info: DeviceLost) => void>();
  const errorListeners = new Set<(message: string) => void>();
  void device.lost.then((info) => {
    const lost = { reason: String(info.reason ?? 'unknown'), message: info.message };
    for (const l of lostListeners) l(lost);
  });
  device.addEventListener('uncapturederror', (event) => {
    const message = (event as GPUUncapturedErrorEvent).error.message;
    for (const l of errorListeners) l(message);
  });
  const subscribe = <T>(set: Set<T>, l: T) => {
    set.add(l);
    return () => void set.delete(l);
  };
  const limits = {} as Record<(typeof RAISED_LIMITS)[number] | 'minUniformBufferOffsetAlignment', number>;
  for (const name of RAISED_LIMITS) limits[name] = device.limits[name];
  limits.minUniformBufferOffsetAlignment = device.limits.minUniformBufferOffsetAlignment;
  return {
    device,
    adapter: summarizeAdapter(adapterInfo(adapter), platform.name),
    features: new Set(features),
    subgroupSize: fixedSubgroupSize(adapterInfo(adapter), features.includes('subgroups')),
    subgroupMatrix: matrixFeature ? subgroupMatrices(adapter, limits.maxComputeInvocationsPerWorkgroup) : null,
    limits,
    platform,
    shared,
    onLost: (l) => subscribe(lostListeners, l),
    onError: (l) => subscribe(errorListeners, l),
  };
}

/** The configuration matmul_mma takes from the adapter's (see pickSubgroupMatrix). */
function subgroupMatrices(adapter: GPUAdapter, maxInvocations: number): SubgroupMatrixShape | null {
  // subgroupMatrixConfigs and subgroupMaxSize are newer than @webgpu/types' GPUAdapterInfo.
  const info = (adapterInfo(adapter) ?? {}) as { subgroupMatrixConfigs?: readonly SubgroupMatrixConfig[]; subgroupMaxSize?: number };
  return pickSubgroupMatrix(info.subgroupMatrixConfigs ?? [], info.subgroupMaxSize ?? 0, maxInvocations);
}

function fixedSubgroupSize(info: GPUAdapterInfo | undefined, granted: boolean): number | null {
  // subgroupMinSize/MaxSize are newer than @webgpu/types' GPUAdapterInfo, and info may be absent.
  const { subgroupMinSize: min, subgroupMaxSize: max } = (info ?? {}) as { subgroupMinSize?: number; subgroupMaxSize?: number };
  return granted && typeof min === 'number' && min === max ? min : null;
}
