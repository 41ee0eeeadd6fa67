import { expect, openEngine, test } from './lab';

test('the lab loads the demo curriculum by default, counts problems per format and reads a layout through a field mapping', async ({ page }) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await openEngine(page);
  const summary = page.getByTestId('seed-summary');
  await expect(summary).toContainText('500 examples from curriculum-500.jsonl');
  await expect(page.getByTestId('seed-formats')).toContainText('as problems: 500 curriculum');

  const odd = ['{"q_text": "Twice 4?", "gold": 8}', '{"q_text": "Half of 8?", "gold": [4]}', '{"q_text": "Twice 4?", "gold": 8}', '{"q_text": "Nothing"}'].join('\n');
  await page.getByTestId('seed-file').setInputFiles({ name: 'odd.jsonl', mimeType: 'application/jsonl', buffer: Buffer.from(odd) });
  await expect(summary).toContainText('0 examples from odd.jsonl');
  await expect(page.getByTestId('seed-formats')).toContainText('no problems');
  await page.getByTestId('seed-fields').fill('question=q_text,answer=gold');
  await page.getByTestId('seed-remap').click();
  await expect(summary).toContainText('2 examples from odd.jsonl');
  await expect(page.getByTestId('seed-formats')).toContainText('2 mapped · 1 duplicates loaded once · 1 lines not problems · mapping question=q_text,answer=gold');
  await expect(page.getByTestId('seed-errors')).toContainText('line 4: no "gold" field');

  // A file that is not text is refused as a whole, with the reason.
  await page.getByTestId('seed-file').setInputFiles({ name: 'x.zip', mimeType: 'application/zip', buffer: Buffer.from([0x50, 0x4b, 0x03, 0x04, 0, 0, 0, 0]) });
  await expect(page.getByText('x.zip is a zip archive, not a text file')).toBeVisible();
  await page.getByTestId('seed-demo').click();
  await expect(summary).toContainText('148 examples from gsm8k-148.jsonl');
  await expect(page.getByTestId('seed-formats')).toContainText('148 gsm8k');
  expect(errors).toEqual([]);
});

test('a file read as a corpus holds documents, trained with the loss on every token; read as pairs again, it is seeds', async ({ page }) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await openEngine(page);
  await expect(page.getByTestId('seed-summary')).toContainText('500 examples from curriculum-500.jsonl');
  await page.getByTestId('seed-read-as').selectOption('lines');
  // The loaded seed file is re-read as documents: a JSONL file without "text" fields holds none.
  await expect(page.getByText('curriculum-500.jsonl: no documents (line 1: no "text" field')).toBeVisible();
  const notes = ['3+4=7', 'Twelve minus five is seven.', '', '6*7=42'].join('\n');
  await page.getByTestId('seed-file').setInputFiles({ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from(notes) });
  const corpus = page.getByTestId('corpus-summary');
  await expect(corpus).toContainText('3 documents from notes.txt (text, one a line, 38 characters): trained with the loss on every token');
  await expect(page.getByTestId('seed-summary')).toHaveCount(0);
  await page.getByTestId('seed-read-as').selectOption('paragraphs');
  await expect(corpus).toContainText('2 documents from notes.txt (text, paragraphs');
  await expect(page.getByTestId('sft-start')).toBeEnabled();
  await page.getByTestId('seed-read-as').selectOption('pairs');
  await expect(page.getByTestId('seed-summary')).toContainText('0 examples from notes.txt');
  await expect(corpus).toHaveCount(0);
  expect(errors).toEqual([]);
});
