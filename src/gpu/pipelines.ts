import { preprocess, type Defines } from './wgsl';

/** Which compiled kernel to run: a shader file, an entry point and its compile-time values. */
export interface KernelSpec {
  /** File name in `shaders/` without `.wgsl`. */
  shader: string;
  entry: string;
  /** `#if` switches for the preprocessor. */
  defines?: Defines;
  /** WGSL `override` values. */
  constants?: Readonly<Record<string, number | boolean>>;
}

function sortedJson(o: object | undefined): string {
  return o ? JSON.stringify(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : 1))) : '';
}

/** A pipeline with its bind group layout, fetched once rather than on every dispatch. */
export interface CompiledKernel {
  pipeline: GPUComputePipeline;
  layout: GPUBindGroupLayout;
}

/**
 * Shader modules keyed by (source, defines); pipelines by (module, entry, constants).
 * Pipelines compile asynchronously from the moment a kernel is first recorded (prepare),
 * off the thread that records: compiling a large unrolled module synchronously stalls the
 * page or worker at first use, worst on Windows. The runtime awaits them (ready) before it
 * submits the work that uses them; a pipeline needed before it is ready is made at once.
 */
export class PipelineCache {
  private readonly modules = new Map<string, GPUShaderModule>();
  private readonly kernels = new Map<string, CompiledKernel>();
  private readonly compiling = new Map<string, Promise<void>>();
  /** Pipelines made synchronously because they were needed before their asynchronous compile ended. */
  synchronous = 0;

  constructor(
    private readonly device: GPUDevice,
    private readonly source: (shader: string) => string,
  ) {}

  /** Starts compiling the kernel's pipeline in the background, unless it exists or is compiling. */
  prepare(spec: KernelSpec): void {
    const key = kernelKey(spec);
    if (this.kernels.has(key) || this.compiling.has(key)) return;
    const compile = this.device
      .createComputePipelineAsync(this.descriptor(spec, key))
      .then(
        (pipeline) => {
          if (!this.kernels.has(key)) this.kernels.set(key, { pipeline, layout: pipeline.getBindGroupLayout(0) });
        },
        // An invalid kernel: left to get(), whose synchronous creation reports the error where
        // the runtime collects validation errors.
        () => {},
      )
      .finally(() => this.compiling.delete(key));
    this.compiling.set(key, compile);
  }

  /** Resolves once every pipeline compiling now has finished. */
  async ready(): Promise<void> {
    while (this.compiling.size) await Promise.all(this.compiling.values());
  }

  get(spec: KernelSpec): CompiledKernel {
    const key = kernelKey(spec);
    const cached = this.kernels.get(key);
    if (cached) return cached;
    this.synchronous++;
    const pipeline = this.device.createComputePipeline(this.descriptor(spec, key));
    const kernel = { pipeline, layout: pipeline.getBindGroupLayout(0) };
    this.kernels.set(key, kernel);
    return kernel;
  }

  private descriptor(spec: KernelSpec, key: string): GPUComputePipelineDescriptor {
    const moduleKey = `${spec.shader}|${sortedJson(spec.defines)}`;
    let module = this.modules.get(moduleKey);
    if (!module) {
      module = this.device.createShaderModule({
        code: preprocess(this.source(spec.shader), spec.defines, this.source),
        label: moduleKey,
      });
      this.modules.set(moduleKey, module);
    }
    const constants: Record<string, number> = {};
    for (const [k, v] of Object.entries(spec.constants ?? {})) constants[k] = Number(v);
    return { layout: 'auto', compute: { module, entryPoint: spec.entry, constants }, label: key };
  }
}

function kernelKey(spec: KernelSpec): string {
  return `${spec.shader}|${sortedJson(spec.defines)}|${spec.entry}|${sortedJson(spec.constants)}`;
}
