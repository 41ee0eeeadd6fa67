import { readFileSync } from 'node:fs';
import { expect, expectSelfCheckPassed, openEngine, pixelsOf, test } from './lab';

const SEEDS = [
  '{"question": "What is 2+3?", "answer": "5"}',
  '{"question": "broken',
  '{"problem": "Name the first prime.", "solution": "2"}',
  '{"prompt": "only a prompt"}',
  '{"instruction": "Reverse abc.", "output": "cba"}',
].join('\n');

test('fine-tunes on dropped seeds in the engine worker, exports a checkpoint and imports it back', async ({ page }) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  // "Save to folder" picks a folder of the origin-private file system: the same handle type a
  // user's pick gives, written by the engine worker.
  await page.addInitScript(() => {
    (window as unknown as { showDirectoryPicker: () => Promise<FileSystemDirectoryHandle> }).showDirectoryPicker = async () =>
      (await navigator.storage.getDirectory()).getDirectoryHandle('picked', { create: true });
  });
  await openEngine(page);
  await expectSelfCheckPassed(page);

  // Bad lines are reported with their numbers and reasons; the good ones load.
  await page.getByTestId('seed-file').setInputFiles({ name: 'mine.jsonl', mimeType: 'application/jsonl', buffer: Buffer.from(SEEDS) });
  const summary = page.getByTestId('seed-summary');
  await expect(summary).toContainText('3 examples from mine.jsonl');
  await expect(summary).toContainText('2 lines skipped');
  await expect(page.getByTestId('seed-errors')).toContainText('line 2: not valid JSON');
  await expect(page.getByTestId('seed-errors')).toContainText('line 4: no response field');
  // Dropping a file on the zone reads it the same way.
  const dataTransfer = await page.evaluateHandle((text) => {
    const dt = new DataTransfer();
    dt.items.add(new File([text], 'dropped.jsonl', { type: 'application/jsonl' }));
    return dt;
  }, SEEDS);
  await page.getByTestId('seed-drop').dispatchEvent('drop', { dataTransfer });
  await expect(summary).toContainText('3 examples from dropped.jsonl');

  for (const [key, value] of [['steps', '6'], ['batchSize', '2'], ['seqLen', '32'], ['warmupSteps', '1']]) {
    await page.getByTestId(`sft-${key}`).fill(value!);
  }
  await page.getByTestId('sft-start').click();
  await expect(page.getByTestId('sft-status')).toHaveText('running');
  await expect(page.getByTestId('sft-progress')).toContainText(/step [1-6] · loss \d/);
  // The loss line (its colour) is drawn on the chart's canvas.
  await expect.poll(() => pixelsOf(page, 'sft-chart', '#34d399')).toBeGreaterThan(50);
  await expect(page.getByTestId('sft-status')).toHaveText('done');
  await expect(page.getByTestId('sft-progress')).toContainText('step 6');
  await expect(page.getByTestId('model-summary')).toContainText('tiny');
  await expect(page.getByTestId('model-summary')).toContainText('trained 6 steps');

  // Export: one zip of the Hugging Face folder.
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-zip').click()]);
  expect(download.suggestedFilename()).toBe('tiny-step6.zip');
  const zip = readFileSync(await download.path());
  await expect(page.getByTestId('exported')).toContainText('model.safetensors');

  // A bad checkpoint is refused with the reason; the held model stays.
  await page.getByTestId('model-import').setInputFiles({ name: 'config.json', mimeType: 'application/json', buffer: Buffer.from('{"model_type": ') });
  await expect(page.getByTestId('model-error')).toContainText('config.json');
  await expect(page.getByTestId('model-summary')).toContainText('trained 6 steps');

  // Importing the export brings back the trained model with its optimizer state.
  await page.getByTestId('model-import').setInputFiles({ name: 'run-a.zip', mimeType: 'application/zip', buffer: zip });
  await expect(page.getByTestId('model-summary')).toContainText('run-a');
  await expect(page.getByTestId('model-summary')).toContainText('trained 6 steps');
  await expect(page.getByTestId('model-error')).toHaveCount(0);

  // LoRA: a rank-4 adapter trains on the frozen model (its optimizer starts afresh), here on a base in f16; the export
  // holds the merged model with the adapter in adapter/, and the adapter saves alone.
  await page.getByTestId('lora-rank').fill('0');
  await expect(page.getByTestId('lora-error')).toContainText('LoRA rank must be an integer');
  await page.getByTestId('lora-rank').fill('4');
  await page.getByTestId('lora-alpha').fill('8');
  await page.getByTestId('lora-apply').click();
  await expect(page.getByTestId('lora-summary')).toContainText(/a LoRA adapter: r 4, alpha 8, on q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj — 0\.\d+ M parameters/);
  // The frozen base in f16 (half its memory): training and the export go on from there.
  // The box follows the engine's answer, which a busy machine gives later: click, then wait for the state the page shows.
  await page.getByTestId('lora-f16').click();
  await expect(page.getByTestId('lora-f16')).toBeChecked();
  await expect(page.getByTestId('lora-summary')).toContainText('the base frozen in f16');
  await expect(page.getByTestId('model-base-dtype')).toContainText('f16 on the GPU');
  await page.getByTestId('model-choice').screenshot({ path: 'test-results/panel-model-lora.png' });
  await page.getByTestId('seed-demo').click();
  await expect(summary).toContainText('148 examples from gsm8k-148.jsonl');
  await page.getByTestId('sft-steps').fill('2');
  await page.getByTestId('sft-start').click();
  await expect(page.getByTestId('sft-status')).toHaveText('done');
  await expect(page.getByTestId('model-summary')).toContainText('trained 2 steps');
  const [merged] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-zip').click()]);
  const mergedZip = readFileSync(await merged.path());
  for (const name of ['model.safetensors', 'optimizer.safetensors', 'adapter/adapter_config.json', 'adapter/adapter_model.safetensors']) {
    expect(mergedZip.includes(Buffer.from(name)), name).toBe(true);
  }
  // The folder export streams the weights from the GPU a tensor at a time: a complete safetensors file.
  await page.getByTestId('export-folder').click();
  await expect(page.getByTestId('exported')).toContainText(/files written to the chosen folder \(model\.safetensors, .*adapter\/adapter_model\.safetensors/);
  const written = await page.evaluate(async () => {
    const dir = await (await navigator.storage.getDirectory()).getDirectoryHandle('picked');
    const bytes = new Uint8Array(await (await (await dir.getFileHandle('model.safetensors')).getFile()).arrayBuffer());
    const headerLen = Number(new DataView(bytes.buffer).getBigUint64(0, true));
    const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + headerLen))) as Record<string, { data_offsets?: [number, number] }>;
    const end = Math.max(...Object.values(header).map((t) => t.data_offsets?.[1] ?? 0));
    return { size: bytes.length, dataEnd: 8 + headerLen + end, embed: 'model.embed_tokens.weight' in header };
  });
  expect(written.embed).toBe(true);
  expect(written.size).toBe(written.dataEnd);
  const [adapter] = await Promise.all([page.waitForEvent('download'), page.getByTestId('lora-export').click()]);
  expect(adapter.suggestedFilename()).toBe('run-a-step2-adapter.zip');
  await expect(page.getByTestId('exported')).toContainText('adapter_model.safetensors, adapter_config.json');
  await page.getByTestId('sft-chart').scrollIntoViewIfNeeded();
  await page.screenshot({ path: 'test-results/sft.png', fullPage: true });
  expect(errors).toEqual([]);
});
