/**
 * The bank leaves the browser in two forms: JSONL (each problem's original record with its
 * provenance, which re-imports as seeds) and a verl RL dataset in Parquet, so that a run
 * continues on verl's trainers with the exported Hugging Face weights. verl reads `prompt`
 * as chat messages, so the nested columns are written with Parquet's nested types
 * (list<struct<role, content>>, structs), not as JSON strings.
 */
import { parquetWriteBuffer } from 'hyparquet-writer';
import type { Problem } from '../data/problem';
import type { BankEntry, ProblemBank } from './bank';
import { DEFAULT_TEMPLATES, render, type Templates } from './templates';

/** One line per problem: its record as read (or written by the Challenger) and its provenance. */
export function bankToJsonl(bank: ProblemBank): string {
  return bank
    .all()
    .map((e) => JSON.stringify({ ...e.problem.raw, sage: { id: e.problem.id, source: e.problem.source, kind: e.problem.kind, ...e.provenance } }))
    .join('\n')
    .concat(bank.size ? '\n' : '');
}

/**
 * What verl's reward compares against: the answer or the tests as JSON (style 'rule'); a
 * question alone has none and needs a reward model (style 'model').
 */
function rewardModel(p: Problem): { style: string; ground_truth: string } {
  if (p.kind === 'code') return { style: 'rule', ground_truth: JSON.stringify(p.tests) };
  return p.answer === undefined ? { style: 'model', ground_truth: '' } : { style: 'rule', ground_truth: p.answer };
}

export interface VerlRow {
  data_source: string;
  prompt: { role: string; content: string }[];
  ability: string;
  reward_model: { style: string; ground_truth: string };
  extra_info: { split: string; index: bigint; id: string; origin: string; step: bigint; quality: number | null };
}

/** Where a row's problem came from: a bank entry's provenance, or the held-out split. */
interface RowSource {
  problem: Problem;
  provenance: { origin: BankEntry['provenance']['origin'] | 'held-out'; step: number; quality: number | null };
}

export function verlRows(entries: readonly RowSource[], split: string, templates: Templates = DEFAULT_TEMPLATES): VerlRow[] {
  return entries.map((e, i) => ({
    data_source: `sage-lab/${e.problem.source}`,
    prompt: [{ role: 'user', content: render(templates.solver, { problem: e.problem.statement }) }],
    ability: e.problem.kind,
    reward_model: rewardModel(e.problem),
    extra_info: {
      split,
      index: BigInt(i),
      id: e.problem.id,
      origin: e.provenance.origin,
      step: BigInt(e.provenance.step),
      quality: e.provenance.quality,
    },
  }));
}

const text = (name: string, repetition: 'REQUIRED' | 'OPTIONAL' = 'REQUIRED') =>
  ({ name, type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: repetition }) as const;

/** The explicit schema: what verl's datasets hold, with nesting Parquet understands. */
const VERL_SCHEMA = [
  { name: 'root', num_children: 5 },
  text('data_source'),
  { name: 'prompt', repetition_type: 'REQUIRED', converted_type: 'LIST', num_children: 1 },
  { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
  { name: 'element', repetition_type: 'REQUIRED', num_children: 2 },
  text('role'),
  text('content'),
  text('ability'),
  { name: 'reward_model', repetition_type: 'REQUIRED', num_children: 2 },
  text('style'),
  text('ground_truth'),
  { name: 'extra_info', repetition_type: 'REQUIRED', num_children: 6 },
  text('split'),
  { name: 'index', type: 'INT64', repetition_type: 'REQUIRED' },
  text('id'),
  text('origin'),
  { name: 'step', type: 'INT64', repetition_type: 'REQUIRED' },
  { name: 'quality', type: 'DOUBLE', repetition_type: 'OPTIONAL' },
] as const;

/** The bank as a verl RL dataset (Parquet bytes). */
export function bankToVerlParquet(bank: ProblemBank, split = 'train', templates?: Templates): Uint8Array {
  return verlParquet(verlRows(bank.all(), split, templates));
}

/** Held-out problems as verl's validation dataset (`data.val_files`), in the bank's columns. */
export function heldOutToVerlParquet(problems: readonly Problem[], templates?: Templates): Uint8Array {
  return verlParquet(verlRows(problems.map((problem) => ({ problem, provenance: { origin: 'held-out', step: 0, quality: null } })), 'test', templates));
}

function verlParquet(rows: VerlRow[]): Uint8Array {
  const column = <K extends keyof VerlRow>(name: K) => ({ name, data: rows.map((r) => r[name]) });
  const buffer = parquetWriteBuffer({
    columnData: [column('data_source'), column('prompt'), column('ability'), column('reward_model'), column('extra_info')],
    // The writer's own types are structural look-alikes of these literals.
    schema: VERL_SCHEMA as unknown as Parameters<typeof parquetWriteBuffer>[0]['schema'],
  });
  return new Uint8Array(buffer);
}
