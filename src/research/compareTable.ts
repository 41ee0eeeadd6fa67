/**
 * A comparison's summaries (compare.ts) as Markdown: the accuracy table with its paired
 * intervals, the same per level, where each method stands between the baseline and the
 * ceiling, the methods' other figures, what the bank admitted and what the Solver practised,
 * and notes on what the numbers are; and the cells the lab's table shares with it.
 */
import { compareLevels, UNREADABLE } from '../sage/levels';
import { CEILING, PLANS_WINDOW, type MeanSe, type MethodSummary } from './compare';
import { RESAMPLES, type Interval } from './pairedStats';

/** Each level once and in order, then the pooled key of the levels beyond the seeds (if any): the columns of a per-level table. */
export function levelColumns(keys: Iterable<string>, beyond: string | null | undefined): string[] {
  return [...[...new Set(keys)].filter((l) => l !== beyond).sort(compareLevels), ...(beyond ? [beyond] : [])];
}


const pct = (m: MeanSe | null | undefined) => (!m || !m.n ? '-' : `${(100 * m.mean).toFixed(1)}${m.se === null ? '' : ` ± ${(100 * m.se).toFixed(1)}`}`);
const num = (m: MeanSe | null | undefined, digits = 2) => (!m || !m.n ? '-' : `${m.mean.toFixed(digits)}${m.se === null ? '' : ` ± ${m.se.toFixed(digits)}`}`);
/** A share in percent. */
const pct1 = (x: number) => (100 * x).toFixed(1);
/** A share as signed points. */
export const signedPoints = (x: number): string => {
  const t = (100 * x).toFixed(1);
  return t === '-0.0' ? '+0.0' : t.startsWith('-') ? t : `+${t}`;
};

/** A paired figure in points: the estimate, its 95% interval, † where only the problems were resampled (one seed a side), and "inside the noise" where the interval covers 0. */
export function intervalText(i: Interval): string {
  return `${signedPoints(i.estimate)} [${signedPoints(i.lo)}, ${signedPoints(i.hi)}]${i.seedsResampled ? '' : '†'}${i.insideNoise ? ' inside the noise' : ''}`;
}

/** A share of a gap in percent: the estimate, its 95% interval, † and "inside the noise" as intervalText. */
export function shareText(i: Interval): string {
  const p = (x: number) => (Number.isFinite(x) ? `${(100 * x).toFixed(0)}%` : x > 0 ? '+∞' : '−∞');
  return `${p(i.estimate)} [${p(i.lo)}, ${p(i.hi)}]${i.seedsResampled ? '' : '†'}${i.insideNoise ? ' inside the noise' : ''}`;
}

/** How the intervals' seeds were drawn, in words. */
function seedDraws(intervals: readonly Interval[]): string {
  const between = intervals.filter((i) => i.seeds.length > 1 && i.seedsResampled);
  const paired = between.filter((i) => i.seedsPaired).length;
  if (!between.length || !paired) return "each side's seeds drawn on their own";
  const how = 'seeds paired (one draw for both sides) where the runs of one seed share their step 0, the Solver alone right on the same problems';
  return paired === between.length ? how : `${how}, each side's seeds drawn on their own elsewhere`;
}

/** What a comparison's table says of its figures, under the table. */
function notes(summaries: readonly MethodSummary[]): string[] {
  const intervals = summaries.flatMap((s) => [
    ...(s.paired ? [s.paired.own, s.paired.solver, ...Object.values(s.paired.perLevel), ...Object.values(s.paired.perLevelSolver ?? {})].flatMap((f) => [f.gain, f.vsBaseline]) : []),
    ...(s.gap ? [s.gap.own, ...Object.values(s.gap.perLevel)] : []),
  ]).filter((i): i is Interval => !!i);
  const unpaired = summaries.filter((s) => !s.paired).map((s) => s.method);
  const ceiling = summaries.find((s) => s.method === s.ceiling);
  const beyond = summaries.find((s) => s.beyondSeeds)?.beyondSeeds;
  return [
    ...(ceiling ? [`${ceiling.method}: ${CEILING.label}.`] : []),
    'Percent. Start and final: mean ± standard error over seeds. Gain: final − start of the same runs; vs the baseline: the difference of the finals; both in points.',
    ...(beyond ? [`Levels ${beyond}: the held-out levels no seed shows, pooled.`] : []),
    ...(intervals.length
      ? [`In brackets the 95% interval of a paired bootstrap over problems and seeds (${(intervals[0]?.resamples ?? RESAMPLES).toLocaleString('en-US')} resamples, the same problem draw for both sides; ${seedDraws(intervals)}); "inside the noise" where it covers 0.`]
      : []),
    ...(intervals.some((i) => !i.seedsResampled) ? ['† one seed a side: the interval covers the sampling of the problems only, not the spread between seeds.'] : []),
    ...(unpaired.length ? [`${unpaired.join(', ')}: no per-problem outcomes in the records (kept before they were), so no paired interval: gain and difference are plain differences of means.`] : []),
    ...(summaries.some((s) => s.admittedLevels)
      ? [`Admitted: problems the bank took in a run (mean ± standard error over seeds), by the level of the curriculum style its statement is in; ${UNREADABLE}: a statement no curriculum style reads.`]
      : []),
    ...(summaries.some((s) => s.solverFlat)
      ? ['Solver groups without reward spread: of a step\'s groups of Solver samples (as the advantage estimator groups them), the share whose rewards were all alike, which hold no contrast within the group; each run\'s mean over its steps, then mean ± standard error over seeds.']
      : []),
    ...(summaries.some((s) => s.practice)
      ? ['Practised: the problems the bank drew for the Solver, by origin and level as above; draws a run (mean ± standard error over seeds); over all the runs\' draws, the mean pass rate (the share of the Solver\'s samples the validators accepted; a validator-free method\'s: its Judge\'s mean score), and the draws whose samples none or all passed, which hold no contrast within the problem.']
      : []),
  ];
}

/** Where each method stands between the baseline and the ceiling: the gap itself, then each method's share of it, overall and per level. */
function gapTable(summaries: readonly MethodSummary[], levels: readonly string[], levelName: (l: string) => string): string[] {
  const ceiling = summaries.find((s) => s.method === s.ceiling);
  const base = summaries.find((s) => s.method === s.baseline);
  const placed = summaries.filter((s) => s.gap);
  if (!ceiling?.paired || !base || !placed.length) return [];
  const gapCell = (i: Interval | null | undefined) => (i ? intervalText(i) : '-');
  const shareCell = (i: Interval | null | undefined) => (i ? shareText(i) : '-');
  const rows = [
    [`${ceiling.method} − ${base.method} (points)`, gapCell(ceiling.paired.own.vsBaseline), ...levels.map((l) => gapCell(ceiling.paired!.perLevel[l]?.vsBaseline))],
    ...placed.map((s) => [`${s.method}: share closed`, shareCell(s.gap!.own), ...levels.map((l) => shareCell(s.gap!.perLevel[l]))]),
  ];
  const beyond = ceiling.beyondSeeds;
  const headline = placed.flatMap((s) => {
    const at = beyond ? s.gap!.perLevel[beyond] : s.gap!.own;
    return at ? [`${s.method} closes ${shareText({ ...at, insideNoise: false })} of the gap between ${base.method} and the ceiling${beyond ? ` on levels ${beyond} (beyond the seeds)` : ''}${at.insideNoise ? ', inside the noise' : ''}.`] : [];
  });
  return [
    `Between ${base.method} and the ceiling (${CEILING.label}), final, own mode:`,
    '',
    markdown(['', 'all levels', ...levels.map(levelName)], rows),
    '',
    `Share closed: (method − ${base.method}) / (${ceiling.method} − ${base.method}) of the finals, the three drawn as one paired bootstrap; "-" where ${ceiling.method} is not above ${base.method} beyond the noise there (the share would divide by noise).${headline.length ? ` ${headline.join(' ')}` : ''}`,
    '',
  ];
}

/** A Markdown table: the first column left-aligned, the others right-aligned. */
export const markdown = (head: string[], rows: string[][]) =>
  [`| ${head.join(' | ')} |`, `|${head.map((_, i) => (i === 0 ? '---' : '--:')).join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');

/**
 * The comparison as Markdown: accuracy (start, final, gain, difference from the baseline, in
 * the own mode and the Solver alone), the same per level in the own mode, the methods' other
 * figures, and notes on what the numbers are.
 */
export function compareTable(summaries: readonly MethodSummary[]): string {
  const base = summaries.find((s) => s.method === s.baseline);
  const vsHead = (mode: string) => (base ? [`vs ${base.method} (${mode})`] : []);
  const gain = (s: MethodSummary, mode: 'own' | 'solver') => {
    const i = s.paired?.[mode].gain;
    return i ? intervalText(i) : s.paired ? '-' : signedPoints(s.final[mode].mean - s.start[mode].mean);
  };
  const pairedLevels = (s: MethodSummary, mode: 'own' | 'solver') => (mode === 'own' ? s.paired?.perLevel : s.paired?.perLevelSolver);
  const finalLevels = (s: MethodSummary, mode: 'own' | 'solver') => (mode === 'own' ? s.final.perLevel : s.final.perLevelSolver);
  const vs = (s: MethodSummary, mode: 'own' | 'solver', level?: string) => {
    if (!base) return [];
    if (s === base) return ['-'];
    const i = level === undefined ? s.paired?.[mode].vsBaseline : pairedLevels(s, mode)?.[level]?.vsBaseline;
    if (i) return [intervalText(i)];
    const mine = level === undefined ? s.final[mode] : finalLevels(s, mode)[level];
    const theirs = level === undefined ? base.final[mode] : finalLevels(base, mode)[level];
    return [mine?.n && theirs?.n ? signedPoints(mine.mean - theirs.mean) : '-'];
  };
  const accuracy = markdown(
    ['method', 'seeds', 'problems', 'start (own mode)', 'final (own mode)', 'gain (own mode)', ...vsHead('own mode'), 'start (Solver alone)', 'final (Solver alone)', 'gain (Solver alone)', ...vsHead('Solver alone')],
    summaries.map((s) => [
      s.method, String(s.seeds.length), String(s.paired?.own.gain?.problems ?? '-'),
      pct(s.start.own), pct(s.final.own), gain(s, 'own'), ...vs(s, 'own'),
      pct(s.start.solver), pct(s.final.solver), gain(s, 'solver'), ...vs(s, 'solver'),
    ]),
  );
  const beyond = summaries.find((s) => s.beyondSeeds)?.beyondSeeds;
  const levels = levelColumns(summaries.flatMap((s) => Object.keys(s.final.perLevel)), beyond);
  const levelName = (l: string) => (l === beyond ? `${l} (beyond the seeds)` : l);
  const perLevel = (mode: 'own' | 'solver', shown: readonly MethodSummary[]) => {
    const name = mode === 'own' ? 'own mode' : 'Solver alone';
    return markdown(
      ['method', 'level', 'problems', `final (${name})`, `gain (${name})`, ...vsHead(name)],
      shown.flatMap((s) =>
        levels.map((l) => {
          const f = pairedLevels(s, mode)?.[l];
          return [s.method, levelName(l), String(f?.gain?.problems ?? '-'), pct(finalLevels(s, mode)[l]), f?.gain ? intervalText(f.gain) : '-', ...vs(s, mode, l)];
        }),
      ),
    );
  };
  // Where a method's own mode is not the Solver alone (it has plans), its Solver alone per level too, against the baseline's.
  const planned = summaries.filter((s) => s.final.planShown !== null);
  const admittedLabels = [...new Set(summaries.flatMap((s) => Object.keys(s.admittedLevels ?? {})))];
  const admitted = summaries.some((s) => s.admittedLevels)
    ? markdown(
        ['method', 'admitted', ...admittedLabels.map((l) => (l === UNREADABLE ? l : `level ${l}`))],
        summaries.map((s) => [s.method, num(s.admitted, 1), ...admittedLabels.map((l) => num(s.admittedLevels?.[l], 1))]),
      )
    : null;
  const practised = summaries.some((s) => s.practice)
    ? markdown(
        ['method', 'drawn from', 'level', 'draws a run', 'pass rate', 'none right', 'all right'],
        summaries.flatMap((s) => (s.practice ?? []).map((p) => [s.method, p.origin === 'seed' ? 'seeds' : 'generated', p.level === UNREADABLE ? p.level : `level ${p.level}`, num(p.draws, 1), pct1(p.passRate), pct1(p.noneRight), pct1(p.allRight)])),
      )
    : null;
  const other = markdown(
    ['method', 'plans shown', `plans right (last ${PLANS_WINDOW} steps)`, 'Critic AUC problems', 'Critic AUC plans', 'admitted', 'Solver rollouts a step: seeds', 'generated', 'Solver groups without reward spread'],
    summaries.map((s) => [s.method, pct(s.final.planShown), pct(s.plansRight), num(s.final.problemAuc), num(s.final.planAuc), num(s.admitted, 1), num(s.solverRollouts?.seeds, 1), num(s.solverRollouts?.generated, 1), pct(s.solverFlat)]),
  );
  const withPlans = summaries.filter((s) => s.plans);
  const share = (k: number, n: number) => (n ? `${k} (${pct1(k / n)}%)` : '-');
  const plans = withPlans.length
    ? markdown(
        ['method', 'plans shown', 'right with the plan', 'Solver alone on those', 'agree where refused', 'own − Solver alone', ...(beyond ? [`own − Solver alone, levels ${beyond}`] : [])],
        withPlans.map(({ method, plans: e }) => [
          method, `${e!.shown} of ${e!.problems}`, share(e!.rightWithPlan, e!.shown), share(e!.rightAlone, e!.shown), share(e!.refusedAgree, e!.refused),
          e!.all ? intervalText(e!.all) : '-', ...(beyond ? [e!.beyond ? intervalText(e!.beyond) : '-'] : []),
        ]),
      )
    : null;
  return [
    accuracy,
    '',
    ...(levels.length ? ['Per level:', '', perLevel('own', summaries), ''] : []),
    ...(levels.length && planned.length ? ['Per level, the Solver alone, for the methods whose own mode has plans:', '', perLevel('solver', planned), ''] : []),
    ...gapTable(summaries, levels, levelName),
    other,
    '',
    ...(plans
      ? ['What the plans do at the final validation: each held-out problem of each run (a problem-run) in the own mode, its plan shown where the Critic let it through, against the Solver alone on the same problem-run; where the plan was refused the Solver answers without one, so both should agree. Own − Solver alone in points, seeds paired (the same runs).', '', plans, '']
      : []),
    ...(admitted ? ['What the bank admitted, by level:', '', admitted, ''] : []),
    ...(practised ? ['What the Solver practised:', '', practised, ''] : []),
    notes(summaries).join('\n\n'),
  ].join('\n');
}
