/**
 * Activation buffers laid out once per shape: one decoder layer's on N rows (kept from the
 * forward pass for the backward one, or scratch for inference), with an adapter's per-target
 * activations, and a batch's whole workspace for training (inputs, residuals, every layer's
 * activations, logits, losses and the gradient scratch).
 */
import type { Runtime } from '../gpu/runtime';
import { view, type DType, type Tensor } from '../gpu/tensor';
import { headDim, type LlamaConfig } from './config';
import type { LoraConfig } from './lora';
import { loraActs, loraStage, type LoraActs } from './loraAdapter';

/** Activation buffers of one layer on N rows: kept from forward for backward, or scratch for inference. */
export interface LayerActs {
  /** Fused projections: each row is q | k | v (rotated in place), and gate | up. */
  ln1: Tensor; rstd1: Tensor; qkv: Tensor; att: Tensor; lse: Tensor;
  mid: Tensor; ln2: Tensor; rstd2: Tensor; gu: Tensor; act: Tensor;
  /** With LoRA: each target's x·Aᵀ [N, r] (kept for backward) and a shared staging area. */
  lora?: LoraActs;
}

type Alloc = (shape: number[], label: string) => Tensor;

/**
 * Allocates one layer's activations for N rows through `f` (shape, label) → tensor; with an
 * adapter, its per-target activations too, staging through `lora.stage`.
 */
export function layerActs(c: LlamaConfig, N: number, f: Alloc, lora?: { config: LoraConfig; stage: Tensor }): LayerActs {
  const H = c.hidden_size;
  const hd = headDim(c);
  const qd = c.num_attention_heads * hd;
  const kvd = c.num_key_value_heads * hd;
  const I = c.intermediate_size;
  const acts: LayerActs = {
    ln1: f([N, H], 'ln1'), rstd1: f([N], 'rstd1'), qkv: f([N, qd + 2 * kvd], 'qkv'),
    att: f([N, qd], 'att'), lse: f([N, c.num_attention_heads], 'lse'), mid: f([N, H], 'mid'), ln2: f([N, H], 'ln2'),
    rstd2: f([N], 'rstd2'), gu: f([N, 2 * I], 'gate_up'), act: f([N, I], 'act'),
  };
  if (lora) acts.lora = loraActs(lora.config, N, f, lora.stage);
  return acts;
}

/** Every tensor of `a` cut to its first n rows. */
export function actsRows(a: LayerActs, n: number): LayerActs {
  const rows = (t: Tensor) => view(t, [n, ...t.shape.slice(1)]);
  const { lora, ...plain } = a;
  const out = Object.fromEntries(Object.entries(plain).map(([k, t]) => [k, rows(t as Tensor)])) as unknown as LayerActs;
  if (lora) out.lora = { u: new Map([...lora.u].map(([k, t]) => [k, rows(t)])), stage: rows(lora.stage) };
  return out;
}

/** Activation and gradient-scratch buffers for one batch shape, allocated once. */
export class Workspace {
  readonly tokens: Tensor<'u32'>;
  readonly mask: Tensor<'u32'>;
  readonly positions: Tensor<'u32'>;
  readonly targets: Tensor<'i32'>;
  readonly weights: Tensor;
  readonly residual: Tensor[];
  readonly layers: LayerActs[];
  readonly lnf: Tensor;
  readonly rstdf: Tensor;
  /**
   * The LM head on a loss's rows alone (see Transformer.lossHead): their final norms gathered,
   * and the CSR (tokenIndex) of their tokens, which scatters their gradients back and whose
   * first entries are those tokens in order. `headRowCount`: how many the last loss kept,
   * null when it kept every row.
   */
  readonly headIn: Tensor;
  readonly headScatter: Tensor<'u32'>;
  headRowCount: number | null = null;
  readonly logits: Tensor;
  readonly tokenLoss: Tensor<'f32'>;
  readonly logp: Tensor<'f32'>;
  /** Policy-gradient loss inputs (4 per token) and outputs (3 per token). */
  readonly policyIn: Tensor<'f32'>;
  readonly policyOut: Tensor<'f32'>;
  /** `loraU`: an adapter's d(x·Aᵀ) for one target at a time. */
  readonly grad: { res: Tensor; ln: Tensor; att: Tensor; qkv: Tensor; D: Tensor; act: Tensor; gu: Tensor; loraU: Tensor };
  tokenIds: ArrayLike<number> = [];
  lossReady = false;
  private readonly all: Tensor[] = [];

  constructor(private readonly rt: Runtime, c: LlamaConfig, readonly B: number, readonly T: number, lora: LoraConfig | null) {
    const N = B * T;
    const H = c.hidden_size;
    const hd = headDim(c);
    const qd = c.num_attention_heads * hd;
    const kvd = c.num_key_value_heads * hd;
    const I = c.intermediate_size;
    const nH = c.num_attention_heads;
    const f = (shape: number[], label: string) => this.track(rt.empty(shape, 'f32', label));
    this.tokens = this.track(rt.empty([N], 'u32', 'tokens'));
    this.mask = this.track(rt.empty([N], 'u32', 'mask'));
    this.positions = this.track(rt.empty([N], 'u32', 'positions'));
    this.targets = this.track(rt.empty([N], 'i32', 'targets'));
    this.weights = f([N], 'weights');
    this.residual = Array.from({ length: c.num_hidden_layers + 1 }, (_, l) => f([N, H], `residual.${l}`));
    const stage = lora ? loraStage(c, lora, N, f) : null;
    this.layers = Array.from({ length: c.num_hidden_layers }, () => layerActs(c, N, f, lora && stage ? { config: lora, stage } : undefined));
    this.lnf = f([N, H], 'lnf');
    this.rstdf = f([N], 'rstdf');
    this.headIn = f([N, H], 'head_in');
    this.headScatter = this.track(rt.empty([3 * N + 1], 'u32', 'head_scatter'));
    this.logits = f([N, c.vocab_size], 'logits');
    this.tokenLoss = f([N], 'token_loss');
    this.logp = f([N], 'logp');
    this.policyIn = f([N * 4], 'policy_in');
    this.policyOut = f([N * 3], 'policy_out');
    this.grad = {
      res: f([N, H], 'd.res'), ln: f([N, H], 'd.ln'), att: f([N, qd], 'd.att'), qkv: f([N, qd + 2 * kvd], 'd.qkv'),
      D: f([N, nH], 'd.D'), act: f([N, I], 'd.act'), gu: f([N, 2 * I], 'd.gate_up'), loraU: f([N, lora?.rank ?? 1], 'd.lora_u'),
    };
  }

  private track<D extends DType>(t: Tensor<D>): Tensor<D> {
    this.all.push(t);
    return t;
  }

  destroy(): void {
    this.rt.release(...this.all);
    this.all.length = 0;
  }
}
