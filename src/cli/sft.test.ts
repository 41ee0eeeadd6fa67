import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { importCheckpoint } from '../model/checkpoint';
import { PRESETS, paramSpecs } from '../model/config';
import { loraSize, loraSpecs } from '../model/lora';
import { initialParams } from '../model/transformer';
import { f32ToHalves, halvesToF32 } from '../util/half';
import { readCheckpointFolder } from './runFiles';
import { run as sft, sftCli } from './sft';
import { expectEveryOptionChecked, runCliInProcess, runCliProcess } from './testUtils';

describe('sft command line', () => {
  it('trains from a JSONL file, reports bad lines, and writes a checkpoint that loads', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sage-sft-'));
    const data = join(dir, 'seeds.jsonl');
    writeFileSync(
      data,
      ['{"question": "1+1?", "answer": "2"}', 'not json', '{"problem": "2+2?", "solution": "4"}', '{"prompt": "x"}'].join('\n'),
    );
    const out = join(dir, 'ckpt');
    const r = await runCliInProcess(sft, ['--data', data, '--steps', '3', '--batch', '2', '--seq', '16', '--log-every', '1', '--out', out]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/seeds\.jsonl:2: skipped: not valid JSON/);
    expect(r.stderr).toMatch(/seeds\.jsonl:4: skipped: no response field/);
    expect(r.stdout).toMatch(/2 examples/);
    expect(r.stdout).toMatch(/step +3 +loss \d/);
    const files = new Map(readdirSync(out).map((f) => [f, new Uint8Array(readFileSync(join(out, f)))]));
    const ckpt = importCheckpoint(files);
    expect(ckpt.config.hidden_size).toBe(128);
    expect(ckpt.optimizer?.step).toBe(3);

    // Resuming continues the optimizer's step count and moments.
    const out2 = join(dir, 'ckpt2');
    // ...here written in BF16, in shards of at most 1 MB with their index.
    const again = await runCliInProcess(sft, ['--data', data, '--from', out, '--steps', '2', '--batch', '2', '--seq', '16', '--log-every', '1', '--out', out2, '--dtype', 'bf16', '--max-shard-mb', '1']);
    expect(again.status, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/resuming AdamW at step 3/);
    expect(again.stdout).toMatch(/step +5 +loss/);
    const files2 = new Map(readdirSync(out2).map((f) => [f, new Uint8Array(readFileSync(join(out2, f)))]));
    expect([...files2.keys()]).toEqual(expect.arrayContaining(['model-00001-of-00003.safetensors', 'model.safetensors.index.json']));
    expect(JSON.parse(new TextDecoder().decode(files2.get('config.json'))).torch_dtype).toBe('bfloat16');
    expect(importCheckpoint(files2).optimizer?.step).toBe(5);
  });

  it('trains a LoRA adapter on the frozen model: merged weights, the PEFT adapter in adapter/, its moments; --from continues it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sage-sft-lora-'));
    const data = join(dir, 'seeds.jsonl');
    writeFileSync(data, ['{"question": "1+1?", "answer": "2"}', '{"question": "2+2?", "answer": "4"}'].join('\n'));
    const out = join(dir, 'ckpt');
    const args = ['--data', data, '--batch', '2', '--seq', '16', '--log-every', '1', '--lr', '1e-2', '--warmup', '0'];
    const r = await runCliInProcess(sft, [...args, '--steps', '3', '--lora-rank', '4', '--lora-targets', 'q_proj,v_proj,down_proj', '--out', out]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/LoRA r 4 alpha 8 on q_proj,v_proj,down_proj \(0\.\d+M trainable, base frozen in f32\)/);
    const files = readCheckpointFolder(out);
    expect([...files.keys()]).toEqual(expect.arrayContaining(['model.safetensors', 'optimizer.safetensors', 'adapter/adapter_config.json', 'adapter/adapter_model.safetensors']));
    const ckpt = importCheckpoint(files);
    const lora = { rank: 4, alpha: 8, targets: ['q_proj', 'v_proj', 'down_proj'] as const };
    expect(ckpt.lora?.config).toEqual({ ...lora, targets: [...lora.targets] });
    expect(ckpt.optimizer?.m.length).toBe(loraSize(ckpt.config, ckpt.lora!.config));
    // The base stayed as initialised: every weight without an adapter is bit-identical to it,
    // and the adapter moved (B is no longer zero).
    const init = initialParams(PRESETS.tiny, 0);
    const flat = ckpt.weights.flat();
    for (const s of paramSpecs(ckpt.config)) {
      if (/(q_proj|v_proj|down_proj)\.weight$/.test(s.name)) continue;
      expect(flat.subarray(s.offset, s.offset + s.size), s.name).toEqual(init.subarray(s.offset, s.offset + s.size));
    }
    const B = loraSpecs(ckpt.config, ckpt.lora!.config).find((s) => s.name.endsWith('lora_B.weight'))!;
    expect(ckpt.lora!.flat.subarray(B.offset, B.offset + B.size).some((v) => v !== 0)).toBe(true);

    // Resumed with the base in f16: unmerged into halves, the adapter trains on; the weights
    // without an adapter come back as the initial ones rounded to halves.
    const again = await runCliInProcess(sft, [...args, '--steps', '2', '--from', out, '--out', join(dir, 'ckpt2'), '--base-dtype', 'f16']);
    expect(again.status, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/LoRA r 4 alpha 8 .*base frozen in f16/);
    expect(again.stdout).toMatch(/resuming AdamW at step 3/);
    const ckpt2 = importCheckpoint(readCheckpointFolder(join(dir, 'ckpt2')));
    expect(ckpt2.optimizer?.step).toBe(5);
    const halves = halvesToF32(f32ToHalves(init));
    const flat2 = ckpt2.weights.flat();
    for (const s of paramSpecs(ckpt2.config)) {
      if (/(q_proj|v_proj|down_proj)\.weight$/.test(s.name)) continue;
      expect(flat2.subarray(s.offset, s.offset + s.size), s.name).toEqual(halves.subarray(s.offset, s.offset + s.size));
    }
    const frozen = await runCliInProcess(sft, [...args, '--steps', '1', '--base-dtype', 'f16']);
    expect(frozen.status).toBe(2);
    expect(frozen.stderr).toBe('sft: --base-dtype f16 freezes the base: train an adapter with --lora-rank or --adapter');
    const twice = await runCliInProcess(sft, [...args, '--steps', '1', '--from', out, '--lora-rank', '8']);
    expect(twice.status).toBe(2);
    expect(twice.stderr).toMatch(/^sft: the checkpoint already trains a LoRA adapter/m);
  });

  it('fails with a clear message when no example is usable', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sage-sft-'));
    const data = join(dir, 'bad.jsonl');
    writeFileSync(data, 'nope\n[1]\n');
    const r = runCliProcess('src/cli/sft.ts', ['--data', data]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^sft: no usable examples in .*bad\.jsonl$/m);
  });

  it('refuses a bad value of every option before any GPU work', () => {
    expectEveryOptionChecked(sftCli);
  });

  it('prints one line naming a bad option, with exit code 2, and lists the options with --help', () => {
    const bad = runCliProcess('src/cli/sft.ts', ['--data', 'data/seeds/gsm8k-148.jsonl', '--steps', '0']);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toBe('sft: --steps must be an integer ≥ 1 (got "0")');
    const help = runCliProcess('src/cli/sft.ts', ['--help']);
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/--steps N +optimizer steps \(default 200\)/);
    expect(help.stdout).toMatch(/--preset TEXT .*one of tiny, small, base; default tiny/);
  });

  it('without a GPU adapter, says what Dawn lacks and the command that installs it', () => {
    const r = runCliProcess('src/cli/sft.ts', ['--data', 'data/seeds/gsm8k-148.jsonl', '--steps', '1'], {
      ...process.env,
      // Both names: the loader reads VK_DRIVER_FILES first, which a GPU machine may set for its driver.
      VK_ICD_FILENAMES: '/nonexistent/vk_icd.json',
      VK_DRIVER_FILES: '/nonexistent/vk_icd.json',
      VK_ADD_DRIVER_FILES: '',
      SAGE_GPU: '',
    });
    expect(r.status).toBe(1);
    expect(r.stderr.split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^sft: WebGPU is not available in this node \(dawn\) \(no adapter was found\)\. Node runs WebGPU through Dawn/);
    expect(r.stderr).toContain('apt-get install -y chromium libvulkan1');
  });
});
