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

/** Shader modules keyed by (source, defines); pipelines by (module, entry, constants). */
export class PipelineCache {
  private readonly modules = new Map<string, GPUShaderModule>();
  private readonly kernels = new Map<string, CompiledKernel>();

  constructor(
    private readonly device: GPUDevice,
    private readonly source: (shader: string) => string,
  ) {}

  get(spec: KernelSpec): CompiledKernel {
    const moduleKey = `${spec.shader}|${sortedJson(spec.defines)}`;
    const key = `${moduleKey}|${spec.entry}|${sortedJson(spec.constants)}`;
    const cached = this.kernels.get(key);
    if (cached) return cached;
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
    const pipeline = this.device.createComputePipeline({
      layout: 'auto',
      compute: { module, entryPoint: spec.entry, constants },
      label: key,
    });
    const kernel = { pipeline, layout: pipeline.getBindGroupLayout(0) };
    this.kernels.set(key, kernel);
    return kernel;
  }
}
