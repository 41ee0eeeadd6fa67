/**
 * A run's records as files, one layout wherever they are kept: config.json, metrics.jsonl,
 * transcripts.jsonl, bank-events.jsonl (append-only), state.json, and checkpoints as Hugging
 * Face folders under their tag (best/, last/, warmup/). The CLI writes them to a folder as they
 * happen; the lab's engine keeps them in memory and hands them out as one export, which either
 * one resumes from.
 */
import type { Problem } from '../data/problem';
import type { BankEvent } from './bank';
import type { Transcript } from './loop';
import type { ValidationOutcomes } from './validation';
import type { MetricsRecord, RunState, RunStore } from './run';
import { errorText } from '../util/errorText';

export const RUN_FILES = {
  config: 'config.json',
  metrics: 'metrics.jsonl',
  transcripts: 'transcripts.jsonl',
  /** Every held-out problem's outcome at every validation, per mode: what a paired comparison reads. */
  outcomes: 'outcomes.jsonl',
  bank: 'bank-events.jsonl',
  state: 'state.json',
  /** The problems the run was given, so an export resumes without the original files. */
  seeds: 'seeds.json',
  validation: 'validation.json',
  /** The kernel plan the run ran on (src/gpu/kernelPlan.ts): what --resume and --replay-plan follow. */
  kernels: 'kernels.json',
} as const;

/**
 * One process's part of a run, in its config.json's `starts`: clock times, the commit where
 * there is git, the kernels it ran on. A run resumed twice has three.
 */
export interface RunStart {
  started: string;
  /** Absent for a process killed before the end (its steps after the last checkpoint run again on resume). */
  ended?: string;
  commit?: string;
  /** Tracked files differed from the commit. */
  dirty?: boolean;
  /** tuned: this machine's tuning decided; recorded: the run's own plan (resumed); replayed from RUN: another run's. */
  kernels: string;
}

/** What a resumed run needs besides its checkpoint. */
export interface ResumeRecords {
  config: unknown;
  state: RunState;
  bankEvents: BankEvent[];
}

/**
 * Which records belong to a run's first `k` steps (numbered 0 … k − 1; the validation before
 * the first step is step 0's): what a run resumed from the checkpoint after step k keeps of
 * records written past it by a process killed before its next checkpoint.
 */
export const recordsUpTo = (k: number) => ({
  metrics: (m: MetricsRecord) => (m.kind === 'step' ? m.step < k : m.step <= k),
  transcript: (t: Transcript) => t.step < k,
  outcomes: (o: ValidationOutcomes) => o.step <= k,
  bankEvent: (e: BankEvent) => (e.type === 'admit' ? e.entry.provenance.step : e.step) < k,
});

/** A run's problems file (seeds.json, validation.json): a JSON list of problems. */
export function parseProblems(text: string, file: string): Problem[] {
  const xs = JSON.parse(text) as unknown;
  if (!Array.isArray(xs)) throw new Error(`${file}: expected a list of problems`);
  return xs as Problem[];
}

/**
 * Parses a run's records. A last line cut by a crash is dropped (the append-only log loses at
 * most the event in flight); a bad line before it is an error naming its number.
 */
export function parseJsonl<T>(text: string, file: string): T[] {
  const lines = text.split('\n');
  const out: T[] = [];
  lines.forEach((line, i) => {
    if (!line.trim()) return;
    try {
      out.push(JSON.parse(line) as T);
    } catch {
      if (i < lines.length - 2) throw new Error(`${file}:${i + 1}: not valid JSON`);
    }
  });
  return out;
}

export function parseResume(read: (name: string) => string): ResumeRecords {
  const json = (name: string) => {
    try {
      return JSON.parse(read(name)) as unknown;
    } catch (e) {
      throw new Error(`${name}: not valid JSON (${errorText(e)})`);
    }
  };
  const state = json(RUN_FILES.state) as RunState;
  if (typeof state !== 'object' || state === null || !Number.isInteger(state.step)) throw new Error(`${RUN_FILES.state}: no step count`);
  return { config: json(RUN_FILES.config), state, bankEvents: parseJsonl<BankEvent>(read(RUN_FILES.bank), RUN_FILES.bank) };
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const jsonl = (xs: readonly unknown[]) => xs.map((x) => JSON.stringify(x) + '\n').join('');

/**
 * Every record of a run in memory (the lab's engine): an export is its files, and a run
 * resumed from an export keeps the history it came with.
 */
export class MemoryRunStore implements RunStore {
  readonly metricsRecords: MetricsRecord[] = [];
  readonly transcriptRecords: Transcript[] = [];
  readonly outcomeRecords: ValidationOutcomes[] = [];
  readonly bankEvents: BankEvent[] = [];
  runState: RunState | null = null;
  /** The kernel plan the run ran on (src/gpu/kernelPlan.ts), as JSON; null until the first step. */
  kernels: unknown = null;
  readonly checkpoints = new Map<string, ReadonlyMap<string, Uint8Array>>();

  constructor(
    public config: unknown,
    readonly problems: { seeds: readonly Problem[]; validation: readonly Problem[] },
  ) {}

  async metrics(m: MetricsRecord): Promise<void> {
    this.metricsRecords.push(m);
  }

  async transcripts(t: Transcript[]): Promise<void> {
    this.transcriptRecords.push(...t);
  }

  async outcomes(o: ValidationOutcomes[]): Promise<void> {
    this.outcomeRecords.push(...o);
  }

  bank(e: BankEvent): void {
    this.bankEvents.push(e);
  }

  async state(s: RunState): Promise<void> {
    this.runState = structuredClone(s);
  }

  writeCheckpoint(tag: string, files: ReadonlyMap<string, Uint8Array>): void {
    this.checkpoints.set(tag, files);
  }

  /** The run as files, checkpoints under `tag/`; `current` replaces the saved `last/` (a paused run's weights). */
  files(current?: ReadonlyMap<string, Uint8Array>): Map<string, Uint8Array> {
    const out = new Map<string, Uint8Array>([
      [RUN_FILES.config, encoder.encode(JSON.stringify(this.config, null, 2) + '\n')],
      [RUN_FILES.metrics, encoder.encode(jsonl(this.metricsRecords))],
      [RUN_FILES.transcripts, encoder.encode(jsonl(this.transcriptRecords))],
      [RUN_FILES.outcomes, encoder.encode(jsonl(this.outcomeRecords))],
      [RUN_FILES.bank, encoder.encode(jsonl(this.bankEvents))],
      [RUN_FILES.state, encoder.encode(JSON.stringify(this.runState ?? { step: 0, best: null, evaluationsWithoutGain: 0, warmedUp: false }, null, 2) + '\n')],
      [RUN_FILES.seeds, encoder.encode(JSON.stringify(this.problems.seeds))],
      [RUN_FILES.validation, encoder.encode(JSON.stringify(this.problems.validation))],
    ]);
    if (this.kernels) out.set(RUN_FILES.kernels, encoder.encode(JSON.stringify(this.kernels, null, 2) + '\n'));
    const checkpoints = new Map(this.checkpoints);
    if (current) checkpoints.set('last', current);
    for (const [tag, files] of checkpoints) for (const [name, bytes] of files) out.set(`${tag}/${name}`, bytes);
    return out;
  }

  /**
   * A run from its exported files: the records, the problems, and the `last/` checkpoint's
   * files; refused with the reason when a file is missing or unreadable.
   */
  static fromFiles(files: ReadonlyMap<string, Uint8Array>): { store: MemoryRunStore; resume: ResumeRecords; checkpoint: Map<string, Uint8Array> } {
    const read = (name: string) => {
      const bytes = files.get(name);
      if (!bytes) throw new Error(`not a run export: no ${name}`);
      return decoder.decode(bytes);
    };
    const resume = parseResume(read);
    const problems = (name: string) => parseProblems(read(name), name);
    const store = new MemoryRunStore(resume.config, { seeds: problems(RUN_FILES.seeds), validation: problems(RUN_FILES.validation) });
    // A folder of a CLI run killed between two checkpoints holds records past its last/: those steps run again.
    const upTo = recordsUpTo(resume.state.step);
    store.metricsRecords.push(...parseJsonl<MetricsRecord>(read(RUN_FILES.metrics), RUN_FILES.metrics).filter(upTo.metrics));
    store.transcriptRecords.push(...parseJsonl<Transcript>(read(RUN_FILES.transcripts), RUN_FILES.transcripts).filter(upTo.transcript));
    // Exports from before per-problem outcomes were recorded have none.
    if (files.has(RUN_FILES.outcomes)) store.outcomeRecords.push(...parseJsonl<ValidationOutcomes>(read(RUN_FILES.outcomes), RUN_FILES.outcomes).filter(upTo.outcomes));
    resume.bankEvents = resume.bankEvents.filter(upTo.bankEvent);
    store.bankEvents.push(...resume.bankEvents);
    store.runState = resume.state;
    // Exports from before kernel plans were recorded have none.
    if (files.has(RUN_FILES.kernels)) {
      try {
        store.kernels = JSON.parse(read(RUN_FILES.kernels)) as unknown;
      } catch {
        throw new Error(`${RUN_FILES.kernels}: not valid JSON`);
      }
    }
    const byTag = new Map<string, Map<string, Uint8Array>>();
    for (const [path, bytes] of files) {
      const slash = path.indexOf('/');
      if (slash < 0) continue;
      const tag = path.slice(0, slash);
      if (!byTag.has(tag)) byTag.set(tag, new Map());
      byTag.get(tag)!.set(path.slice(slash + 1), bytes);
    }
    const checkpoint = byTag.get('last');
    if (!checkpoint) throw new Error('not a run export: no last/ checkpoint');
    for (const [tag, f] of byTag) store.checkpoints.set(tag, f);
    return { store, resume, checkpoint };
  }
}
