/**
 * The problem bank: the seeds plus every problem the Challenger wrote that passed the gate
 * (s_q ≥ alpha, a usable validator, not a duplicate or near-duplicate), with provenance.
 * Every change is an event; replaying the events rebuilds the bank, so persistence is an
 * append-only log (a JSONL file in Node, IndexedDB/OPFS in the browser) and a crash loses
 * at most the step in flight.
 */
import type { Problem } from '../data/problem';
import { normaliseStatement } from '../data/problem';

export type Origin = 'seed' | 'generated';

export interface Provenance {
  origin: Origin;
  /** Ids of the reference problems the Challenger was shown. */
  parents: string[];
  /** Loop step that admitted it (0 for seeds). */
  step: number;
  /** The Critic's normalised quality score s_q (null for seeds). */
  quality: number | null;
  /** Solver pass rates measured on it: [step, rate]. */
  passRates: [number, number][];
}

export interface BankEntry {
  problem: Problem;
  provenance: Provenance;
}

export const REJECT_REASONS = ['unparsable', 'quality', 'validator', 'duplicate', 'near-duplicate'] as const;
export type RejectReason = (typeof REJECT_REASONS)[number];

export type BankEvent =
  | { type: 'admit'; entry: BankEntry }
  | { type: 'reject'; step: number; reason: RejectReason }
  | { type: 'pass-rate'; id: string; step: number; rate: number };

export interface Candidate {
  problem: Problem;
  parents: string[];
  step: number;
  quality: number;
  validatorUsable: boolean;
  /** The Solver's pass rate on it during the gate, when it was attempted. */
  passRate: number | null;
}

export interface BankOptions {
  /** s_q threshold; 0 disables the quality filter. */
  alpha: number;
  /** Token-bigram Jaccard similarity at or above which a statement is a near-duplicate. */
  nearDuplicate: number;
}

export type SamplingMode = { kind: 'uniform' } | { kind: 'newest-mix'; newestShare: number; newest: number };

/**
 * Words and numbers of a normalised statement, paired into bigrams: a changed number
 * makes a different problem, a reworded sentence with the same numbers does not.
 */
function shingles(statement: string): Set<string> {
  const tokens = normaliseStatement(statement).match(/\d+(?:\.\d+)?|[a-z]+|[^\s\w]/g) ?? [];
  if (tokens.length < 2) return new Set(tokens);
  const out = new Set<string>();
  for (let i = 0; i + 1 < tokens.length; i++) out.add(`${tokens[i]} ${tokens[i + 1]}`);
  return out;
}

export class ProblemBank {
  private readonly entries: BankEntry[] = [];
  private readonly byId = new Map<string, BankEntry>();
  private readonly statements = new Set<string>();
  /** Shingle → indices of entries holding it, for near-duplicate search. */
  private readonly index = new Map<string, number[]>();
  private readonly shingleCounts: number[] = [];
  readonly rejected: Record<RejectReason, number> = { unparsable: 0, quality: 0, validator: 0, duplicate: 0, 'near-duplicate': 0 };
  private readonly listeners: ((e: BankEvent) => void)[] = [];

  constructor(readonly options: BankOptions) {}

  /** Seeds enter unconditionally, except exact duplicates of one another (reported). */
  static fromSeeds(seeds: readonly Problem[], options: BankOptions): { bank: ProblemBank; duplicates: string[] } {
    const bank = new ProblemBank(options);
    const duplicates: string[] = [];
    for (const problem of seeds) {
      if (bank.statements.has(normaliseStatement(problem.statement)) || bank.byId.has(problem.id)) duplicates.push(problem.id);
      else bank.add({ problem, provenance: { origin: 'seed', parents: [], step: 0, quality: null, passRates: [] } });
    }
    return { bank, duplicates };
  }

  /** Called with every event from now on (persistence, the lab's live view). */
  subscribe(listener: (e: BankEvent) => void): () => void {
    this.listeners.push(listener);
    return () => void this.listeners.splice(this.listeners.indexOf(listener), 1);
  }

  get size(): number {
    return this.entries.length;
  }

  get seedCount(): number {
    return this.entries.filter((e) => e.provenance.origin === 'seed').length;
  }

  get admittedCount(): number {
    return this.size - this.seedCount;
  }

  get(id: string): BankEntry | undefined {
    return this.byId.get(id);
  }

  all(): readonly BankEntry[] {
    return this.entries;
  }

  /** The highest similarity of a statement to one in the bank, and which. */
  nearest(statement: string): { similarity: number; id: string | null } {
    const mine = shingles(statement);
    const shared = new Map<number, number>();
    for (const s of mine) for (const i of this.index.get(s) ?? []) shared.set(i, (shared.get(i) ?? 0) + 1);
    let best = { similarity: 0, id: null as string | null };
    for (const [i, n] of shared) {
      const similarity = n / (mine.size + this.shingleCounts[i]! - n);
      if (similarity > best.similarity) best = { similarity, id: this.entries[i]!.problem.id };
    }
    return best;
  }

  /** Whether the bank already holds this problem, or one nearly the same. */
  duplicateOf(problem: Problem): 'duplicate' | 'near-duplicate' | null {
    if (this.statements.has(normaliseStatement(problem.statement)) || this.byId.has(problem.id)) return 'duplicate';
    if (this.nearest(problem.statement).similarity >= this.options.nearDuplicate) return 'near-duplicate';
    return null;
  }

  /** Why a candidate would be turned away, or null if it passes the gate. */
  verdict(c: Candidate): RejectReason | null {
    if (c.quality < this.options.alpha) return 'quality';
    if (!c.validatorUsable) return 'validator';
    return this.duplicateOf(c.problem);
  }

  /** Admits the candidate or counts why not. */
  consider(c: Candidate): RejectReason | null {
    const reason = this.verdict(c);
    if (reason) {
      this.reject(reason, c.step);
      return reason;
    }
    const entry: BankEntry = {
      problem: c.problem,
      provenance: { origin: 'generated', parents: c.parents, step: c.step, quality: c.quality, passRates: c.passRate === null ? [] : [[c.step, c.passRate]] },
    };
    this.add(entry);
    // A snapshot: later pass rates arrive as their own events.
    this.emit({ type: 'admit', entry: { problem: entry.problem, provenance: structuredClone(entry.provenance) } });
    return null;
  }

  /** Counts a Challenger output that never became a candidate (no problem in it). */
  reject(reason: RejectReason, step: number): void {
    this.rejected[reason]++;
    this.emit({ type: 'reject', step, reason });
  }

  recordPassRate(id: string, step: number, rate: number): void {
    const entry = this.byId.get(id);
    if (!entry) throw new Error(`no problem "${id}" in the bank`);
    entry.provenance.passRates.push([step, rate]);
    this.emit({ type: 'pass-rate', id, step, rate });
  }

  /**
   * `n` distinct problems (all of them if the bank is smaller). 'newest-mix' draws
   * `newestShare` of them from the `newest` most recently admitted generated problems (as
   * many as there are: none before the first is admitted), the rest uniformly.
   */
  sample(n: number, random: () => number, mode: SamplingMode = { kind: 'uniform' }, filter?: (e: BankEntry) => boolean): BankEntry[] {
    const pool = filter ? this.entries.filter(filter) : [...this.entries];
    const take = Math.min(n, pool.length);
    const chosen = new Set<number>();
    const pick = (from: number, to: number) => {
      // Rejection sampling over a range; falls back to a scan when the range is nearly used up.
      for (let tries = 0; tries < 32; tries++) {
        const i = from + Math.floor(random() * (to - from));
        if (!chosen.has(i)) return void chosen.add(i);
      }
      for (let i = from; i < to; i++) if (!chosen.has(i)) return void chosen.add(i);
    };
    // Entries are in the order they came: the seeds, then generated problems as admitted.
    const firstGenerated = pool.findIndex((e) => e.provenance.origin === 'generated');
    if (mode.kind === 'newest-mix' && firstGenerated >= 0) {
      const from = Math.max(firstGenerated, pool.length - mode.newest);
      const fromNewest = Math.min(Math.round(take * mode.newestShare), pool.length - from);
      for (let k = 0; k < fromNewest; k++) pick(from, pool.length);
    }
    while (chosen.size < take) pick(0, pool.length);
    return [...chosen].map((i) => pool[i]!);
  }

  /** Rebuilds a bank from its seeds and its event log. */
  static replay(seeds: readonly Problem[], events: readonly BankEvent[], options: BankOptions): ProblemBank {
    const { bank } = ProblemBank.fromSeeds(seeds, options);
    for (const e of events) {
      if (e.type === 'admit') bank.add(e.entry);
      else if (e.type === 'reject') bank.rejected[e.reason]++;
      else bank.byId.get(e.id)?.provenance.passRates.push([e.step, e.rate]);
    }
    return bank;
  }

  private add(entry: BankEntry): void {
    const i = this.entries.length;
    this.entries.push(entry);
    this.byId.set(entry.problem.id, entry);
    this.statements.add(normaliseStatement(entry.problem.statement));
    const sh = shingles(entry.problem.statement);
    this.shingleCounts.push(sh.size);
    for (const s of sh) {
      const list = this.index.get(s);
      if (list) list.push(i);
      else this.index.set(s, [i]);
    }
  }

  private emit(e: BankEvent): void {
    for (const l of this.listeners) l(e);
  }
}
