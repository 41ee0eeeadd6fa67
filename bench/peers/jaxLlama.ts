/**
 * The same Llama decoder and AdamW training step as src/model + src/train, written the way a
 * jax-js user would: a pure loss function, `valueAndGrad`, and the whole step (loss,
 * gradients, global-norm clip, AdamW) under one `jit`, so jax-js can fuse and replay it.
 *
 * Faithful to ours: pre-norm RMSNorm blocks, rotate-half RoPE with the same float64 tables,
 * causal GQA attention scaled by 1/√head_dim, SwiGLU MLP, tied embeddings, mean next-token
 * cross-entropy, and AdamW with the same hyper-parameters, clip and decay mask. Parameters
 * start from the same flat initialisation (`initialParams`), so both models see identical
 * weights and their losses can be compared step by step.
 *
 * jax-js takes ownership of every Array passed to a function (see its README): an Array
 * used twice is passed as `x.ref` the first time, and one never passed on is disposed.
 */
import type * as JaxModule from '@jax-js/jax';
import type { Array as JaxArray } from '@jax-js/jax';
import { headDim, paramSpecs, type LlamaConfig, type ParamSpec } from '../../src/model/config';
import { ropeTables } from '../../src/model/kernels/rope';
import type { AdamWConfig } from '../../src/train/adamw';

type Jax = typeof JaxModule;

/** Per layer, the parameters in paramSpecs order (no biases: the presets have none). */
const LAYER_PARAMS = [
  'input_layernorm.weight',
  'self_attn.q_proj.weight',
  'self_attn.k_proj.weight',
  'self_attn.v_proj.weight',
  'self_attn.o_proj.weight',
  'post_attention_layernorm.weight',
  'mlp.gate_proj.weight',
  'mlp.up_proj.weight',
  'mlp.down_proj.weight',
] as const;

export interface JaxLlamaOptions {
  /** Where every Array lives; jit runs the step there because its inputs are committed to it. */
  device: JaxModule.Device;
  B: number;
  T: number;
  lr: number;
  adamw: AdamWConfig;
}

export interface JaxStepResult {
  /** The step's mean loss, read back to the host (the loop's per-step sync). */
  loss: number;
}

export interface JaxLlamaTrainer {
  /** One training step on a batch of B·T next-token pairs (int32 ids). */
  step(batch: { tokens: Int32Array<ArrayBuffer>; targets: Int32Array<ArrayBuffer> }): Promise<JaxStepResult>;
  /** Frees every Array and the compiled step; throws if a reference count went wrong. */
  dispose(): void;
}

function checkSupported(c: LlamaConfig): void {
  if (c.attention_bias) throw new Error('jax-js peer: attention biases are not implemented (no preset uses them)');
  if (!c.tie_word_embeddings) throw new Error('jax-js peer: untied lm_head is not implemented (every preset ties)');
}

/** A trainer for `config` whose parameters start at `flat` (the layout of paramSpecs). */
export function createJaxLlamaTrainer(jax: Jax, config: LlamaConfig, flat: Float32Array, opts: JaxLlamaOptions): JaxLlamaTrainer {
  checkSupported(config);
  const { numpy: np, nn } = jax;
  const { device, B, T, lr, adamw } = opts;
  const c = config;
  const H = c.hidden_size;
  const hd = headDim(c);
  const nH = c.num_attention_heads;
  const nKV = c.num_key_value_heads;
  const V = c.vocab_size;
  const L = c.num_hidden_layers;
  const eps = c.rms_norm_eps;
  const N = B * T;

  const specs: ParamSpec[] = paramSpecs(c);
  const expected = 1 + L * LAYER_PARAMS.length + 1;
  if (specs.length !== expected) throw new Error(`jax-js peer: expected ${expected} parameter tensors, got ${specs.length}`);
  const decay = specs.map((s) => s.decay);

  // cos/sin [1, T, 1, hd]: the [pos, hd/2] tables repeated over both halves, as HF does.
  const tables = ropeTables(hd, c.max_position_embeddings, c.rope_theta);
  const half = hd / 2;
  const cosFull = new Float32Array(T * hd);
  const sinFull = new Float32Array(T * hd);
  for (let t = 0; t < T; t++) {
    for (let i = 0; i < hd; i++) {
      cosFull[t * hd + i] = tables.cos[t * half + (i % half)]!;
      sinFull[t * hd + i] = tables.sin[t * half + (i % half)]!;
    }
  }

  const rmsnorm = (x: JaxArray, w: JaxArray): JaxArray => {
    const meanSq = np.square(x.ref).mean(-1, { keepdims: true });
    return x.mul(np.reciprocal(np.sqrt(meanSq.add(eps)))).mul(w);
  };
  /** x [rows, in] · Wᵀ with W [out, in] (Hugging Face layout). */
  const linear = (x: JaxArray, w: JaxArray): JaxArray => np.matmul(x, w.transpose());
  /** Rotate-half RoPE on x [B, T, heads, hd]. */
  const rope = (x: JaxArray, cos: JaxArray, sin: JaxArray): JaxArray => {
    const [x1, x2] = np.split(x.ref, 2, -1) as [JaxArray, JaxArray];
    const rotated = np.concatenate([x2.neg(), x1], -1);
    return x.mul(cos).add(rotated.mul(sin));
  };

  /** Mean next-token cross-entropy over the batch. */
  const lossFn = (params: JaxArray[], tokens: JaxArray, targets: JaxArray, cos: JaxArray, sin: JaxArray): JaxArray => {
    let k = 0;
    const next = () => params[k++]!;
    const embed = next();
    let h = np.take(embed.ref, tokens.reshape([N]), 0); // [N, H]
    for (let l = 0; l < L; l++) {
      const [ln1, wq, wk, wv, wo, ln2, wg, wu, wd] = LAYER_PARAMS.map(next) as [
        JaxArray, JaxArray, JaxArray, JaxArray, JaxArray, JaxArray, JaxArray, JaxArray, JaxArray,
      ];
      const x = rmsnorm(h.ref, ln1);
      const q = rope(linear(x.ref, wq).reshape([B, T, nH, hd]), cos.ref, sin.ref);
      const kk = rope(linear(x.ref, wk).reshape([B, T, nKV, hd]), cos.ref, sin.ref);
      const v = linear(x, wv).reshape([B, T, nKV, hd]);
      const att = nn.dotProductAttention(q, kk, v, { isCausal: true }).reshape([N, nH * hd]);
      h = h.add(linear(att, wo));
      const x2 = rmsnorm(h.ref, ln2);
      const act = nn.silu(linear(x2.ref, wg)).mul(linear(x2, wu));
      h = h.add(linear(act, wd));
    }
    cos.dispose();
    sin.dispose();
    const logits = linear(rmsnorm(h, next()), embed); // tied: the embedding is the LM head
    // The one-hot product fuses into the reduction; a gather would need a scatter in backward.
    const picked = nn.logSoftmax(logits, -1).mul(nn.oneHot(targets.reshape([N]), V)).sum(-1);
    return picked.mean().neg();
  };

  const { beta1: b1, beta2: b2, eps: adamEps, weightDecay: wdecay, maxGradNorm } = adamw;

  /** Loss + gradients + clip + AdamW: the whole training step, traced once and replayed. */
  const trainStep = (
    params: JaxArray[],
    m: JaxArray[],
    v: JaxArray[],
    count: JaxArray,
    tokens: JaxArray,
    targets: JaxArray,
    cos: JaxArray,
    sin: JaxArray,
  ): [JaxArray[], JaxArray[], JaxArray[], JaxArray, JaxArray] => {
    const [loss, grads] = jax.valueAndGrad(lossFn)(params.map((p) => p.ref), tokens, targets, cos, sin) as [
      JaxArray,
      JaxArray[],
    ];
    // Global gradient-norm clip, as ours: scale = maxNorm / (‖g‖ + 1e-6) when ‖g‖ > maxNorm.
    const sumSq = grads.map((g) => np.square(g.ref).sum()).reduce((a, b) => a.add(b));
    const norm = np.sqrt(sumSq);
    const scale =
      maxGradNorm > 0 ? np.where(norm.ref.greater(maxGradNorm), np.reciprocal(norm.add(1e-6)).mul(maxGradNorm), 1) : (norm.dispose(), np.array(1));
    // Bias corrections from the step count kept on the device, so the step never recompiles.
    const t = count.add(1);
    const bc1 = np.exp(t.ref.mul(Math.log(b1))).neg().add(1);
    const bc2 = np.exp(t.ref.mul(Math.log(b2))).neg().add(1);
    const newP: JaxArray[] = [];
    const newM: JaxArray[] = [];
    const newV: JaxArray[] = [];
    grads.forEach((g0, i) => {
      const g = g0.mul(scale.ref);
      const mi = m[i]!.mul(b1).add(g.ref.mul(1 - b1));
      const vi = v[i]!.mul(b2).add(np.square(g).mul(1 - b2));
      let update = mi.ref.div(bc1.ref).div(np.sqrt(vi.ref.div(bc2.ref)).add(adamEps));
      const p = params[i]!;
      if (decay[i]) update = update.add(p.ref.mul(wdecay));
      newP.push(p.sub(update.mul(lr)));
      newM.push(mi);
      newV.push(vi);
    });
    scale.dispose();
    bc1.dispose();
    bc2.dispose();
    return [newP, newM, newV, t, loss];
  };

  const step = jax.jit(trainStep);

  let params: JaxArray[] = specs.map((s) =>
    np.array(flat.slice(s.offset, s.offset + s.size), { shape: s.shape, dtype: np.float32, device }),
  );
  let m: JaxArray[] = specs.map((s) => np.zeros(s.shape, { dtype: np.float32, device }));
  let v: JaxArray[] = specs.map((s) => np.zeros(s.shape, { dtype: np.float32, device }));
  let count: JaxArray = np.array(0, { dtype: np.float32, device });
  const cos = np.array(cosFull, { shape: [1, T, 1, hd], dtype: np.float32, device });
  const sin = np.array(sinFull, { shape: [1, T, 1, hd], dtype: np.float32, device });

  return {
    async step({ tokens: tokensData, targets: targetsData }) {
      if (tokensData.length !== N || targetsData.length !== N) throw new Error(`jax-js peer: a batch needs ${N} tokens and targets`);
      // A fresh batch is uploaded every step, as in a real training loop.
      const tokens = np.array(tokensData, { shape: [B, T], dtype: np.int32, device });
      const targets = np.array(targetsData, { shape: [B, T], dtype: np.int32, device });
      const [p, mm, vv, cc, loss] = step(params, m, v, count, tokens, targets, cos.ref, sin.ref) as [
        JaxArray[],
        JaxArray[],
        JaxArray[],
        JaxArray,
        JaxArray,
      ];
      params = p;
      m = mm;
      v = vv;
      count = cc;
      // data() consumes the loss and waits for the step: the per-step host sync.
      const value = (await loss.data())[0]!;
      return { loss: value };
    },
    dispose() {
      const all = [...params, ...m, ...v, count, cos, sin];
      const bad = all.filter((a) => a.refCount !== 1).length;
      for (const a of all) a.dispose();
      step.dispose();
      if (bad) throw new Error(`jax-js peer: ${bad} arrays ended with a reference count other than 1 (leak or double free)`);
    },
  };
}
