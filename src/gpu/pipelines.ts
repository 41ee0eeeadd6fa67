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

/** Shader modules keyed by (source, defines); pipelines by (module, entry, constants). */
export class PipelineCache {
  private readonly modules = new Map<string, GPUShaderModule>();
  private readonly pipelines = new Map<string, GPUComputePipeline>();

  constructor(
    private readonly device: GPUDevice,
    private readonly source: (shader: string) => string,
  ) {}

  get(spec: KernelSpec): GPUComputePipeline {
    const moduleKey = `${spec.shader}|${sortedJson(spec.defines)}`;
    const key = `${moduleKey}|${spec.entry}|${sortedJson(spec.constants)}`;
    let pipeline = this.pipelines.get(key);
    if (pipeline) return pipeline;
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
    pipeline = this.device.createComputePipeline({
      layout: 'auto',
      compute: { module, entryPoint: spec.entry, constants },
      label: key,
    });
    this.pipelines.set(key, pipeline);
    return pipeline;
  }
}
