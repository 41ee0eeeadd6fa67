/** Seed files the lab ships from the repository's `data/` (see data/README.md), by file name, and their held-out splits. */
import { parseLabRecord, rolesTaught, type LabRecord } from '../model/checkpoint';
import curriculumSeeds from '../../data/seeds/curriculum-500.jsonl?url';
import gsm8kSeeds from '../../data/seeds/gsm8k-148.jsonl?url';
import humanevalSeeds from '../../data/seeds/humaneval-87.jsonl?url';
import mathSeeds from '../../data/seeds/math-156.jsonl?url';
import mbppplusSeeds from '../../data/seeds/mbppplus-109.jsonl?url';
import sageSeeds from '../../data/seeds/sage-500.jsonl?url';
import curriculumValidation from '../../data/validation/curriculum-1000.jsonl?url';
import gsm8kValidation from '../../data/validation/gsm8k-test-1319.jsonl?url';
import humanevalValidation from '../../data/validation/humaneval-77.jsonl?url';
import mathValidation from '../../data/validation/math500-344.jsonl?url';
import mbppplusValidation from '../../data/validation/mbppplus-269.jsonl?url';

export const SHIPPED_SEEDS: Readonly<Record<string, string>> = {
  'curriculum-500.jsonl': curriculumSeeds,
  'gsm8k-148.jsonl': gsm8kSeeds,
  'math-156.jsonl': mathSeeds,
  'humaneval-87.jsonl': humanevalSeeds,
  'mbppplus-109.jsonl': mbppplusSeeds,
  'sage-500.jsonl': sageSeeds,
};

/** Each shipped seed file's built-in validation split: no problem in common with its seeds. */
export const SHIPPED_VALIDATION: Readonly<Record<string, { name: string; urls: string[] }>> = {
  'curriculum-500.jsonl': { name: 'curriculum-1000.jsonl', urls: [curriculumValidation] },
  'gsm8k-148.jsonl': { name: 'gsm8k-test-1319.jsonl', urls: [gsm8kValidation] },
  'math-156.jsonl': { name: 'math500-344.jsonl', urls: [mathValidation] },
  'humaneval-87.jsonl': { name: 'humaneval-77.jsonl', urls: [humanevalValidation] },
  'mbppplus-109.jsonl': { name: 'mbppplus-269.jsonl', urls: [mbppplusValidation] },
  'sage-500.jsonl': { name: 'the four held-out splits', urls: [mathValidation, gsm8kValidation, humanevalValidation, mbppplusValidation] },
};

/** Checkpoints the lab ships (data/models/<name>/, see its README), each file by name → URL. */
const modelFiles = import.meta.glob<string>('../../data/models/*/*.{json,safetensors}', { query: '?url', import: 'default', eager: true });
export const SHIPPED_MODELS: Readonly<Record<string, Record<string, string>>> = Object.entries(modelFiles).reduce<Record<string, Record<string, string>>>((acc, [path, url]) => {
  const [model, file] = path.split('/').slice(-2) as [string, string];
  (acc[model] ??= {})[file] = url;
  return acc;
}, {});

/** Per shipped checkpoint, its LAB_RECORD as an import reads it. */
const modelRecords = import.meta.glob<string>('../../data/models/*/sage_lab.json', { query: '?raw', import: 'default', eager: true });
const SHIPPED_RECORDS: Readonly<Record<string, LabRecord>> = Object.fromEntries(
  Object.keys(SHIPPED_MODELS).map((name) => {
    const text = Object.entries(modelRecords).find(([path]) => path.split('/').slice(-2)[0] === name)?.[1];
    return [name, text === undefined ? {} : parseLabRecord(text)];
  }),
);
/** Per shipped checkpoint, whether its roles were taught. */
export const SHIPPED_ROLES_TAUGHT: Readonly<Record<string, boolean>> = Object.fromEntries(Object.entries(SHIPPED_RECORDS).map(([name, r]) => [name, rolesTaught(r)]));
/** Per shipped checkpoint, the run settings its record says it is meant for (null: none). */
export const SHIPPED_LAB_SETTINGS: Readonly<Record<string, Record<string, unknown> | null>> = Object.fromEntries(Object.entries(SHIPPED_RECORDS).map(([name, r]) => [name, r.settings ?? null]));

/** A shipped checkpoint as the files a user would pick. */
export async function shippedModelFiles(name: string): Promise<File[]> {
  const files = SHIPPED_MODELS[name];
  if (!files) throw new Error(`${name} is not a shipped checkpoint`);
  return Promise.all(
    Object.entries(files).map(async ([file, url]) => {
      const r = await fetch(url);
      if (!r.ok) throw new Error(`${name}/${file}: HTTP ${r.status}`);
      return new File([await r.blob()], file);
    }),
  );
}
