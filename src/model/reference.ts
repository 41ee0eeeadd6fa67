/**
 * Float64 CPU reference of the Llama-family decoder (Llama, Qwen2), forward and hand-derived
 * backward. It is the ground truth the GPU kernels are tested against, so it favours plain loops
 * that mirror the math over speed: use it on toy sizes only.
 *
 * Semantics follow Hugging Face LlamaForCausalLM / Qwen2ForCausalLM (checked against fixtures
 * from transformers in src/model/fixtures), with one deliberate difference: a query that can see
 * no key (a left-padding position) outputs zeros here, where transformers' eager attention
 * spreads it uniformly over every key of the row (future and padded ones too). As long as such
 * positions carry no loss (target −1, as padding should), losses and gradients agree exactly and
 * only their own logits differ.
 */
import { headDim, paramSpecs, ropeInvFreq, type LlamaConfig } from './config';

export type RefParams = Map<string, Float64Array>; // HF name -> row-major data, shapes as in paramSpecs

export interface RefBatch {
  B: number;
  T: number;
  tokens: Int32Array; // [B*T]
  /** Key padding mask [B*T]: 1 = real token, 0 = padding. Default all ones. */
  mask?: Uint8Array;
  /** RoPE position ids [B*T]; default t (0..T-1) for every row. Left-padded batches pass cumsum(mask)-1. */
  positions?: Int32Array;
  /** Next-token targets [B*T]; -1 = ignored. */
  targets: Int32Array;
  /** Per-token loss weights [B*T] (0 where ignored). */
  weights: Float64Array;
}

export interface RefForward {
  logits: Float64Array /* [B*T*V] */;
  loss: number;
  tokenLoss: Float64Array /* [B*T] -log p(target), 0 where target = -1 */;
}

interface Dims {
  B: number;
  T: number;
  N: number;
  H: number;
  V: number;
  I: number;
  nH: number;
  nKV: number;
  hd: number;
  qDim: number;
  kvDim: number;
  /** Query heads per kv head. */
  group: number;
  eps: number;
}

interface LayerCache {
  x: Float64Array; // layer input [N, H]
  r1: Float64Array; // 1 / rms of x [N]
  xn: Float64Array; // input_layernorm output [N, H]
  q: Float64Array; // after RoPE [N, qDim]
  k: Float64Array; // after RoPE [N, kvDim]
  v: Float64Array; // [N, kvDim]
  p: Float64Array; // attention probabilities [B, nH, T, T], 0 where not allowed
  ao: Float64Array; // attention output before o_proj [N, qDim]
  h: Float64Array; // after the attention residual [N, H]
  r2: Float64Array;
  hn: Float64Array; // post_attention_layernorm output [N, H]
  g: Float64Array; // gate_proj [N, I]
  u: Float64Array; // up_proj [N, I]
  a: Float64Array; // silu(g) * u [N, I]
}

interface Tape {
  dims: Dims;
  mask: Uint8Array;
  cos: Float64Array; // [N, hd/2]
  sin: Float64Array;
  layers: LayerCache[];
  xL: Float64Array; // input of the final norm [N, H]
  rf: Float64Array;
  xf: Float64Array; // final norm output [N, H]
  logits: Float64Array;
  loss: number;
  tokenLoss: Float64Array;
  /** d loss / d logits. */
  dlogits: Float64Array;
}

function dimsOf(config: LlamaConfig, batch: RefBatch): Dims {
  const hd = headDim(config);
  const nH = config.num_attention_heads;
  const nKV = config.num_key_value_heads;
  return {
    B: batch.B,
    T: batch.T,
    N: batch.B * batch.T,
    H: config.hidden_size,
    V: config.vocab_size,
    I: config.intermediate_size,
    nH,
    nKV,
    hd,
    qDim: nH * hd,
    kvDim: nKV * hd,
    group: nH / nKV,
    eps: config.rms_norm_eps,
  };
}

function checkParams(config: LlamaConfig, params: RefParams): void {
  for (const spec of paramSpecs(config)) {
    const p = params.get(spec.name);
    if (!p) throw new Error(`missing parameter ${spec.name}`);
    if (p.length !== spec.size) throw new Error(`parameter ${spec.name} has ${p.length} elements, expected ${spec.size}`);
  }
}

function param(params: RefParams, name: string): Float64Array {
  const p = params.get(name);
  if (!p) throw new Error(`missing parameter ${name}`);
  return p;
}

function checkBatch(d: Dims, batch: RefBatch): void {
  const { N, V } = d;
  const lengths: [string, { length: number } | undefined][] = [
    ['tokens', batch.tokens],
    ['mask', batch.mask],
    ['positions', batch.positions],
    ['targets', batch.targets],
    ['weights', batch.weights],
  ];
  for (const [name, arr] of lengths) {
    if (arr && arr.length !== N) throw new Error(`batch.${name} has ${arr.length} entries, expected B*T = ${N}`);
  }
  for (let n = 0; n < N; n++) {
    const tok = batch.tokens[n]!;
    if (tok < 0 || tok >= V) throw new Error(`token ${tok} at ${n} is outside the vocabulary`);
    const y = batch.targets[n]!;
    if (y < -1 || y >= V) throw new Error(`target ${y} at ${n} is outside the vocabulary`);
  }
}

/** y[n, m] = Σ_k x[n, k] W[m, k] + b[m] (W is [M, K], as nn.Linear stores it). */
function linear(x: Float64Array, W: Float64Array, b: Float64Array | null, N: number, K: number, M: number): Float64Array {
  const y = new Float64Array(N * M);
  for (let n = 0; n < N; n++) {
    const xo = n * K;
    for (let m = 0; m < M; m++) {
      const wo = m * K;
      let s = b ? b[m]! : 0;
      for (let k = 0; k < K; k++) s += x[xo + k]! * W[wo + k]!;
      y[n * M + m] = s;
    }
  }
  return y;
}

/** Accumulates the gradients of `linear`: dx += dy·W, dW += dyᵀ·x, db += Σ_n dy. */
function linearBackward(
  dy: Float64Array,
  x: Float64Array,
  W: Float64Array,
  dx: Float64Array,
  dW: Float64Array,
  db: Float64Array | null,
  N: number,
  K: number,
  M: number,
): void {
  for (let n = 0; n < N; n++) {
    const xo = n * K;
    for (let m = 0; m < M; m++) {
      const g = dy[n * M + m]!;
      if (g === 0) continue;
      const wo = m * K;
      for (let k = 0; k < K; k++) {
        dx[xo + k] = dx[xo + k]! + g * W[wo + k]!;
        dW[wo + k] = dW[wo + k]! + g * x[xo + k]!;
      }
      if (db) db[m] = db[m]! + g;
    }
  }
}

/** y = x / sqrt(mean(x²) + eps) * w; returns y and the per-row 1/rms. */
function rmsNorm(x: Float64Array, w: Float64Array, N: number, H: number, eps: number): { y: Float64Array; r: Float64Array } {
  const y = new Float64Array(N * H);
  const r = new Float64Array(N);
  for (let n = 0; n < N; n++) {
    const o = n * H;
    let ss = 0;
    for (let i = 0; i < H; i++) ss += x[o + i]! * x[o + i]!;
    const rn = 1 / Math.sqrt(ss / H + eps);
    r[n] = rn;
    for (let i = 0; i < H; i++) y[o + i] = x[o + i]! * rn * w[i]!;
  }
  return { y, r };
}

/**
 * With y_i = x_i r w_i and r = (mean(x²) + eps)^(-1/2):
 * dx_i = r w_i dy_i − x_i r³/H · Σ_j dy_j w_j x_j, and dw_i = Σ_n dy_i x_i r.
 */
function rmsNormBackward(
  dy: Float64Array,
  x: Float64Array,
  r: Float64Array,
  w: Float64Array,
  dx: Float64Array,
  dw: Float64Array,
  N: number,
  H: number,
): void {
  for (let n = 0; n < N; n++) {
    const o = n * H;
    const rn = r[n]!;
    let dot = 0;
    for (let i = 0; i < H; i++) {
      dot += dy[o + i]! * w[i]! * x[o + i]!;
      dw[i] = dw[i]! + dy[o + i]! * x[o + i]! * rn;
    }
    const c = (rn * rn * rn * dot) / H;
    for (let i = 0; i < H; i++) dx[o + i] = dx[o + i]! + rn * w[i]! * dy[o + i]! - x[o + i]! * c;
  }
}

/** cos/sin of pos · inv_freq[i], inv_freq as transformers computes it (scaling included). */
function ropeTables(config: LlamaConfig, d: Dims, positions: Int32Array): { cos: Float64Array; sin: Float64Array } {
  const half = d.hd / 2;
  const invFreq = ropeInvFreq(config);
  const cos = new Float64Array(d.N * half);
  const sin = new Float64Array(d.N * half);
  for (let n = 0; n < d.N; n++) {
    for (let i = 0; i < half; i++) {
      const angle = positions[n]! * invFreq[i]!;
      cos[n * half + i] = Math.cos(angle);
      sin[n * half + i] = Math.sin(angle);
    }
  }
  return { cos, sin };
}

/**
 * Rotates every head of x [N, heads*hd] in place, HF rotate_half layout: pairs (i, i + hd/2).
 * `inverse` applies the transposed rotation, which is the backward pass.
 */
function rope(x: Float64Array, heads: number, d: Dims, cos: Float64Array, sin: Float64Array, inverse: boolean): void {
  const half = d.hd / 2;
  const width = heads * d.hd;
  for (let n = 0; n < d.N; n++) {
    for (let h = 0; h < heads; h++) {
      const o = n * width + h * d.hd;
      for (let i = 0; i < half; i++) {
        const c = cos[n * half + i]!;
        const s = inverse ? -sin[n * half + i]! : sin[n * half + i]!;
        const a = x[o + i]!;
        const b = x[o + i + half]!;
        x[o + i] = a * c - b * s;
        x[o + i + half] = b * c + a * s;
      }
    }
  }
}

function attention(
  d: Dims,
  mask: Uint8Array,
  q: Float64Array,
  k: Float64Array,
  v: Float64Array,
): { p: Float64Array; ao: Float64Array } {
  const { B, T, nH, hd, qDim, kvDim, group } = d;
  const scale = Math.pow(hd, -0.5);
  const p = new Float64Array(B * nH * T * T);
  const ao = new Float64Array(d.N * qDim);
  const scores = new Float64Array(T);
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < nH; h++) {
      const g = Math.floor(h / group);
      for (let i = 0; i < T; i++) {
        const qo = (b * T + i) * qDim + h * hd;
        let max = -Infinity;
        for (let j = 0; j <= i; j++) {
          if (!mask[b * T + j]) continue;
          const ko = (b * T + j) * kvDim + g * hd;
          let s = 0;
          for (let e = 0; e < hd; e++) s += q[qo + e]! * k[ko + e]!;
          s *= scale;
          scores[j] = s;
          if (s > max) max = s;
        }
        // No visible key: the row stays all zeros, output and gradient alike.
        if (max === -Infinity) continue;
        const po = ((b * nH + h) * T + i) * T;
        let sum = 0;
        for (let j = 0; j <= i; j++) {
          if (!mask[b * T + j]) continue;
          const e = Math.exp(scores[j]! - max);
          p[po + j] = e;
          sum += e;
        }
        for (let j = 0; j <= i; j++) {
          const pj = p[po + j]! / sum;
          p[po + j] = pj;
          if (pj === 0) continue;
          const vo = (b * T + j) * kvDim + g * hd;
          for (let e = 0; e < hd; e++) ao[qo + e] = ao[qo + e]! + pj * v[vo + e]!;
        }
      }
    }
  }
  return { p, ao };
}

/** Softmax-attention backward: dS_j = P_j (dP_j − Σ_k P_k dP_k), dP_j = dO·v_j. Accumulates dq, dk, dv. */
function attentionBackward(
  d: Dims,
  mask: Uint8Array,
  dao: Float64Array,
  c: LayerCache,
  dq: Float64Array,
  dk: Float64Array,
  dv: Float64Array,
): void {
  const { B, T, nH, hd, qDim, kvDim, group } = d;
  const scale = Math.pow(hd, -0.5);
  const dp = new Float64Array(T);
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < nH; h++) {
      const g = Math.floor(h / group);
      for (let i = 0; i < T; i++) {
        const qo = (b * T + i) * qDim + h * hd;
        const po = ((b * nH + h) * T + i) * T;
        let dot = 0;
        for (let j = 0; j <= i; j++) {
          const pj = c.p[po + j]!;
          if (pj === 0 || !mask[b * T + j]) continue;
          const vo = (b * T + j) * kvDim + g * hd;
          let s = 0;
          for (let e = 0; e < hd; e++) {
            s += dao[qo + e]! * c.v[vo + e]!;
            dv[vo + e] = dv[vo + e]! + pj * dao[qo + e]!;
          }
          dp[j] = s;
          dot += pj * s;
        }
        for (let j = 0; j <= i; j++) {
          const pj = c.p[po + j]!;
          if (pj === 0 || !mask[b * T + j]) continue;
          const ds = pj * (dp[j]! - dot) * scale;
          const ko = (b * T + j) * kvDim + g * hd;
          for (let e = 0; e < hd; e++) {
            dq[qo + e] = dq[qo + e]! + ds * c.k[ko + e]!;
            dk[ko + e] = dk[ko + e]! + ds * c.q[qo + e]!;
          }
        }
      }
    }
  }
}

function silu(x: number): number {
  return x / (1 + Math.exp(-x));
}

function run(config: LlamaConfig, params: RefParams, batch: RefBatch): Tape {
  checkParams(config, params);
  const d = dimsOf(config, batch);
  checkBatch(d, batch);
  const { T, N, H, V, I, nH, nKV, qDim, kvDim, eps } = d;
  const mask = batch.mask ?? new Uint8Array(N).fill(1);
  let positions = batch.positions;
  if (!positions) {
    positions = new Int32Array(N);
    for (let n = 0; n < N; n++) positions[n] = n % T;
  }
  const { cos, sin } = ropeTables(config, d, positions);

  const emb = param(params, 'model.embed_tokens.weight');
  let x = new Float64Array(N * H);
  for (let n = 0; n < N; n++) x.set(emb.subarray(batch.tokens[n]! * H, (batch.tokens[n]! + 1) * H), n * H);

  const layers: LayerCache[] = [];
  for (let l = 0; l < config.num_hidden_layers; l++) {
    const pre = `model.layers.${l}`;
    const bias = (name: string) => (config.attention_bias ? param(params, `${pre}.self_attn.${name}.bias`) : null);
    const { y: xn, r: r1 } = rmsNorm(x, param(params, `${pre}.input_layernorm.weight`), N, H, eps);
    const q = linear(xn, param(params, `${pre}.self_attn.q_proj.weight`), bias('q_proj'), N, H, qDim);
    const k = linear(xn, param(params, `${pre}.self_attn.k_proj.weight`), bias('k_proj'), N, H, kvDim);
    const v = linear(xn, param(params, `${pre}.self_attn.v_proj.weight`), bias('v_proj'), N, H, kvDim);
    rope(q, nH, d, cos, sin, false);
    rope(k, nKV, d, cos, sin, false);
    const { p, ao } = attention(d, mask, q, k, v);
    const o = linear(ao, param(params, `${pre}.self_attn.o_proj.weight`), null, N, qDim, H);
    const h = new Float64Array(N * H);
    for (let i = 0; i < N * H; i++) h[i] = x[i]! + o[i]!;
    const { y: hn, r: r2 } = rmsNorm(h, param(params, `${pre}.post_attention_layernorm.weight`), N, H, eps);
    const g = linear(hn, param(params, `${pre}.mlp.gate_proj.weight`), null, N, H, I);
    const u = linear(hn, param(params, `${pre}.mlp.up_proj.weight`), null, N, H, I);
    const a = new Float64Array(N * I);
    for (let i = 0; i < N * I; i++) a[i] = silu(g[i]!) * u[i]!;
    const m = linear(a, param(params, `${pre}.mlp.down_proj.weight`), null, N, I, H);
    const next = new Float64Array(N * H);
    for (let i = 0; i < N * H; i++) next[i] = h[i]! + m[i]!;
    layers.push({ x, r1, xn, q, k, v, p, ao, h, r2, hn, g, u, a });
    x = next;
  }

  const { y: xf, r: rf } = rmsNorm(x, param(params, 'model.norm.weight'), N, H, eps);
  const head = config.tie_word_embeddings ? emb : param(params, 'lm_head.weight');
  const logits = linear(xf, head, null, N, H, V);

  let loss = 0;
  const tokenLoss = new Float64Array(N);
  const dlogits = new Float64Array(N * V);
  for (let n = 0; n < N; n++) {
    const y = batch.targets[n]!;
    if (y < 0) continue;
    const o = n * V;
    let max = -Infinity;
    for (let c = 0; c < V; c++) max = Math.max(max, logits[o + c]!);
    let sum = 0;
    for (let c = 0; c < V; c++) sum += Math.exp(logits[o + c]! - max);
    const lse = max + Math.log(sum);
    const nll = lse - logits[o + y]!;
    tokenLoss[n] = nll;
    const w = batch.weights[n]!;
    loss += w * nll;
    for (let c = 0; c < V; c++) dlogits[o + c] = w * Math.exp(logits[o + c]! - lse);
    dlogits[o + y] = dlogits[o + y]! - w;
  }
  return { dims: d, mask, cos, sin, layers, xL: x, rf, xf, logits, loss, tokenLoss, dlogits };
}

export function refForward(config: LlamaConfig, params: RefParams, batch: RefBatch): RefForward {
  const t = run(config, params, batch);
  return { logits: t.logits, loss: t.loss, tokenLoss: t.tokenLoss };
}

export function refBackward(
  config: LlamaConfig,
  params: RefParams,
  batch: RefBatch,
): { loss: number; grads: RefParams; logits: Float64Array } {
  const t = run(config, params, batch);
  const d = t.dims;
  const { N, H, V, I, nH, nKV, qDim, kvDim } = d;
  const grads: RefParams = new Map();
  for (const spec of paramSpecs(config)) grads.set(spec.name, new Float64Array(spec.size));
  const grad = (name: string) => grads.get(name)!;

  // Tied: the LM head gradient lands directly in the embedding, next to the lookup's scatter-add.
  const headName = config.tie_word_embeddings ? 'model.embed_tokens.weight' : 'lm_head.weight';
  const dxf = new Float64Array(N * H);
  linearBackward(t.dlogits, t.xf, param(params, headName), dxf, grad(headName), null, N, H, V);

  let dx = new Float64Array(N * H);
  rmsNormBackward(dxf, t.xL, t.rf, param(params, 'model.norm.weight'), dx, grad('model.norm.weight'), N, H);

  for (let l = config.num_hidden_layers - 1; l >= 0; l--) {
    const pre = `model.layers.${l}`;
    const c = t.layers[l]!;
    const w = (name: string) => param(params, `${pre}.${name}.weight`);
    const gw = (name: string) => grad(`${pre}.${name}.weight`);
    const gb = (name: string) => (config.attention_bias ? grad(`${pre}.self_attn.${name}.bias`) : null);

    // MLP branch; dx is d loss / d(layer output) and also flows straight into dh.
    const dh = dx.slice();
    const da = new Float64Array(N * I);
    linearBackward(dx, c.a, w('mlp.down_proj'), da, gw('mlp.down_proj'), null, N, I, H);
    const dg = new Float64Array(N * I);
    const du = new Float64Array(N * I);
    for (let i = 0; i < N * I; i++) {
      const g = c.g[i]!;
      const sg = 1 / (1 + Math.exp(-g));
      du[i] = da[i]! * g * sg;
      dg[i] = da[i]! * c.u[i]! * sg * (1 + g * (1 - sg));
    }
    const dhn = new Float64Array(N * H);
    linearBackward(dg, c.hn, w('mlp.gate_proj'), dhn, gw('mlp.gate_proj'), null, N, H, I);
    linearBackward(du, c.hn, w('mlp.up_proj'), dhn, gw('mlp.up_proj'), null, N, H, I);
    rmsNormBackward(dhn, c.h, c.r2, w('post_attention_layernorm'), dh, gw('post_attention_layernorm'), N, H);

    // Attention branch.
    const dxl = dh.slice();
    const dao = new Float64Array(N * qDim);
    linearBackward(dh, c.ao, w('self_attn.o_proj'), dao, gw('self_attn.o_proj'), null, N, qDim, H);
    const dq = new Float64Array(N * qDim);
    const dk = new Float64Array(N * kvDim);
    const dv = new Float64Array(N * kvDim);
    attentionBackward(d, t.mask, dao, c, dq, dk, dv);
    rope(dq, nH, d, t.cos, t.sin, true);
    rope(dk, nKV, d, t.cos, t.sin, true);
    const dxn = new Float64Array(N * H);
    linearBackward(dq, c.xn, w('self_attn.q_proj'), dxn, gw('self_attn.q_proj'), gb('q_proj'), N, H, qDim);
    linearBackward(dk, c.xn, w('self_attn.k_proj'), dxn, gw('self_attn.k_proj'), gb('k_proj'), N, H, kvDim);
    linearBackward(dv, c.xn, w('self_attn.v_proj'), dxn, gw('self_attn.v_proj'), gb('v_proj'), N, H, kvDim);
    rmsNormBackward(dxn, c.x, c.r1, w('input_layernorm'), dxl, gw('input_layernorm'), N, H);
    dx = dxl;
  }

  const demb = grad('model.embed_tokens.weight');
  for (let n = 0; n < N; n++) {
    const o = batch.tokens[n]! * H;
    for (let i = 0; i < H; i++) demb[o + i] = demb[o + i]! + dx[n * H + i]!;
  }
  return { loss: t.loss, grads, logits: t.logits };
}

/**
 * Norm weights 1 ± 0.1 (near their trained values, so no layer is switched off), everything else
 * uniform in ±scale.
 */
export function randomParams(config: LlamaConfig, random: () => number, scale = 0.2): RefParams {
  const params: RefParams = new Map();
  for (const spec of paramSpecs(config)) {
    const data = new Float64Array(spec.size);
    const isNorm = spec.name.endsWith('norm.weight');
    for (let i = 0; i < spec.size; i++) data[i] = isNorm ? 1 + 0.2 * (random() - 0.5) : (2 * random() - 1) * scale;
    params.set(spec.name, data);
  }
  return params;
}
