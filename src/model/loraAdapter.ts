/**
 * A LoRA adapter on the GPU, as the transformer calls it at each adapted projection (lora.ts
 * holds the adapter's layout and PEFT's files): its weights and their gradients, the forward
 * add of scale · (x·Aᵀ)·Bᵀ into the rows the base projection wrote and its backward pass, and
 * inference's copy of the adapted weight blocks with scale · B·A merged in.
 */
import { copyColumns, narrowToHalf, widenHalf } from '../gpu/ops/elementwise';
import { matmul } from '../gpu/ops/matmul';
import type { MatmulArgs } from '../gpu/ops/matmulVariants';
import type { Runtime } from '../gpu/runtime';
import { view, type Tensor } from '../gpu/tensor';
import type { LlamaConfig, ParamSpec } from './config';
import {
  adaptedTarget, fusedBlocks, loraName, loraScale, loraSpecs, loraStageWidth, orderedTargets, targetGeometry, targetWeightName,
  type FusedBlock, type LoraConfig, type LoraTarget, type TargetGeometry,
} from './lora';
import type { BaseDtype } from './memory';
import { f32Copy, ParamSet } from './paramSet';

/** A layer's adapter activations: each target's x·Aᵀ [N, r] (kept for backward) and a shared staging area. */
export interface LoraActs {
  u: Map<LoraTarget, Tensor>;
  /**
   * [N, widest fused target or fused block's x·Aᵀ]: a target's B·A·x before it joins its fused
   * q|k|v or gate|up rows (training), or a fused block's x·[A_t; …]ᵀ (inference, see inferTerm).
   */
  stage: Tensor;
}

type Alloc = (shape: number[], label: string) => Tensor;

/** What a matmul computes from its A as it reads it (see MatmulArgs). */
type Prologue = Pick<MatmulArgs, 'swiglu' | 'norm'>;

/** The staging area LoRA's fused targets share, for N rows (one per workspace, not per layer). */
export function loraStage(c: LlamaConfig, lora: LoraConfig, N: number, f: Alloc): Tensor {
  return f([N, loraStageWidth(c, lora)], 'lora.stage');
}

/**
 * A fused block's adapter as one pair of matrices for inference: `a` the targets' A_t stacked
 * [n·r, in], `b` their B_t on a block diagonal [block's rows, n·r] (zeros elsewhere), so that
 * x·aᵀ·bᵀ adds every target's B_t·A_t·x into its own columns.
 */
interface StackedBlock {
  a: Tensor;
  b: Tensor;
  targets: LoraTarget[];
}

const isFused = (block: TargetGeometry['block']): block is FusedBlock['block'] => block === 'qkv' || block === 'gate_up';

/** One layer's adapter activations for N rows, allocated through `f`, staging through `stage`. */
export function loraActs(lora: LoraConfig, N: number, f: Alloc, stage: Tensor): LoraActs {
  const r = lora.rank;
  return { u: new Map(orderedTargets(lora).map((t) => [t, f([N, r], `lora.${t}.u`)])), stage };
}

/** The fused weight blocks a layer's projections read, by the name of their first weight. */
export const BLOCK_FIRST: Record<TargetGeometry['block'], string> = {
  qkv: 'self_attn.q_proj.weight',
  o: 'self_attn.o_proj.weight',
  gate_up: 'mlp.gate_proj.weight',
  down: 'mlp.down_proj.weight',
};

/** A LoRA adapter on a model: its configuration (targets in the model's order), scale and weights. */
export class LoraAdapter {
  readonly config: LoraConfig;
  readonly scale: number;
  readonly set: ParamSet;
  /**
   * Inference's copy of each weight block the adapter adapts (q|k|v, o, gate|up, down of
   * every layer), in the base's dtype, with scale · B·A added: an inference forward then
   * costs no dispatch more than the base's. Made on the first inference forward, remade after
   * the adapter changes (see changed).
   */
  private merged: Map<string, Tensor>[] | null = null;
  private mergedStale = true;
  /**
   * Inference's stacked copy of each layer's fused blocks (see StackedBlock, inferTerm), made
   * on the first inference forward that keeps the adapter apart and remade after it changes.
   */
  private stacked: Map<FusedBlock['block'], StackedBlock>[] | null = null;
  private stackedStale = true;
  /** Whether the stacked B's zeros are written (a trace, which may make the copy first, writes nothing). */
  private stackedZeroed = false;

  /** The adapter's layout on model `c`; refused where `flat` does not hold it. */
  static specs(c: LlamaConfig, config: LoraConfig, flat: Float32Array): ParamSpec[] {
    const specs = loraSpecs(c, config);
    const size = specs.reduce((n, s) => n + s.size, 0);
    if (flat.length !== size) throw new Error(`the adapter holds ${flat.length} values; rank ${config.rank} on ${config.targets.join(', ')} needs ${size}`);
    return specs;
  }

  /** Uploads `flat`, laid out by `specs` (LoraAdapter.specs). */
  constructor(
    private readonly rt: Runtime,
    private readonly c: LlamaConfig,
    config: LoraConfig,
    specs: ParamSpec[],
    flat: Float32Array,
  ) {
    this.config = { ...config, targets: orderedTargets(config) };
    this.scale = loraScale(config);
    this.set = new ParamSet(rt, specs, [rt.upload(flat, [flat.length])]);
  }

  /** The weights are about to change (an optimizer step): the inference copies are remade before the next inference forward. */
  changed(): void {
    this.mergedStale = true;
    this.stackedStale = true;
  }

  /**
   * Layer l's adapted weight blocks with the adapter merged in, in `dtype`, for an inference
   * forward. Records the merge first when the adapter changed since the last one: the base
   * block (`blockOf`) → f32 (widened from f16), += scale · B·A for each adapted target's rows,
   * → the copy (narrowed to f16 for an f16 base).
   */
  mergedLayer(l: number, dtype: BaseDtype, blockOf: (layer: number, first: string) => Tensor): Map<string, Tensor> {
    if (this.mergedStale || !this.merged) {
      const { rt, c } = this;
      this.merged ??= Array.from({ length: c.num_hidden_layers }, (_, layer) => {
        const blocks = new Map<string, Tensor>();
        for (const t of this.config.targets) {
          const first = BLOCK_FIRST[targetGeometry(c, t).block];
          if (!blocks.has(first)) blocks.set(first, rt.empty(blockOf(layer, first).shape, dtype, 'weight.merged'));
        }
        return blocks;
      });
      this.merged.forEach((blocks, layer) => {
        for (const [first, copy] of blocks) {
          const base = blockOf(layer, first);
          // An f32 copy is merged in place; an f16 one through an f32 block, rounded once.
          const w = copy.dtype === 'f32' ? copy : rt.empty(copy.shape, 'f32', 'weight.f32');
          if (base.dtype === 'f16') widenHalf(rt, base, w);
          else rt.copy(base, w);
          for (const t of this.config.targets) {
            const g = targetGeometry(c, t);
            if (BLOCK_FIRST[g.block] === first) this.add(layer, t, view(w, [g.out, g.in], g.col * g.in), 1);
          }
          if (w !== copy) {
            narrowToHalf(rt, w, copy);
            rt.release(w);
          }
        }
      });
      // A trace records nothing: the merge is still to be made.
      this.mergedStale = rt.isTracing;
    }
    return this.merged[l]!;
  }

  /** Returns the merged inference copy to the pool (remade when next needed). */
  dropMerged(): void {
    if (!this.merged) return;
    for (const layer of this.merged) this.rt.release(...layer.values());
    this.merged = null;
    this.mergedStale = true;
  }

  /** Records W −= scale · B·A for every weight of `base` the adapter adapts (undoing a merge); an f16 W through an f32 copy. */
  subtractFrom(base: ParamSet): void {
    for (let l = 0; l < this.c.num_hidden_layers; l++) {
      for (const t of this.config.targets) {
        const W = base.param(targetWeightName(this.c, l, t));
        const out = W.dtype === 'f32' ? W : f32Copy(this.rt, W);
        this.add(l, t, out, -1);
        if (out !== W) {
          narrowToHalf(this.rt, out, W);
          this.rt.release(out);
        }
      }
    }
  }

  /** Records w += sign · scale · B·A of target `t` in layer `l`. */
  private add(l: number, t: LoraTarget, w: Tensor, sign: 1 | -1): void {
    matmul(this.rt, { a: this.set.param(loraName(this.c, l, t, 'B')), b: this.set.param(loraName(this.c, l, t, 'A')), out: w, alpha: sign * this.scale, beta: 1 });
  }

  /**
   * The base weight `name` (stored in `base`) as float32, with the adapter merged in where it
   * adapts it: only an adapted weight needs a GPU copy; the others are read as stored.
   */
  async readWeight(name: string, base: Tensor): Promise<Float32Array> {
    const target = adaptedTarget(this.c, name, this.config);
    if (!target) return this.rt.readF32(base);
    const w = f32Copy(this.rt, base);
    this.add(target.layer, target.target, w, 1);
    const values = await this.rt.read(w);
    this.rt.release(w);
    return values;
  }

  /**
   * Adds scale · (x·Aᵀ)·Bᵀ of each adapted target among `targets` of layer `l` into its columns
   * of `y` (the block the base projection wrote), keeping x·Aᵀ in `acts.u` for the backward
   * pass. `prologue`: what the matmuls reading x compute from it first (inference's norm or SwiGLU).
   */
  forward(l: number, targets: LoraTarget[], x: Tensor, y: Tensor, acts: LoraActs | undefined, prologue: Prologue = {}): void {
    if (!acts) throw new Error('these activations were laid out before the LoRA adapter was added');
    const { rt, c } = this;
    for (const t of targets) {
      const u = acts.u.get(t);
      if (!u) continue;
      const g = targetGeometry(c, t);
      matmul(rt, { a: x, b: this.set.param(loraName(c, l, t, 'A')), transB: true, out: u, ...prologue });
      const B = this.set.param(loraName(c, l, t, 'B'));
      if (g.block === 'o' || g.block === 'down') {
        matmul(rt, { a: u, b: B, transB: true, alpha: this.scale, beta: 1, out: y });
      } else {
        const stage = view(acts.stage, [u.shape[0]!, g.out]);
        matmul(rt, { a: u, b: B, transB: true, out: stage });
        copyColumns(rt, stage, 0, y, g.col, g.out, { alpha: this.scale, accumulate: true });
      }
    }
  }

  /**
   * Inference's share (no backward pass follows) of the targets among `targets`, which share
   * one block: records u = x·Aᵀ and returns the term the block's base projection adds as it
   * stores (MatmulArgs.lora), scale · u·Bᵀ, or nothing where none of them is adapted. A fused
   * block (q|k|v, gate|up) takes x·[A_t; …]ᵀ into `acts.stage` and adds it times its B_t on a
   * block diagonal; o and down take their one target's A and B as they are. A decode step with
   * all seven targets then records 4 dispatches a layer for the adapter, one a block (forward
   * records 19; a second matmul a block adding the term after the base's, 8): on an f16 base,
   * which keeps the adapter apart, most of a rollout's dispatches were the adapter's.
   */
  inferTerm(l: number, targets: LoraTarget[], x: Tensor, acts: LoraActs | undefined, prologue: Prologue = {}): MatmulArgs['lora'] {
    const { rt, c } = this;
    if (!acts) throw new Error('these activations were laid out before the LoRA adapter was added');
    const block = targetGeometry(c, targets[0]!).block;
    if (!isFused(block)) {
      const t = targets[0]!;
      const u = acts.u.get(t);
      if (!u) return undefined;
      matmul(rt, { a: x, b: this.set.param(loraName(c, l, t, 'A')), transB: true, out: u, ...prologue });
      return { u, b: this.set.param(loraName(c, l, t, 'B')), scale: this.scale };
    }
    const s = this.stackedLayer(l).get(block);
    if (!s) return undefined;
    const u = view(acts.stage, [x.shape[0]!, s.a.shape[0]!]);
    matmul(rt, { a: x, b: s.a, transB: true, out: u, ...prologue });
    return { u, b: s.b, scale: this.scale };
  }

  /** Layer l's stacked fused blocks, (re)made first where the adapter changed since the last inference forward. */
  private stackedLayer(l: number): Map<FusedBlock['block'], StackedBlock> {
    const { rt, c } = this;
    const r = this.config.rank;
    if (!this.stacked) {
      const fused = fusedBlocks(c, this.config);
      this.stacked = Array.from({ length: c.num_hidden_layers }, () => new Map(fused.map(({ block, targets, rows, in: width }) => {
        const n = targets.length * r;
        return [block, { a: rt.empty([n, width], 'f32', 'lora.stacked.A'), b: rt.empty([rows, n], 'f32', 'lora.stacked.B'), targets }];
      })));
      this.stackedStale = true;
      this.stackedZeroed = false;
    }
    if (this.stackedStale) {
      // Zeros off the diagonal, written once outside a trace: a remake writes the diagonal blocks alone.
      if (!this.stackedZeroed && !rt.isTracing) {
        for (const blocks of this.stacked) for (const { b } of blocks.values()) rt.write(b, new Float32Array(b.size));
        this.stackedZeroed = true;
      }
      for (const [layer, blocks] of this.stacked.entries()) {
        for (const { a, b, targets } of blocks.values()) {
          const n = targets.length * r;
          targets.forEach((t, j) => {
            const g = targetGeometry(c, t);
            rt.copy(this.set.param(loraName(c, layer, t, 'A')), view(a, [r, g.in], j * r * g.in));
            copyColumns(rt, this.set.param(loraName(c, layer, t, 'B')), 0, view(b, [g.out, n], g.col * n), j * r, r);
          });
        }
      }
      // A trace records nothing: the copies are still to be made.
      this.stackedStale = rt.isTracing;
    }
    return this.stacked[l]!;
  }

  /**
   * The backward pass of forward for the targets among `targets`: adapter gradients from dy
   * (the gradient of the block's rows) and x, and dx += the adapters' share; `du` is scratch
   * for one target's d(x·Aᵀ).
   */
  backward(l: number, targets: LoraTarget[], x: Tensor, dy: Tensor, dx: Tensor, acts: LoraActs | undefined, du: Tensor): void {
    const { rt, c } = this;
    for (const t of targets) {
      const u = acts?.u.get(t);
      if (!u) continue;
      const g = targetGeometry(c, t);
      let dyT = dy;
      if (isFused(g.block)) {
        dyT = view(acts!.stage, [u.shape[0]!, g.out]);
        copyColumns(rt, dy, g.col, dyT, 0, g.out);
      }
      const [A, B] = [loraName(c, l, t, 'A'), loraName(c, l, t, 'B')];
      matmul(rt, { a: dyT, b: u, transA: true, alpha: this.scale, beta: 1, out: this.set.grad(B) });
      matmul(rt, { a: dyT, b: this.set.param(B), alpha: this.scale, out: du });
      matmul(rt, { a: du, b: x, transA: true, beta: 1, out: this.set.grad(A) });
      matmul(rt, { a: du, b: this.set.param(A), beta: 1, out: dx });
    }
  }

  /** Gives its weights, their gradients and the inference copies back. */
  destroy(): void {
    this.set.destroy();
    this.dropMerged();
    for (const blocks of this.stacked ?? []) for (const s of blocks.values()) this.rt.release(s.a, s.b);
    this.stacked = null;
  }
}
