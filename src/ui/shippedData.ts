/** Seed files the lab ships from the repository's `data/` (see data/README.md), by file name. */
import gsm8kSeeds from '../../data/seeds/gsm8k-148.jsonl?url';

export const SHIPPED_SEEDS: Readonly<Record<string, string>> = {
  'gsm8k-148.jsonl': gsm8kSeeds,
};
