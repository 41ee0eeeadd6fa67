/**
 * Figures on the held-out levels a comparison names before its runs start: one method's final
 * accuracy minus another's, the Solver alone, per named level and pooled over them, each a
 * paired bootstrap over problems (and over seeds, drawn once for both where the runs of a seed
 * share their step 0: seedPairing). Two readings of it, each fixed before any run:
 *
 * - the pilot: the ceiling − RLVR, the headroom a testbed gives a method that poses problems;
 *   it clears the bar (PILOT_BAR) with at least 10 points pooled and an interval above 0;
 * - the primary comparison: the one difference a comparison is judged by (the named SAGE
 *   configuration against RLVR); every other figure of its report is exploratory.
 *
 * Pure data: src/cli/compare.ts writes and reads the records.
 */
import { CEILING, levelSpan, seedPairing, type RunOutcomes } from './compare';
import { shareText, signedPoints as points } from './compareTable';
import { gapShare, pairedDifference, type BootstrapOptions, type Interval } from './pairedStats';

/** A − B on the named levels, the Solver alone at the final validation. */
export interface LevelFigures {
  /** The named levels; empty: every held-out problem. */
  levels: string[];
  /** Over the named levels' problems together (null: no problem of them in both methods' runs). */
  pooled: Interval | null;
  perLevel: Record<string, Interval | null>;
}

/** A − B (each a method's runs' outcomes) per named level and pooled, the Solver alone, seeds paired where they share step 0. */
export function namedLevelDifference(a: readonly RunOutcomes[], b: readonly RunOutcomes[], levels: readonly string[], o: BootstrapOptions = {}): LevelFigures {
  const {
    runs: [x, y],
    paired,
  } = seedPairing([a, b]);
  const bootstrap = { ...o, pairSeeds: paired };
  const diff = (within?: ReadonlySet<string>) => pairedDifference(x!.map((r) => r.final.solver), y!.map((r) => r.final.solver), within, bootstrap);
  return {
    levels: [...levels],
    pooled: levels.length ? diff(levelIds([a, b], levels)) : diff(),
    perLevel: Object.fromEntries(levels.map((l) => [l, diff(levelIds([a, b], [l]))])),
  };
}

/** The problems of `levels` in any of these methods' runs. */
function levelIds(methods: readonly (readonly RunOutcomes[])[], levels: readonly string[]): Set<string> {
  return new Set(methods.flat().flatMap((r) => [...r.levels].filter(([, l]) => levels.includes(l)).map(([id]) => id)));
}

/**
 * The share of ceiling − B that A − B closes on the named levels pooled, the Solver alone at the
 * final validation, the three drawn as one paired bootstrap (gapShare: the share's own interval,
 * not a ratio of two estimates); seeds paired where all three share step 0.
 */
export function namedLevelShare(a: readonly RunOutcomes[], b: readonly RunOutcomes[], ceiling: readonly RunOutcomes[], levels: readonly string[], o: BootstrapOptions = {}): Interval | null {
  const {
    runs: [x, y, z],
    paired,
  } = seedPairing([a, b, ceiling]);
  const finals = (runs: readonly RunOutcomes[]) => runs.map((r) => r.final.solver);
  return gapShare(finals(x!), finals(y!), finals(z!), levels.length ? levelIds([a, b, ceiling], levels) : undefined, { ...o, pairSeeds: paired });
}

/** What a testbed must show before a method is judged on it: ceiling − RLVR on the named levels, pooled. */
export const PILOT_BAR = {
  /** The least pooled difference, in points. */
  points: 10,
  text: 'ceiling − RLVR at least +10 points pooled on the named levels, its 95% interval excluding 0',
} as const;

/** The pilot's seeds: apart from a comparison's (0, 1, ...), so that no comparison reuses a run the pilot judged the testbed by. */
export const PILOT_SEED_OFFSET = 1000;

/** The pilot's two entries: the baseline and the ceiling. */
export const PILOT_METHODS = ['rlvr', CEILING.name] as const;

export interface PilotVerdict {
  clears: boolean;
  /** Why, in words. */
  reason: string;
}

/** Whether ceiling − RLVR pooled on the named levels clears PILOT_BAR, and why (null: no problem of the named levels was validated). */
export function pilotVerdict(pooled: Interval | null): PilotVerdict {
  if (!pooled) return { clears: false, reason: 'no held-out problem of the named levels in the runs\' outcomes' };
  const enough = pooled.estimate * 100 >= PILOT_BAR.points;
  const apart = pooled.lo > 0;
  if (enough && apart) return { clears: true, reason: `${points(pooled.estimate)} points pooled, the interval [${points(pooled.lo)}, ${points(pooled.hi)}] above 0` };
  const short = enough ? [] : [`${points(pooled.estimate)} points pooled, short of ${PILOT_BAR.points}`];
  const noise = apart ? [] : [`the interval [${points(pooled.lo)}, ${points(pooled.hi)}] covers 0`];
  return { clears: false, reason: [...short, ...noise].join('; ') };
}

/** What a pilot records: named and written before its runs start, its verdict added when they end (cleared or not). */
export interface PilotRecord {
  kind: 'pilot';
  /** The held-out levels named for the comparison the pilot is for. */
  levels: string[];
  bar: typeof PILOT_BAR.text;
  model: string;
  steps: number;
  seeds: number[];
  methods: string[];
  seedProblems: string;
  ceilingSeeds: string;
  validation: string;
  validationLimit: number;
  resamples: number;
  startedAt: string;
  /** Null until every run has made its steps. */
  result: (PilotVerdict & { pooled: Interval | null; perLevel: Record<string, Interval | null>; finishedAt: string }) | null;
}

/** A comparison's primary figure: method `a` − method `b`, the Solver alone, pooled on the named levels. */
export interface Primary {
  a: string;
  b: string;
}

/** "A:B" as a primary comparison of two of `entries`; a string saying what is wrong otherwise. */
export function parsePrimary(text: string, entries: readonly string[]): Primary | string {
  const parts = text.split(':');
  if (parts.length !== 2 || !parts[0] || !parts[1]) return `--primary ${text}: expected METHOD:BASELINE, e.g. sage-verified-problems:rlvr`;
  const [a, b] = parts as [string, string];
  const unknown = [a, b].find((m) => !entries.includes(m));
  if (unknown) return `--primary ${text}: no method ${unknown} (one of ${entries.join(', ')})`;
  if (a === b) return `--primary ${text}: a method against itself`;
  return { a, b };
}

export const primaryName = (p: Primary) => `${p.a}:${p.b}`;

/** What a comparison records before its runs: its primary figure and named levels, and the pilot it rests on. */
export interface ComparisonPlan {
  kind: 'comparison';
  primary: string | null;
  levels: string[];
  /** The pilot's folder and its verdict when the plan was written; null: none given. */
  pilot: { dir: string; clears: boolean; reason: string; levels: string[]; seeds: number[] } | null;
  methods: string[];
  seeds: number[];
  steps: number;
  model: string;
  resamples: number;
  recordedAt: string;
  /** Runs that had made a step in the folder when the plan was written: 0 for a plan named before the runs. */
  runsBefore: number;
}

const intervalLine = (i: Interval | null) => (i ? `${points(i.estimate)} [${points(i.lo)}, ${points(i.hi)}]${i.insideNoise ? ', inside the noise' : ''} (${i.problems} problems, ${i.seeds.join(' and ')} seeds${i.seedsPaired ? ', paired' : ''}, ${i.resamples.toLocaleString('en-US')} resamples)` : 'no problem of it in both methods\' outcomes');

/** Seeds as a span ("1000-1004"), or the one seed. */
export const seedSpan = (seeds: readonly number[]) => (seeds.length > 1 ? `${seeds[0]}-${seeds.at(-1)}` : String(seeds[0]));

/** The levels in words: "levels 3-5", or "every held-out level". */
const levelWords = (levels: readonly string[]) => (levels.length ? `level${levels.length > 1 ? 's' : ''} ${levelSpan(levels)}` : 'every held-out level');

/** A pilot's section of a report: the bar, the figures per level and pooled, and the verdict. */
export function pilotSection(r: PilotRecord): string[] {
  const head = `Pilot: ${CEILING.name} − rlvr, the Solver alone, final after ${r.steps} step${r.steps === 1 ? '' : 's'}, seed${r.seeds.length > 1 ? 's' : ''} ${seedSpan(r.seeds)}, on the ${levelWords(r.levels)} named at its start (${r.startedAt}).`;
  if (!r.result) return [head, '', `Bar: ${PILOT_BAR.text}. Not finished: no verdict yet.`];
  return [
    head,
    '',
    `- pooled: ${intervalLine(r.result.pooled)}`,
    ...r.levels.map((l) => `- level ${l}: ${intervalLine(r.result!.perLevel[l] ?? null)}`),
    '',
    `**${r.result.clears ? 'Clears the bar' : 'Fails the bar'}** (${PILOT_BAR.text}): ${r.result.reason}.${r.result.clears ? '' : ' The testbed needs changing (base model, learning signal, steps) before a method is judged on it.'}`,
  ];
}

/**
 * What the primary comparison aims at, fixed for every comparison before its runs: the named
 * method above RLVR beyond the noise, closing at least half of the headroom the ceiling shows
 * over RLVR on the same levels (the pilot's, and the comparison's own once it ran the ceiling).
 */
export const PRIMARY_GOAL = {
  share: 0.5,
  text: `the interval above 0 and the estimate at least half of ${CEILING.name} − rlvr on the same levels`,
} as const;

/** One headroom a primary figure is read against: where it was measured, and ceiling − RLVR pooled there. */
export interface Headroom {
  source: string;
  gap: Interval | null;
  /** The share of that gap the primary closes, drawn with it as one bootstrap (namedLevelShare): only where the gap is the comparison's own and clearly above 0. */
  share?: Interval | null;
}

/** Whether `primary` (A − rlvr pooled) meets PRIMARY_GOAL against `h`, in words. */
export function goalVerdict(primary: Interval, h: Headroom): string {
  if (!h.gap) return `against ${h.source}: no figure (no problem of the named levels in both)`;
  const gap = h.gap.estimate;
  const half = PRIMARY_GOAL.share * gap;
  const where = `against ${h.source} of ${points(gap)} [${points(h.gap.lo)}, ${points(h.gap.hi)}], half ${points(half)}`;
  if (gap <= 0) return `${where}: no headroom there to close`;
  const share = `the estimate ${points(primary.estimate)} is ${Math.round((100 * primary.estimate) / gap)}% of it`;
  const misses = [...(primary.estimate >= half ? [] : ['short of half']), ...(primary.lo > 0 ? [] : ['the interval covers 0'])];
  // Met on the estimate, as the goal reads; a low end below half is said, not hidden.
  const low = primary.lo < half ? `; the interval's low end ${points(primary.lo)} is below half` : `; the whole interval is above half`;
  const joint = h.share ? ` (drawn as one bootstrap with the gap, the share closed is ${shareText(h.share)})` : '';
  return misses.length ? `${where}: not met, ${share} (${misses.join('; ')})${joint}` : `${where}: met, ${share}${low}${joint}`;
}

/** A pilot a comparison states: its folder and its record. */
export interface StatedPilot {
  dir: string;
  record: PilotRecord;
}

/** A comparison report's first lines: its pilot, then its primary figure (or that it has none), then the word that all else is exploratory. */
export function planSection(plan: ComparisonPlan | null, pilot: StatedPilot | null, primary: LevelFigures | null, headroom: readonly Headroom[] = []): string[] {
  const r = pilot?.record;
  const pilotLines = pilot && r
    ? [`**Pilot** (\`${pilot.dir}\`): ${r.result ? `${r.result.clears ? 'cleared' : 'failed'} the bar (${PILOT_BAR.text}): ${r.result.reason}; ${CEILING.name} − rlvr on ${levelWords(r.levels)}, seeds ${seedSpan(r.seeds)}, ${r.steps} steps.` : 'not finished.'}`]
    : ['**Pilot:** none stated (`--pilot-record`): nothing here says the testbed leaves a method room to differ from RLVR.'];
  const primaryLines = plan?.primary
    ? [
        `**Primary comparison**, named ${plan.runsBefore ? `after ${plan.runsBefore} run${plan.runsBefore > 1 ? 's' : ''} had started (not before the runs: read it as exploratory too)` : 'before the runs started'} (${plan.recordedAt}): ${plan.primary.replace(':', ' − ')}, the Solver alone, final, ${levelWords(plan.levels)} pooled: ${primary ? intervalLine(primary.pooled) : 'not available yet (runs unfinished, or without outcomes)'}.`,
        ...(primary?.pooled && headroom.length ? ['', `**Goal** (${PRIMARY_GOAL.text}): ${headroom.map((h) => goalVerdict(primary.pooled!, h)).join('; ')}.`] : []),
        ...(primary && plan.levels.length > 1 ? ['', `Per named level (exploratory): ${plan.levels.map((l) => `${l}: ${intervalLine(primary.perLevel[l] ?? null)}`).join('; ')}.`] : []),
      ]
    : ['**Primary comparison:** none named before the runs started (`--primary A:B` with the comparison\'s first command): every difference below is exploratory.'];
  const exploratory = plan?.primary ? 'Every figure below is exploratory: many differences, none of them the one named before the runs.' : 'Every figure below is exploratory: many differences, none named before the runs.';
  return [...pilotLines, '', ...primaryLines, '', '## Exploratory', '', exploratory];
}
