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

/** A kernel's entry in the cache: its compiled pipeline, once made. */
export class Kernel {
  compiled: CompiledKernel | null = null;
  /** The asynchronous compile under way, if any. */
  compiling: Promise<void> | null = null;
  /** Why the asynchronous compile failed (the shader's or the pipeline's validation message), once it has. */
  failure: string | null = null;

  constructor(
    readonly spec: KernelSpec,
    /** The spec with its defines and constants sorted: specs that differ only in their order share one entry. */
    readonly key: string,
  ) {}
}

/** Kernels by shader, entry, then each define's and constant's name and value in turn (see find). */
type Trie = Map<unknown, Trie | Kernel>;
/** Keys of the trie that no name or value can equal: the end of the defines, and a kernel's slot. */
const CONSTANTS = Symbol('constants');
const KERNEL = Symbol('kernel');

function child(node: Trie, key: unknown): Trie {
  let next = node.get(key) as Trie | undefined;
  if (!next) node.set(key, (next = new Map()));
  return next;
}

/** Each device's pipelines, for every runtime on it (see Platform.shareDevice). */
const caches = new WeakMap<GPUDevice, PipelineCache>();

/**
 * Shader modules keyed by (source, defines); pipelines by (module, entry, constants).
 * Pipelines compile asynchronously from the moment a kernel is first recorded (prepare),
 * off the thread that records: compiling a large unrolled module synchronously stalls the
 * page or worker at first use, worst on Windows. The runtime awaits them (ready) before it
 * submits the work that uses them; a pipeline needed before it is ready is made at once.
 *
 * A dispatch finds its kernel by walking a trie of the spec's own values (find): Map lookups
 * of strings and numbers that exist already, where a key built per dispatch (the sorted JSON
 * of its defines) cost a decode step more host time than its native calls.
 */
export class PipelineCache {
  /** The pipelines of a device: one cache however many runtimes use it. */
  static of(device: GPUDevice, source: (shader: string) => string): PipelineCache {
    let cache = caches.get(device);
    if (!cache) caches.set(device, (cache = new PipelineCache(device, source)));
    return cache;
  }

  private readonly modules = new Map<string, GPUShaderModule>();
  private readonly trie: Trie = new Map();
  private readonly byKey = new Map<string, Kernel>();
  private readonly compiling = new Set<Promise<void>>();
  /** Pipelines made synchronously because they were needed before their asynchronous compile ended. */
  synchronous = 0;

  constructor(
    private readonly device: GPUDevice,
    private readonly source: (shader: string) => string,
  ) {}

  /** The kernel of a spec, its compile started in the background unless it exists or is under way. */
  prepare(spec: KernelSpec): Kernel {
    const kernel = this.find(spec);
    // A kernel that failed is not compiled again: its dispatch reports the error (compiled).
    if (kernel.compiled || kernel.compiling || kernel.failure !== null) return kernel;
    // The shader module's own errors (WGSL it cannot compile) are caught with the pipeline's,
    // so that a caller can pass over a kernel this adapter cannot run (Kernel.failure, after ready).
    this.device.pushErrorScope('validation');
    const pipeline = this.device.createComputePipelineAsync(this.descriptor(kernel));
    const scope = this.device.popErrorScope();
    const compile = Promise.all([pipeline, scope])
      .then(
        ([made, error]) => {
          if (error) kernel.failure = error.message;
          else kernel.compiled ??= { pipeline: made, layout: made.getBindGroupLayout(0) };
        },
        // An invalid kernel: recorded, and left to compiled(), whose synchronous creation
        // reports the error where the runtime collects validation errors.
        (error: unknown) => {
          kernel.failure = error instanceof Error ? error.message : String(error);
        },
      )
      .finally(() => {
        kernel.compiling = null;
        this.compiling.delete(compile);
      });
    kernel.compiling = compile;
    this.compiling.add(compile);
    return kernel;
  }

  /** Resolves once every pipeline compiling now has finished. */
  async ready(): Promise<void> {
    while (this.compiling.size) await Promise.all(this.compiling);
  }

  /** The kernel's pipeline: the one compiled in the background, or made now if it is not ready. */
  compiled(kernel: Kernel): CompiledKernel {
    if (kernel.compiled) return kernel.compiled;
    this.synchronous++;
    const pipeline = this.device.createComputePipeline(this.descriptor(kernel));
    return (kernel.compiled = { pipeline, layout: pipeline.getBindGroupLayout(0) });
  }

  /**
   * The spec's kernel, found without building a key: the trie is walked by shader, entry and
   * the defines' and constants' names and values in the spec's own order (a call site writes
   * them in one order, so the walk is the same every time); a spec first seen in another order
   * joins the entry of its sorted key.
   */
  private find(spec: KernelSpec): Kernel {
    let node = child(child(this.trie, spec.shader), spec.entry);
    const { defines, constants } = spec;
    if (defines) for (const k in defines) node = child(child(node, k), defines[k]);
    node = child(node, CONSTANTS);
    if (constants) for (const k in constants) node = child(child(node, k), constants[k]);
    let kernel = node.get(KERNEL) as Kernel | undefined;
    if (!kernel) {
      const key = `${spec.shader}|${sortedJson(defines)}|${spec.entry}|${sortedJson(constants)}`;
      kernel = this.byKey.get(key) ?? new Kernel(spec, key);
      this.byKey.set(key, kernel);
      node.set(KERNEL, kernel);
    }
    return kernel;
  }

  private descriptor({ spec, key }: Kernel): GPUComputePipelineDescriptor {
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
