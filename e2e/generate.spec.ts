import { expect, expectSelfCheckPassed, openEngine, test } from './lab';

/** Short answers the tiny preset memorises in a few dozen steps (as src/train/memorise.ts). */
const PAIRS = [
  ['Q: 2+3=', '5'],
  ['Q: capital of France?', 'Paris'],
  ['Q: reverse abc', 'cba'],
  ['Q: first prime?', '2'],
];

test('the Generate box streams completions of the held model; after fine-tuning it writes the answers', async ({ page }) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await openEngine(page);
  await expectSelfCheckPassed(page);
  await expect(page.getByTestId('gen-start')).toBeDisabled();

  // A fresh preset writes noise, streamed row by row; several samples run as one batch.
  await page.getByTestId('model-new').click();
  await expect(page.getByTestId('model-summary')).toContainText('tiny');
  await page.getByTestId('gen-samples').fill('3');
  await page.getByTestId('gen-maxNewTokens').fill('24');
  await page.getByTestId('gen-start').click();
  await expect(page.getByTestId('gen-status')).toHaveText('done');
  for (const i of [0, 1, 2]) await expect(page.getByTestId(`gen-finish-${i}`)).toContainText(/(length · 24|eos · \d+) tokens · mean log p -\d/);
  await expect(page.getByTestId('gen-stats')).toContainText(/\d+ tokens in [\d.]+ s/);

  // Fine-tune on the answers, then greedy generation gives them back and stops at EOS.
  const seeds = PAIRS.map(([question, answer]) => JSON.stringify({ question, answer })).join('\n');
  await page.getByTestId('seed-file').setInputFiles({ name: 'answers.jsonl', mimeType: 'application/jsonl', buffer: Buffer.from(seeds) });
  await expect(page.getByTestId('seed-summary')).toContainText('4 examples from answers.jsonl');
  for (const [key, value] of [['steps', '60'], ['batchSize', '4'], ['seqLen', '32'], ['lr', '0.003'], ['warmupSteps', '5'], ['seed', '7']]) {
    await page.getByTestId(`sft-${key}`).fill(value!);
  }
  await page.getByTestId('sft-start').click();
  await expect(page.getByTestId('sft-status')).toHaveText('done');
  await expect(page.getByTestId('model-summary')).toContainText('trained 60 steps');

  const answers = async (pairs: string[][]) => {
    for (const [question, answer] of pairs) {
      await page.getByTestId('gen-prompt').fill(question!);
      await page.getByTestId('gen-samples').fill('2');
      await page.getByTestId('gen-temperature').fill('0');
      await page.getByTestId('gen-start').click();
      await expect(page.getByTestId('gen-status')).toHaveText('done');
      for (const i of [0, 1]) {
        await expect(page.getByTestId(`gen-output-${i}`)).toHaveText(answer!);
        await expect(page.getByTestId(`gen-finish-${i}`)).toContainText(`eos · ${answer!.length + 1} tokens`);
      }
    }
  };
  await answers(PAIRS.slice(0, 2));
  // With the KV cache in f16 (half its memory, said on the model card) the memorised answers come back too.
  await page.getByTestId('kv-f16').click();
  await expect(page.getByTestId('kv-f16')).toBeChecked();
  await expect(page.getByTestId('model-memory')).toContainText(/KV cache \d+ MiB \(\d+ rows × \d+ positions, f16\)/);
  await answers(PAIRS.slice(2, 4));
  await page.getByTestId('gen-output-0').scrollIntoViewIfNeeded();
  await page.screenshot({ path: 'test-results/generate.png', fullPage: true });
  expect(errors).toEqual([]);
});
