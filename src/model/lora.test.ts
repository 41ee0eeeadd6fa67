/**
 * LoRA on the GPU against the float64 reference: the adapted model is the reference model with
 * W + scale·B·A in place of each adapted W, so its logits are the reference's, and the adapter's
 * gradients follow from the reference's weight gradient dW: dB = scale·dW·Aᵀ, dA = scale·Bᵀ·dW.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { assertClose, freshSeed, rng, testRuntime } from '../gpu/testUtils';
import { importCheckpoint } from './checkpoint';
import { paramSpecs, type LlamaConfig } from './config';
import { Decoder } from './decoder';
import {
  importPeftAdapter, initialLora, loraName, loraScale, loraSize, loraSpecs, peftAdapterFiles, readPeftConfig,
  targetGeometry, targetWeightName, type LoraConfig, type LoraTarget,
} from './lora';
import { randomParams, refBackward, type RefParams } from './reference';
import { parseSafetensors } from './safetensors';
import { f32ToHalves, halvesToF32 } from '../util/half';
import { fromFlat, gpuBatch, makeBatch, readMerged, roundToF32, SMALL_CONFIG as BASE, toFlat } from './testUtils';
import { Transformer } from './transformer';
import { adapterGrads, merged, randomAdapter } from './loraTestUtils';

const CASES: [string, LlamaConfig, LoraConfig, number, number, 'none' | 'left' | 'right'][] = [
  ['every projection, GQA, untied, right padding', BASE, { rank: 4, alpha: 8, targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] }, 2, 7, 'right'],
  [
    'v, q and up (unordered), rsLoRA, tied, q/k/v biases, left padding',
    { ...BASE, tie_word_embeddings: true, attention_bias: true, head_dim: 12 },
    { rank: 3, alpha: 5, targets: ['v_proj', 'q_proj', 'up_proj'], rslora: true },
    3, 9, 'left',
  ],
];

describe('LoRA vs the float64 reference', () => {
  for (const [name, config, lora, B, T, padding] of CASES) {
    it(`${name}: logits, loss, adapter gradients, merge`, async () => {
      const seed = freshSeed();
      const r = rng(seed);
      const what = `${name} (seed ${seed})`;
      const base = roundToF32(randomParams(config, r, 0.3));
      const flat = randomAdapter(config, lora, r);
      const batch = makeBatch(config, B, T, padding, r);
      const effective = merged(config, base, lora, flat);
      const ref = refBackward(config, effective, batch);

      const rt = await testRuntime();
      const model = Transformer.fromFlat(rt, config, toFlat(config, base));
      model.enableLora(lora, flat);
      assertClose(`${what}: logits`, await rt.read(model.forward(gpuBatch(batch))), ref.logits, config.vocab_size, 1e-4);
      model.zeroGrad();
      const { loss } = model.forwardLoss(gpuBatch(batch));
      model.backward();
      const total = (await rt.read(loss)).reduce((a, b) => a + b, 0);
      expect(Math.abs(total - ref.loss) / Math.abs(ref.loss)).toBeLessThan(1e-5);
      // Only the adapter trains: its gradients are the whole gradient buffer.
      expect(model.trainable.params.size).toBe(loraSize(config, lora));
      expect(model.grads.size).toBe(loraSize(config, lora));
      const expected = adapterGrads(config, lora, flat, ref.grads);
      for (const s of loraSpecs(config, lora)) {
        assertClose(`${what}: grad ${s.name}`, await rt.read(model.grad(s.name)), expected.get(s.name)!, s.shape[1]!, 1e-3);
      }

      // The merge is W + scale·B·A, and subtracting it again gives the base back.
      const mergedFlat = await readMerged(model);
      assertClose(`${what}: merged weights`, mergedFlat, toFlat(config, effective), config.hidden_size, 1e-6);
      assertClose(`${what}: base untouched`, await model.readParams(), toFlat(config, base), config.hidden_size, 0);
      const resumed = Transformer.fromFlat(rt, config, mergedFlat);
      resumed.enableLora(lora, flat, { merged: true });
      assertClose(`${what}: unmerged base`, await resumed.readParams(), toFlat(config, base), config.hidden_size, 1e-6);
      resumed.destroy();
      model.destroy();
    });
  }

  // With fused prologues the adapters' x·Aᵀ read the norm and the SwiGLU through the matmul too.
  it.each([false, true])('generation with an adapter equals generation with the adapter merged in (prefill and cached decode; fused prologues: %s)', async (fusedPrologues) => {
    const seed = freshSeed();
    const r = rng(seed);
    const config = { ...BASE, attention_bias: true };
    const lora: LoraConfig = { rank: 4, alpha: 4, targets: ['k_proj', 'o_proj', 'gate_proj', 'down_proj'] };
    const base = roundToF32(randomParams(config, r, 0.3));
    const flat = randomAdapter(config, lora, r);
    const rt = await testRuntime({ fusedPrologues });
    const adapted = Transformer.fromFlat(rt, config, toFlat(config, base));
    adapted.enableLora(lora, flat);
    const plain = Transformer.fromFlat(rt, config, toFlat(config, merged(config, base, lora, flat)));
    const prompts = [[1, 2, 3], [4, 5, 6, 7, 8], [9]];
    const run = async (m: Transformer) => {
      const d = new Decoder(m, prompts.length, 12);
      const first = await rt.read(d.prefill(prompts));
      const second = await rt.read(d.step([0, 2], [10, 11]));
      d.destroy();
      return [first, second] as const;
    };
    const [a, b] = [await run(adapted), await run(plain)];
    assertClose(`prefill (seed ${seed})`, a[0], b[0], config.vocab_size, 1e-4);
    assertClose(`decode step (seed ${seed})`, a[1], b[1], config.vocab_size, 1e-4);
    adapted.destroy();
    plain.destroy();
  });

  const ALL_TARGETS: LoraTarget[] = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];
  it.each([
    ['f32', ALL_TARGETS],
    ['f16', ALL_TARGETS],
    // Fused blocks with some of their projections adapted: the stacked B's zeros leave the others.
    ['f16', ['q_proj', 'v_proj', 'up_proj', 'down_proj']],
  ] as const)(
    'inference with the adapter merged (%s base, %j): a decode step records the base\'s dispatches, apart and merged give the logits of the weights each computes with, and an update is merged before the next forward',
    async (dtype, targets) => {
      const seed = freshSeed();
      const r = rng(seed);
      const config = { ...BASE, attention_bias: true };
      const lora: LoraConfig = { rank: 4, alpha: 8, targets: [...targets] };
      const rt = await testRuntime();
      const flatBase = toFlat(config, roundToF32(randomParams(config, r, 0.3)));
      const plain = Transformer.fromFlat(rt, config, flatBase);
      const model = Transformer.fromFlat(rt, config, flatBase);
      await Promise.all([plain.setBaseDtype(dtype), model.setBaseDtype(dtype)]);
      // The weights the GPU holds: an f16 base is the f32 one rounded to half.
      const held = dtype === 'f32' ? flatBase : halvesToF32(f32ToHalves(flatBase));
      const heldParams = fromFlat(config, held);
      let adapter = randomAdapter(config, lora, r);
      model.enableLora(lora, adapter);
      const prompts = [[1, 2, 3], [4, 5, 6, 7, 8], [9]];
      // A run traces its shapes before its first step (tuneRun): the apart path's copies may be made there, where nothing is written.
      rt.trace(() => {
        model.mergeAdapterForInference = false;
        const d = new Decoder(model, 1, 4);
        d.prefill([[1, 2]]);
        d.destroy();
      });
      /** Prefill and one decode step: both logits and the step's dispatches. */
      const run = async (m: Transformer, merge: boolean | null) => {
        m.mergeAdapterForInference = merge;
        const d = new Decoder(m, prompts.length, 12);
        const first = await rt.read(d.prefill(prompts));
        const before = rt.counters.dispatches;
        const step = d.step([0, 2], [10, 11]);
        const dispatches = rt.counters.dispatches - before;
        const second = await rt.read(step);
        d.destroy();
        return { logits: [first, second], dispatches };
      };
      /**
       * Each path against the plain model it equals: apart computes W·x + scale·B·(A·x) in f32, so
       * W + scale·B·A held in f32; merged holds W + scale·B·A rounded to the base's dtype once, so
       * that model with its base in the same dtype (an f16 merge is not the apart path: rounding a
       * merged weight to half moves it up to 2^-11 of itself, and the logits with it). The
       * reference sums in f32 as the GPU does; where a GPU fuses or reorders them, a weight within
       * an f32 ulp of a half midpoint rounds the other way (about 2^-12 of them): 1e-3 allows it,
       * ten times the worst of 60 prefills and steps merged in float64 instead.
       */
      const compare = async (what: string) => {
        const exact = Transformer.fromFlat(rt, config, toFlat(config, merged(config, heldParams, lora, adapter, Math.fround)));
        const exactApart = await run(exact, null);
        await exact.setBaseDtype(dtype);
        const exactMerged = await run(exact, null);
        exact.destroy();
        const apart = await run(model, false);
        const mergedRun = await run(model, true);
        for (const [path, got, ref] of [['apart', apart, exactApart], ['merged', mergedRun, exactMerged]] as const) {
          const tol = path === 'merged' && dtype === 'f16' ? 1e-3 : 1e-5;
          assertClose(`${what}, ${path}: prefill (seed ${seed})`, got.logits[0]!, ref.logits[0]!, config.vocab_size, tol);
          assertClose(`${what}, ${path}: decode step (seed ${seed})`, got.logits[1]!, ref.logits[1]!, config.vocab_size, tol);
        }
        return { apart, merged: mergedRun };
      };
      const first = await compare('adapter');
      const base = await run(plain, null);
      expect(first.merged.dispatches).toBe(base.dispatches);
      // Apart: per layer, one matmul (x·Aᵀ) for each block with an adapted projection (q|k|v, o, gate|up, down), whose base adds the rest as it stores.
      const blocks = new Set(targets.map((t) => targetGeometry(config, t).block)).size;
      expect(first.apart.dispatches - base.dispatches).toBe(blocks * config.num_hidden_layers);
      // By default an f32 base merges, an f16 one keeps the adapter apart.
      expect((await run(model, null)).dispatches).toBe(dtype === 'f32' ? first.merged.dispatches : first.apart.dispatches);
      // An optimizer step writes the adapter (here new random weights): the merged copy follows.
      adapter = randomAdapter(config, lora, r);
      rt.write(model.paramsForUpdate(), adapter);
      const updated = await compare('after an update');
      const moved = updated.merged.logits[1]!.some((x, i) => Math.abs(x - first.merged.logits[1]![i]!) > 1e-3);
      expect(moved, `seed ${seed}: the update changed nothing`).toBe(true);
      plain.destroy();
      model.destroy();
    },
  );

  it('a fresh adapter starts at the base model: B = 0, A within ±1/√in', () => {
    const lora: LoraConfig = { rank: 8, alpha: 16, targets: ['q_proj', 'down_proj'] };
    const flat = initialLora(BASE, lora, 3);
    for (const s of loraSpecs(BASE, lora)) {
      const data = flat.subarray(s.offset, s.offset + s.size);
      if (s.name.endsWith('lora_B.weight')) expect(data.every((v) => v === 0)).toBe(true);
      else {
        const bound = 1 / Math.sqrt(s.shape[1]!);
        expect(data.every((v) => Math.abs(v) <= bound)).toBe(true);
        expect(new Set(data).size).toBeGreaterThan(s.size / 2);
      }
    }
  });
});

describe('PEFT adapter folders', () => {
  const lora: LoraConfig = { rank: 4, alpha: 8, targets: ['q_proj', 'v_proj', 'down_proj'] };

  it('round-trips an adapter through adapter_model.safetensors and adapter_config.json in PEFT layout', () => {
    const flat = randomAdapter(BASE, lora, rng(freshSeed()));
    const files = peftAdapterFiles(BASE, lora, flat, 'my-base');
    const cfg = JSON.parse(new TextDecoder().decode(files.get('adapter_config.json')!)) as Record<string, unknown>;
    expect(cfg).toMatchObject({ peft_type: 'LORA', r: 4, lora_alpha: 8, target_modules: ['q_proj', 'v_proj', 'down_proj'], task_type: 'CAUSAL_LM', base_model_name_or_path: 'my-base', bias: 'none' });
    const back = importPeftAdapter(BASE, files);
    expect(back.lora).toEqual(lora);
    expect(back.flat).toEqual(flat);
  });

  it('refuses what it cannot compute, naming the field or tensor', () => {
    const files = peftAdapterFiles(BASE, lora, initialLora(BASE, lora, 1), 'b');
    const withConfig = (patch: Record<string, unknown>) => {
      const cfg = { ...(JSON.parse(new TextDecoder().decode(files.get('adapter_config.json')!)) as object), ...patch };
      return new Map([...files, ['adapter_config.json', new TextEncoder().encode(JSON.stringify(cfg))]]);
    };
    expect(() => importPeftAdapter(BASE, withConfig({ use_dora: true }))).toThrow(/use_dora/);
    expect(() => importPeftAdapter(BASE, withConfig({ rank_pattern: { q_proj: 8 } }))).toThrow(/rank_pattern/);
    expect(() => importPeftAdapter(BASE, withConfig({ peft_type: 'IA3' }))).toThrow(/peft_type "IA3"/);
    expect(() => importPeftAdapter(BASE, withConfig({ target_modules: ['q_proj', 'embed_tokens'] }))).toThrow(/unknown LoRA target "embed_tokens"/);
    expect(() => importPeftAdapter(BASE, withConfig({ r: 8 }))).toThrow(/has shape \[4, 32\] but the base model and r imply \[8, 32\]/);
    expect(() => importPeftAdapter(BASE, withConfig({ target_modules: ['q_proj', 'v_proj', 'down_proj', 'up_proj'] }))).toThrow(/up_proj\.lora_A\.weight" is missing/);
    expect(() => importPeftAdapter({ ...BASE, num_hidden_layers: 1 }, files)).toThrow(/unexpected tensor ".*layers\.1\./);
    expect(() => importPeftAdapter(BASE, new Map([['adapter_model.safetensors', files.get('adapter_model.safetensors')!]]))).toThrow(/adapter_config.json is missing/);
    expect(readPeftConfig(JSON.stringify({ peft_type: 'LORA', r: 2, lora_alpha: 4, target_modules: 'all-linear' })).targets).toHaveLength(7);
  });

  it('base weight names of every target exist in the base model', () => {
    const names = new Set(paramSpecs(BASE).map((s) => s.name));
    for (const t of ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as const) {
      expect(names.has(targetWeightName(BASE, 1, t))).toBe(true);
    }
  });
});

describe("PEFT's own files (fixtures/peft-tiny, written by scripts/fixtures/make_peft_fixture.py)", () => {
  const dir = new URL('./fixtures/peft-tiny/', import.meta.url);
  const folder = (sub: string) => new Map(readdirSync(new URL(sub, dir)).map((f) => [f, new Uint8Array(readFileSync(new URL(`${sub}${f}`, dir)))]));
  const expected = JSON.parse(readFileSync(new URL('expected.json', dir), 'utf8')) as {
    B: number; T: number; tokens: number[]; logits: number[]; merged: Record<string, number[]>;
  };

  it('an adapter PEFT saved imports onto its base: logits equal PeftModel, merged weights equal merge_and_unload', async () => {
    const base = importCheckpoint(folder('base/'));
    const adapterFiles = folder('adapter/');
    const { lora, flat } = importPeftAdapter(base.config, adapterFiles);
    expect(lora).toEqual({ rank: 4, alpha: 6, targets: ['q_proj', 'v_proj', 'up_proj', 'down_proj'] });
    const rt = await testRuntime();
    const model = Transformer.fromFlat(rt, base.config, base.weights.flat());
    model.enableLora(lora, flat);
    const logits = await rt.read(model.forward({ B: expected.B, T: expected.T, tokens: expected.tokens }));
    assertClose('logits vs PeftModel', logits, expected.logits, base.config.vocab_size, 1e-4);
    const mergedFlat = await readMerged(model);
    for (const s of paramSpecs(base.config)) {
      const want = expected.merged[s.name];
      if (want) assertClose(`merged ${s.name}`, mergedFlat.subarray(s.offset, s.offset + s.size), want, s.shape[1]!, 1e-6);
    }
    model.destroy();

    // What this project writes for the same adapter has PEFT's tensor names, shapes and dtype.
    const ours = parseSafetensors(peftAdapterFiles(base.config, lora, flat, 'base').get('adapter_model.safetensors')!).tensors;
    const theirs = parseSafetensors(adapterFiles.get('adapter_model.safetensors')!).tensors;
    expect([...ours.keys()].sort()).toEqual([...theirs.keys()].sort());
    for (const [name, t] of theirs) {
      expect(ours.get(name)!.shape, name).toEqual(t.shape);
      expect(ours.get(name)!.dtype, name).toBe(t.dtype);
      expect(ours.get(name)!.data, name).toEqual(t.data);
    }
  });
});
