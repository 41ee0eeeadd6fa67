/** Seed files the lab ships from the repository's `data/` (see data/README.md), by file name. */
import curriculumSeeds from '../../data/seeds/curriculum-500.jsonl?url';
import gsm8kSeeds from '../../data/seeds/gsm8k-148.jsonl?url';

export const SHIPPED_SEEDS: Readonly<Record<string, string>> = {
  'curriculum-500.jsonl': curriculumSeeds,
  'gsm8k-148.jsonl': gsm8kSeeds,
};
