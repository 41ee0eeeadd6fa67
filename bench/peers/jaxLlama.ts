/**
 * The same Llama decoder as src/model, written the way a jax-js user would: for training, a
 * pure loss function, `valueAndGrad`, and the whole step (loss, gradients, global-norm clip,
 * AdamW) under one `jit`, so jax-js can fuse and replay it; for generation, a jitted prefill
 * and a jitted decode step over a fixed-size KV cache (see createJaxLlamaDecoder).
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
import { headDim, paramSpecs, ropeInvFreq, type LlamaConfig, type ParamSpec } from '../../src/model/config';
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

type LayerWeights = [JaxArray, JaxArray, JaxArray, JaxArray, JaxArray, JaxArray, JaxArray, JaxArray, JaxArray];

/** Attention of q [B, L, heads, hd] against k, v [B, S, kvHeads, hd]; returns [B, L, heads, hd]. */
type Attend = (q: JaxArray, k: JaxArray, v: JaxArray) => JaxArray;

/** The model's pieces in jax-js, shared by the trainer and the decoder. */
function llamaOps(jax: Jax, c: LlamaConfig) {
  const { numpy: np, nn } = jax;
  const H = c.hidden_size;
  const hd = headDim(c);
  const nH = c.num_attention_heads;
  const nKV = c.num_key_value_heads;
  const tables = ropeTables(ropeInvFreq(c), c.max_position_embeddings);
  const half = hd / 2;

  const rmsnorm = (x: JaxArray, w: JaxArray): JaxArray => {
    const meanSq = np.square(x.ref).mean(-1, { keepdims: true });
    return x.mul(np.reciprocal(np.sqrt(meanSq.add(c.rms_norm_eps)))).mul(w);
  };
  /** x [rows, in] · Wᵀ with W [out, in] (Hugging Face layout). */
  const linear = (x: JaxArray, w: JaxArray): JaxArray => np.matmul(x, w.transpose());
  /** Rotate-half RoPE on x [B, L, heads, hd] with cos/sin broadcastable to it. */
  const rope = (x: JaxArray, cos: JaxArray, sin: JaxArray): JaxArray => {
    const [x1, x2] = np.split(x.ref, 2, -1) as [JaxArray, JaxArray];
    const rotated = np.concatenate([x2.neg(), x1], -1);
    return x.mul(cos).add(rotated.mul(sin));
  };
  /** Host cos/sin rows [positions.length · hd] (the [pos, hd/2] tables repeated over both halves, as HF does). */
  const ropeRows = (positions: readonly number[]): [Float32Array<ArrayBuffer>, Float32Array<ArrayBuffer>] => {
    const cos = new Float32Array(positions.length * hd);
    const sin = new Float32Array(positions.length * hd);
    positions.forEach((p, t) => {
      for (let i = 0; i < hd; i++) {
        cos[t * hd + i] = tables.cos[p * half + (i % half)]!;
        sin[t * hd + i] = tables.sin[p * half + (i % half)]!;
      }
    });
    return [cos, sin];
  };
  /**
   * One pre-norm decoder layer on h [B·L, H]: h + attention + SwiGLU MLP. Consumes h and the
   * weights; cos/sin (broadcastable to [B, L, 1, hd]) are only borrowed.
   */
  const block = (h: JaxArray, w: LayerWeights, B: number, Lq: number, cos: JaxArray, sin: JaxArray, attend: Attend): JaxArray => {
    const [ln1, wq, wk, wv, wo, ln2, wg, wu, wd] = w;
    const x = rmsnorm(h.ref, ln1);
    const q = rope(linear(x.ref, wq).reshape([B, Lq, nH, hd]), cos.ref, sin.ref);
    const k = rope(linear(x.ref, wk).reshape([B, Lq, nKV, hd]), cos.ref, sin.ref);
    const v = linear(x, wv).reshape([B, Lq, nKV, hd]);
    h = h.add(linear(attend(q, k, v).reshape([B * Lq, nH * hd]), wo));
    const x2 = rmsnorm(h.ref, ln2);
    return h.add(linear(nn.silu(linear(x2.ref, wg)).mul(linear(x2, wu)), wd));
  };
  return { H, hd, nKV, rmsnorm, linear, block, ropeRows };
}

/** A trainer for `config` whose parameters start at `flat` (the layout of paramSpecs). */
export function createJaxLlamaTrainer(jax: Jax, config: LlamaConfig, flat: Float32Array, opts: JaxLlamaOptions): JaxLlamaTrainer {
  checkSupported(config);
  const { numpy: np, nn } = jax;
  const { device, B, T, lr, adamw } = opts;
  const c = config;
  const hd = headDim(c);
  const V = c.vocab_size;
  const L = c.num_hidden_layers;
  const N = B * T;

  const specs: ParamSpec[] = paramSpecs(c);
  const expected = 1 + L * LAYER_PARAMS.length + 1;
  if (specs.length !== expected) throw new Error(`jax-js peer: expected ${expected} parameter tensors, got ${specs.length}`);
  const decay = specs.map((s) => s.decay);

  const { rmsnorm, linear, block, ropeRows } = llamaOps(jax, c);
  const [cosFull, sinFull] = ropeRows(Array.from({ length: T }, (_, t) => t));

  /** Mean next-token cross-entropy over the batch. */
  const lossFn = (params: JaxArray[], tokens: JaxArray, targets: JaxArray, cos: JaxArray, sin: JaxArray): JaxArray => {
    let k = 0;
    const next = () => params[k++]!;
    const embed = next();
    let h = np.take(embed.ref, tokens.reshape([N]), 0); // [N, H]
    for (let l = 0; l < L; l++) {
      h = block(h, LAYER_PARAMS.map(next) as LayerWeights, B, T, cos, sin, (q, kk, v) => nn.dotProductAttention(q, kk, v, { isCausal: true }));
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

export interface JaxDecoderOptions {
  device: JaxModule.Device;
  /** Rows decoded together. */
  B: number;
  /** Prompt tokens per row (left-padded to it). */
  P: number;
  /** Cache slots per row: prompt and completion. */
  T: number;
}

/** One token per row and its log-probability under the model, read back to the host. */
export interface JaxDecodeStep {
  tokens: Int32Array<ArrayBuffer>;
  logp: Float32Array;
}

export interface JaxLlamaDecoder {
  /** The prefill of B prompts (each at most P tokens), and the first sampled token of each row. */
  prefill(prompts: readonly (readonly number[])[], seed: number): Promise<JaxDecodeStep>;
  /** One decode step: every row's latest token in, the next one sampled (every row runs to the end). */
  step(tokens: Int32Array<ArrayBuffer>, seed: number): Promise<JaxDecodeStep>;
  /** Frees every Array and the compiled functions; throws if a reference count went wrong. */
  dispose(): void;
}

/**
 * Cached generation in jax-js at its best as we know it: a jitted prefill that returns the
 * per-layer K/V caches [B, T, kvHeads, hd], and one jitted decode step, traced once and
 * replayed, that writes the new k and v into slot `pos` and attends the live slots. jax-js has
 * no in-place update (no scatter or dynamic_update_slice in its API), so the write is a
 * `where` over a one-hot slot mask: each step rewrites every layer's whole cache, the price a
 * functional array library pays for it. Sampling (temperature 1) and the token's
 * log-probability are computed inside the step; per step the host uploads the slot mask, the
 * attention mask and the rows' RoPE rows, and reads back tokens and log-probabilities.
 */
export function createJaxLlamaDecoder(jax: Jax, config: LlamaConfig, flat: Float32Array, opts: JaxDecoderOptions): JaxLlamaDecoder {
  checkSupported(config);
  const { numpy: np, nn } = jax;
  const { device, B, P, T } = opts;
  if (T <= P) throw new Error(`jax-js decoder: ${T} cache slots leave no room after a prompt of ${P}`);
  const c = config;
  const L = c.num_hidden_layers;
  const { H, hd, nKV, rmsnorm, linear, block, ropeRows } = llamaOps(jax, c);
  const specs = paramSpecs(c);

  const sample = (key: JaxArray, logits: JaxArray): JaxArray => {
    const logp = nn.logSoftmax(logits.ref, -1);
    const tok = jax.random.categorical(key, logits);
    const picked = np.takeAlongAxis(logp, tok.ref.reshape([B, 1]), 1).reshape([B]);
    return np.concatenate([tok.astype(np.float32), picked]);
  };

  const prefillFn = (params: JaxArray[], tokens: JaxArray, cos: JaxArray, sin: JaxArray, mask01: JaxArray, key: JaxArray): [JaxArray, JaxArray[], JaxArray[]] => {
    let i = 0;
    const next = () => params[i++]!;
    const embed = next();
    const mask = mask01.greater(0.5);
    let h = np.take(embed.ref, tokens.reshape([B * P]), 0);
    const Ks: JaxArray[] = [];
    const Vs: JaxArray[] = [];
    for (let l = 0; l < L; l++) {
      h = block(h, LAYER_PARAMS.map(next) as LayerWeights, B, P, cos, sin, (q, k, v) => {
        Ks.push(np.concatenate([k.ref, np.zeros([B, T - P, nKV, hd])], 1));
        Vs.push(np.concatenate([v.ref, np.zeros([B, T - P, nKV, hd])], 1));
        return nn.dotProductAttention(q, k, v, { mask: mask.ref });
      });
    }
    cos.dispose();
    sin.dispose();
    mask.dispose();
    const last = h.reshape([B, P, H]).slice([], P - 1);
    return [sample(key, linear(rmsnorm(last, next()), embed)), Ks, Vs];
  };

  const stepFn = (
    params: JaxArray[], Ks: JaxArray[], Vs: JaxArray[], tokens: JaxArray, cos: JaxArray, sin: JaxArray,
    slot01: JaxArray, mask01: JaxArray, key: JaxArray,
  ): [JaxArray, JaxArray[], JaxArray[]] => {
    let i = 0;
    const next = () => params[i++]!;
    const embed = next();
    const slot = slot01.greater(0.5);
    const mask = mask01.greater(0.5);
    let h = np.take(embed.ref, tokens, 0);
    const newK: JaxArray[] = [];
    const newV: JaxArray[] = [];
    for (let l = 0; l < L; l++) {
      h = block(h, LAYER_PARAMS.map(next) as LayerWeights, B, 1, cos, sin, (q, k, v) => {
        const K = np.where(slot.ref, k, Ks[l]!);
        const V = np.where(slot.ref, v, Vs[l]!);
        newK.push(K.ref);
        newV.push(V.ref);
        return nn.dotProductAttention(q, K, V, { mask: mask.ref });
      });
    }
    cos.dispose();
    sin.dispose();
    slot.dispose();
    mask.dispose();
    return [sample(key, linear(rmsnorm(h, next()), embed)), newK, newV];
  };

  const prefillJit = jax.jit(prefillFn);
  const stepJit = jax.jit(stepFn);
  const params: JaxArray[] = specs.map((s) => np.array(flat.slice(s.offset, s.offset + s.size), { shape: s.shape, dtype: np.float32, device }));
  let Ks: JaxArray[] = [];
  let Vs: JaxArray[] = [];
  let lengths: number[] = [];
  let decoded = 0;
  const f32 = (data: Float32Array<ArrayBuffer>, shape: number[]) => np.array(data, { shape, dtype: np.float32, device });

  const read = async (out: JaxArray): Promise<JaxDecodeStep> => {
    const data = (await out.data()) as Float32Array;
    return { tokens: Int32Array.from(data.subarray(0, B)), logp: Float32Array.from(data.subarray(B)) };
  };
  const release = () => {
    for (const a of [...Ks, ...Vs]) a.dispose();
    Ks = [];
    Vs = [];
  };

  return {
    async prefill(prompts, seed) {
      if (prompts.length !== B || prompts.some((p) => p.length === 0 || p.length > P)) throw new Error(`jax-js decoder: ${B} prompts of 1..${P} tokens expected`);
      release();
      lengths = prompts.map((p) => p.length);
      decoded = 0;
      const tokens = new Int32Array(B * P);
      const positions: number[] = [];
      // Query i of row b sees real keys j ≤ i; a padding query sees itself, so no row is all masked.
      const mask = new Float32Array(B * P * P);
      prompts.forEach((p, b) => {
        const pad = P - p.length;
        for (let t = 0; t < P; t++) {
          tokens[b * P + t] = t < pad ? 0 : p[t - pad]!;
          positions.push(Math.max(0, t - pad));
          for (let j = 0; j <= t; j++) if (j >= pad || j === t) mask[(b * P + t) * P + j] = 1;
        }
      });
      const [cos, sin] = ropeRows(positions);
      const [out, k, v] = prefillJit(
        params.map((x) => x.ref),
        np.array(tokens, { shape: [B, P], dtype: np.int32, device }),
        f32(cos, [B, P, 1, hd]),
        f32(sin, [B, P, 1, hd]),
        f32(mask, [B, 1, P, P]),
        jax.random.key(seed),
      ) as [JaxArray, JaxArray[], JaxArray[]];
      Ks = k;
      Vs = v;
      return read(out);
    },
    async step(tokens, seed) {
      const slot = P + decoded;
      if (slot >= T) throw new Error(`jax-js decoder: step ${decoded + 1} needs slot ${slot} of ${T}`);
      const [cos, sin] = ropeRows(lengths.map((n) => n + decoded));
      decoded++;
      const slotMask = new Float32Array(T);
      slotMask[slot] = 1;
      const mask = new Float32Array(B * T);
      lengths.forEach((n, b) => {
        for (let j = P - n; j <= slot; j++) mask[b * T + j] = 1;
      });
      const [out, k, v] = stepJit(
        params.map((x) => x.ref),
        Ks,
        Vs,
        np.array(tokens, { shape: [B], dtype: np.int32, device }),
        f32(cos, [B, 1, 1, hd]),
        f32(sin, [B, 1, 1, hd]),
        f32(slotMask, [1, T, 1, 1]),
        f32(mask, [B, 1, 1, T]),
        jax.random.key(seed),
      ) as [JaxArray, JaxArray[], JaxArray[]];
      Ks = k;
      Vs = v;
      return read(out);
    },
    dispose() {
      release();
      const bad = params.filter((a) => a.refCount !== 1).length;
      for (const a of params) a.dispose();
      prefillJit.dispose();
      stepJit.dispose();
      if (bad) throw new Error(`jax-js decoder: ${bad} parameters ended with a reference count other than 1 (leak or double free)`);
    },
  };
}
