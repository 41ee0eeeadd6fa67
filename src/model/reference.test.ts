import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { paramSpecs, type LlamaConfig } from './config';
import { rng as seeded } from '../util/random';
import { randomParams, refBackward, refForward, type RefBatch, type RefParams } from './reference';

const small = {
  vocab_size: 23,
  hidden_size: 16,
  intermediate_size: 24,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  max_position_embeddings: 64,
  rms_norm_eps: 1e-6,
  rope_theta: 10000,
  tie_word_embeddings: false,
  attention_bias: false,
} satisfies LlamaConfig;

type Padding = 'none' | 'right' | 'left';

/**
 * Random batch where row b is padded on `padding[b]`'s side by `pads[b]` tokens. Left-padded
 * rows get position ids cumsum(mask) − 1, as a generation-style batch would. Targets are the
 * next real token (−1 elsewhere, plus a random hole); weights are unequal and sum to ~1.
 */
function makeBatch(
  config: LlamaConfig,
  rand: () => number,
  B: number,
  T: number,
  padding: Padding[],
  pads: number[],
  opts: { targetOnPad?: boolean } = {},
): RefBatch {
  const N = B * T;
  const tokens = new Int32Array(N);
  const mask = new Uint8Array(N).fill(1);
  const positions = new Int32Array(N);
  const targets = new Int32Array(N).fill(-1);
  const weights = new Float64Array(N);
  for (let b = 0; b < B; b++) {
    const side = padding[b] ?? 'none';
    const np = side === 'none' ? 0 : (pads[b] ?? 0);
    let seen = 0;
    for (let t = 0; t < T; t++) {
      const n = b * T + t;
      tokens[n] = Math.floor(rand() * config.vocab_size);
      const padded = (side === 'right' && t >= T - np) || (side === 'left' && t < np);
      mask[n] = padded ? 0 : 1;
      seen += mask[n]!;
      positions[n] = side === 'left' ? seen - 1 : t;
    }
    for (let t = 0; t < T - 1; t++) {
      const n = b * T + t;
      if (mask[n] && mask[n + 1] && rand() > 0.15) targets[n] = tokens[n + 1]!;
    }
  }
  if (opts.targetOnPad) {
    // A padded position that still carries loss: for a left pad its attention sees nothing,
    // so only its residual path (embedding, norms, MLP, head) gets gradient.
    const n = mask.findIndex((m) => m === 0);
    targets[n] = 3;
  }
  let count = 0;
  for (let n = 0; n < N; n++) if (targets[n]! >= 0) count++;
  for (let n = 0; n < N; n++) if (targets[n]! >= 0) weights[n] = (0.5 + rand()) / count;
  return { B, T, tokens, mask, positions, targets, weights };
}

function cloneParams(p: RefParams): RefParams {
  return new Map([...p].map(([k, v]) => [k, v.slice()]));
}

interface FdCase {
  name: string;
  config: LlamaConfig;
  B: number;
  T: number;
  padding: Padding[];
  pads: number[];
  targetOnPad?: boolean;
  /** Leave batch.positions undefined to exercise the default 0..T-1. */
  defaultPositions?: boolean;
}

const fdCases: FdCase[] = [
  { name: 'GQA, untied, right padding, default positions', config: small, B: 2, T: 7, padding: ['none', 'right'], pads: [0, 3], defaultPositions: true },
  {
    name: 'MHA, tied, attention_bias, left padding with positions',
    config: { ...small, num_key_value_heads: 4, tie_word_embeddings: true, attention_bias: true },
    B: 2,
    T: 7,
    padding: ['left', 'none'],
    pads: [2, 0],
  },
  {
    name: 'GQA 4:1, tied, attention_bias, mixed padding, loss on a left pad',
    config: { ...small, num_key_value_heads: 1, tie_word_embeddings: true, attention_bias: true },
    B: 3,
    T: 5,
    padding: ['right', 'left', 'none'],
    pads: [1, 2, 0],
    targetOnPad: true,
  },
  {
    name: 'explicit head_dim ≠ hidden/heads, 3 layers, B=1, T=9',
    config: { ...small, hidden_size: 12, head_dim: 6, num_attention_heads: 4, num_key_value_heads: 2, num_hidden_layers: 3, rope_theta: 500 },
    B: 1,
    T: 9,
    padding: ['none'],
    pads: [0],
  },
];

describe('refBackward against central finite differences', () => {
  for (const c of fdCases) {
    it(c.name, () => {
      const rand = seeded(c.name.length * 7919 + c.T);
      const params = randomParams(c.config, rand, 0.35);
      const batch = makeBatch(c.config, rand, c.B, c.T, c.padding, c.pads, { targetOnPad: c.targetOnPad });
      if (c.defaultPositions) delete batch.positions;
      const { loss, grads } = refBackward(c.config, params, batch);
      expect(loss).toBeCloseTo(refForward(c.config, params, batch).loss, 14);

      const h = 1e-6;
      let worst = 0;
      for (const spec of paramSpecs(c.config)) {
        const g = grads.get(spec.name)!;
        expect(g.length).toBe(spec.size);
        let gmax = 0;
        for (const x of g) gmax = Math.max(gmax, Math.abs(x));
        expect(gmax, `${spec.name} has no gradient at all`).toBeGreaterThan(0);
        // Random elements, plus the largest one so every tensor is tested where it matters most.
        const picks = new Set<number>([g.findIndex((x) => Math.abs(x) === gmax)]);
        while (picks.size < Math.min(8, spec.size)) picks.add(Math.floor(rand() * spec.size));
        for (const i of picks) {
          const p = cloneParams(params);
          const w = p.get(spec.name)!;
          const w0 = w[i]!;
          w[i] = w0 + h;
          const up = refForward(c.config, p, batch).loss;
          w[i] = w0 - h;
          const down = refForward(c.config, p, batch).loss;
          const fd = (up - down) / (2 * h);
          const err = Math.abs(fd - g[i]!);
          // Round-off in (up − down) is ~1e-16·|loss|/h ≈ 1e-10 absolute.
          const tol = 1e-6 * Math.abs(fd) + 2e-9;
          worst = Math.max(worst, err / (Math.abs(fd) + 2e-3));
          expect(err, `${spec.name}[${i}]: analytic ${g[i]} vs finite difference ${fd}`).toBeLessThanOrEqual(tol);
        }
      }
      expect(worst).toBeLessThan(1e-6);
    });
  }

  it('gives padded keys, and queries that see no key, exactly no attention gradient', () => {
    // Right padding: nothing attends to the pads and they carry no loss, so their embedding
    // rows receive nothing. Tokens are chosen so the pad id appears nowhere else.
    const config = { ...small, tie_word_embeddings: false };
    const rand = seeded(5);
    const params = randomParams(config, rand);
    const batch = makeBatch(config, rand, 2, 6, ['right', 'left'], [2, 2]);
    const pad = config.vocab_size - 1;
    for (let n = 0; n < batch.tokens.length; n++) batch.tokens[n] = batch.mask![n] ? n % 5 : pad;
    for (let n = 0; n < batch.targets.length; n++) if (batch.targets[n]! >= 0) batch.targets[n] = (n * 3) % 5;
    const { grads } = refBackward(config, params, batch);
    const emb = grads.get('model.embed_tokens.weight')!;
    const H = config.hidden_size;
    expect([...emb.subarray(pad * H, (pad + 1) * H)].every((x) => x === 0)).toBe(true);
    // Changing a pad's token changes no real token's logits.
    const before = refForward(config, params, batch).logits;
    batch.tokens[batch.mask!.indexOf(0)] = 7;
    const after = refForward(config, params, batch).logits;
    const V = config.vocab_size;
    for (let n = 0; n < batch.tokens.length; n++) {
      if (!batch.mask![n]) continue;
      for (let v = 0; v < V; v++) expect(after[n * V + v]).toBe(before[n * V + v]);
    }
  });

  it('tokenLoss is the unweighted −log p(target), zero where ignored', () => {
    const rand = seeded(11);
    const params = randomParams(small, rand);
    const batch = makeBatch(small, rand, 2, 5, ['none', 'right'], [0, 2]);
    const { logits, loss, tokenLoss } = refForward(small, params, batch);
    const V = small.vocab_size;
    let total = 0;
    for (let n = 0; n < batch.tokens.length; n++) {
      const y = batch.targets[n]!;
      if (y < 0) {
        expect(tokenLoss[n]).toBe(0);
        continue;
      }
      let z = 0;
      for (let v = 0; v < V; v++) z += Math.exp(logits[n * V + v]!);
      expect(tokenLoss[n]).toBeCloseTo(Math.log(z) - logits[n * V + y]!, 12);
      total += batch.weights[n]! * tokenLoss[n]!;
    }
    expect(loss).toBeCloseTo(total, 14);
  });

  it('rejects missing parameters and out-of-range tokens', () => {
    const params = randomParams(small, seeded(1));
    const batch = makeBatch(small, seeded(2), 1, 4, ['none'], [0]);
    const missing = cloneParams(params);
    missing.delete('lm_head.weight');
    expect(() => refForward(small, missing, batch)).toThrow(/lm_head.weight/);
    batch.tokens[0] = small.vocab_size;
    expect(() => refForward(small, params, batch)).toThrow(/vocabulary/);
  });
});

interface Fixture {
  name: string;
  hf_class: string;
  padding: 'right' | 'left';
  config: LlamaConfig;
  B: number;
  T: number;
  tokens: number[];
  mask: number[];
  positions: number[];
  targets: number[];
  weights: number[];
  params: Record<string, number[]>;
  logits: number[];
  loss: number;
  grads: Record<string, number[]>;
}

function loadFixture(name: string): Fixture {
  return JSON.parse(readFileSync(new URL(`./fixtures/hf-${name}.json`, import.meta.url), 'utf8')) as Fixture;
}

/** Worst |a − b| relative to |b|, with a floor at 1e-3 of the tensor's largest magnitude so entries that are zero up to cancellation do not dominate. */
function relErr(a: ArrayLike<number>, b: ArrayLike<number>, include: (i: number) => boolean = () => true): number {
  let scale = 0;
  for (let i = 0; i < b.length; i++) if (include(i)) scale = Math.max(scale, Math.abs(b[i]!));
  let worst = 0;
  for (let i = 0; i < b.length; i++) {
    if (!include(i)) continue;
    worst = Math.max(worst, Math.abs(a[i]! - b[i]!) / Math.max(Math.abs(b[i]!), 1e-3 * scale, 1e-300));
  }
  return worst;
}

/*
 * Fixtures come from scripts/fixtures/make_reference_fixtures.py: real transformers
 * LlamaForCausalLM / Qwen2ForCausalLM in float64 with attn_implementation="eager" (the script
 * removes transformers' internal float32 casts in RMSNorm, RoPE and softmax, and checks that the
 * stock model agrees to float32 precision).
 *
 * Padding: transformers' eager attention adds finfo.min to masked scores. A query that can see at
 * least one real key gets exactly zero weight on the masked ones, as here — this covers every
 * right-padded position, whose causal window still holds the row's real tokens. A query that sees
 * no key at all (a left pad) has all scores equal to finfo.min, so transformers averages *every*
 * value in the row uniformly (future and padded tokens included); the reference outputs zeros.
 * Those positions carry no loss and are never attended to, so loss and gradients still agree
 * exactly; only their own logits differ, and they are left out of the logits comparison.
 */
describe('refForward/refBackward match Hugging Face transformers (float64)', () => {
  for (const name of ['llama-gqa', 'llama-tied-mha', 'qwen2', 'llama-gqa-leftpad', 'llama3-rope']) {
    it(name, () => {
      const f = loadFixture(name);
      const specs = paramSpecs(f.config);
      expect(Object.keys(f.params).sort()).toEqual(specs.map((s) => s.name).sort());
      const params: RefParams = new Map(Object.entries(f.params).map(([k, v]) => [k, Float64Array.from(v)]));
      const batch: RefBatch = {
        B: f.B,
        T: f.T,
        tokens: Int32Array.from(f.tokens),
        mask: Uint8Array.from(f.mask),
        positions: Int32Array.from(f.positions),
        targets: Int32Array.from(f.targets),
        weights: Float64Array.from(f.weights),
      };
      const V = f.config.vocab_size;
      const seesAKey = (n: number): boolean => {
        const start = n - (n % f.T);
        for (let j = start; j <= n; j++) if (f.mask[j]) return true;
        return false;
      };

      const fwd = refForward(f.config, params, batch);
      const comparable = (i: number) => seesAKey(Math.floor(i / V));
      expect(relErr(fwd.logits, f.logits, comparable)).toBeLessThan(1e-9);
      expect(Math.abs(fwd.loss - f.loss) / Math.abs(f.loss)).toBeLessThan(1e-8);
      if (f.padding === 'right') {
        // Every position, padded ones included, sees a real key.
        for (let n = 0; n < f.B * f.T; n++) expect(seesAKey(n)).toBe(true);
      } else {
        // The left pads really are where transformers differs (see above): uniform attention, not zeros.
        const left = [...Array(f.B * f.T).keys()].filter((n) => !seesAKey(n));
        expect(left.length).toBeGreaterThan(0);
        const diff = relErr(fwd.logits, f.logits, (i) => left.includes(Math.floor(i / V)));
        expect(diff).toBeGreaterThan(1e-6);
      }

      const bwd = refBackward(f.config, params, batch);
      expect(Math.abs(bwd.loss - f.loss) / Math.abs(f.loss)).toBeLessThan(1e-8);
      for (const spec of specs) {
        const err = relErr(bwd.grads.get(spec.name)!, f.grads[spec.name]!);
        expect(err, spec.name).toBeLessThan(1e-8);
      }
    });
  }
});
