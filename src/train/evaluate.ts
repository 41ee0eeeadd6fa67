/**
 * Greedy exact-match accuracy of a model on math problems, per difficulty level: the
 * warm-up curve of the curriculum. Decoding recomputes the whole (short) sequence with the
 * training forward pass at every new token, in the trainer's B × T shape so that no
 * activation buffers are reallocated between training and evaluation.
 */
import type { MathProblem } from '../data/problem';
import type { Tokenizer } from '../model/tokenizer';
import type { Transformer } from '../model/transformer';

export interface DecodeShape {
  /** Rows per forward pass. */
  batchSize: number;
  /** Tokens per row: prompt (its end, when longer) and answer together. */
  seqLen: number;
  /** New tokens at most per answer. */
  maxNewTokens: number;
}

/** The greedy continuation of each prompt after [BOS], up to EOS or `maxNewTokens`. */
export async function greedyDecode(model: Transformer, tokenizer: Tokenizer, prompts: string[], shape: DecodeShape): Promise<string[]> {
  const { batchSize: B, seqLen: T, maxNewTokens } = shape;
  if (maxNewTokens >= T) throw new Error(`maxNewTokens ${maxNewTokens} leaves no room for a prompt in ${T} tokens`);
  const V = model.config.vocab_size;
  const { bos, eos, pad } = tokenizer.specials;
  const out: string[] = [];
  for (let start = 0; start < prompts.length; start += B) {
    const group = prompts.slice(start, start + B);
    // Like training (encodePair), a prompt too long keeps its end.
    const rows = group.map((p) => [bos, ...tokenizer.encode(p).slice(-(T - maxNewTokens - 1))]);
    const answers: number[][] = group.map(() => []);
    const done = group.map(() => false);
    for (let step = 0; step < maxNewTokens && done.includes(false); step++) {
      const tokens = new Array<number>(B * T).fill(pad);
      const mask = new Array<number>(B * T).fill(0);
      rows.forEach((ids, b) => ids.forEach((id, t) => ((tokens[b * T + t] = id), (mask[b * T + t] = 1))));
      const logits = await model.rt.read(model.forward({ B, T, tokens, mask }));
      rows.forEach((ids, b) => {
        if (done[b]) return;
        const at = (b * T + ids.length - 1) * V;
        let best = 0;
        for (let v = 1; v < V; v++) if (logits[at + v]! > logits[at + best]!) best = v;
        if (best === eos) done[b] = true;
        else {
          answers[b]!.push(best);
          ids.push(best);
          if (ids.length >= T) done[b] = true;
        }
      });
    }
    out.push(...answers.map((ids) => tokenizer.decode(ids)));
  }
  return out;
}

export interface LevelAccuracy {
  level: number;
  correct: number;
  total: number;
}

/** Exact greedy accuracy per level (problems without a level count as level 0). */
export async function accuracyByLevel(model: Transformer, tokenizer: Tokenizer, problems: MathProblem[], shape: DecodeShape): Promise<LevelAccuracy[]> {
  const answers = await greedyDecode(model, tokenizer, problems.map((p) => p.statement), shape);
  const byLevel = new Map<number, LevelAccuracy>();
  problems.forEach((p, i) => {
    const level = p.level ?? 0;
    const acc = byLevel.get(level) ?? { level, correct: 0, total: 0 };
    acc.total++;
    if (answers[i]!.trim() === p.answer.trim()) acc.correct++;
    byLevel.set(level, acc);
  });
  return [...byLevel.values()].sort((a, b) => a.level - b.level);
}

/** The first `perLevel` problems of each level, in file order: the same subset at every evaluation. */
export function firstPerLevel(problems: MathProblem[], perLevel: number): MathProblem[] {
  const taken = new Map<number, number>();
  return problems.filter((p) => {
    const n = taken.get(p.level ?? 0) ?? 0;
    taken.set(p.level ?? 0, n + 1);
    return n < perLevel;
  });
}
