/**
 * A recorded sequence of dispatches, replayed without being recorded again (Runtime.capture,
 * Runtime.replay). A decode step records the same dispatches every token but for a parameter
 * or two (the cache slot): recording it through the model's code costs the host more per
 * dispatch than the WebGPU implementation's own calls. A plan resolves everything once —
 * pipelines, bind groups over a parameter buffer of its own, workgroup counts — and a replay
 * writes the cells' words and issues three native calls per dispatch.
 */
import type { Cell, Params } from './params';
import type { Kernel } from './pipelines';

/** One dispatch of a plan, as recorded. */
export interface PlanEntry {
  kernel: Kernel;
  params: Params;
  /** Bindings 1, 2, ...: the buffers recorded (null where the entry point uses none). */
  bound: (GPUBuffer | null)[];
  workgroups: readonly [number, number, number];
  label: string;
}

/** The runtime's counters (RuntimeCounters) a replay adds to as the recording did. */
export const PLAN_COUNTS = ['dispatches', 'workgroups', 'matmulFlops', 'matmulWeightBytes'] as const;
export type PlanCounts = Record<(typeof PLAN_COUNTS)[number], number>;

/** A plan's dispatches ready to encode: pipelines and bind groups made, workgroups laid out. */
export interface ResolvedPlan {
  pipelines: GPUComputePipeline[];
  groups: GPUBindGroup[];
  /** Workgroups in x, y, z of dispatch k at 3k, 3k + 1, 3k + 2. */
  workgroups: Uint32Array;
}

export class DispatchPlan {
  /** The entries' parameters, each at its offset (a multiple of the uniform offset alignment). */
  readonly uniform: GPUBuffer;
  /** Byte offset of each entry's parameters in `uniform`. */
  readonly offsets: number[] = [];
  /** Every entry's parameters, as the uniform buffer holds them (cells as of the last replay). */
  private readonly words: Uint32Array;
  /** Where the cells' values go in `words`. */
  private readonly cells: { at: number; cell: Cell }[] = [];
  resolved: ResolvedPlan | null = null;
  /**
   * The runtime's submit count while this plan's last replay waits, unsubmitted, among the
   * recorded commands (-1 once submitted): a replay then must not rewrite its parameters.
   */
  pendingAt = -1;
  destroyed = false;

  constructor(
    readonly entries: readonly PlanEntry[],
    readonly counts: PlanCounts,
    /** Buffers the recorded work acquired and released: the plan's own until it is destroyed. */
    readonly temporaries: readonly GPUBuffer[],
    device: GPUDevice,
    align: number,
  ) {
    let total = 0;
    for (const e of entries) {
      this.offsets.push(total);
      total += Math.ceil((4 * e.params.words) / align) * align;
    }
    this.words = new Uint32Array(Math.max(total, 16) / 4);
    this.uniform = device.createBuffer({ size: this.words.byteLength, usage: 0x40 /* UNIFORM */ | 0x08 /* COPY_DST */, label: 'plan.params' });
    entries.forEach((e, k) => {
      const at = this.offsets[k]! / 4;
      e.params.write(this.words, at);
      for (const { word, cell } of e.params.cells) this.cells.push({ at: at + word, cell });
    });
    device.queue.writeBuffer(this.uniform, 0, this.words);
  }

  /** Writes the cells' words at their values now (queue.writeBuffer: before any later submit). */
  write(queue: GPUQueue): void {
    if (this.cells.length === 0) return;
    for (const { at, cell } of this.cells) this.words[at] = cell.value;
    queue.writeBuffer(this.uniform, 0, this.words);
  }
}
