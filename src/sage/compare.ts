/**
 * A comparison of methods over seeds, from the runs' metrics records: per method the mean
 * and standard error over seeds of the final validation (the method's own mode and the
 * Solver alone, overall and per level), the Critic's AUC and the bank's growth, curves of
 * the mean with its band, and each method's difference from a baseline in standard errors.
 * The final validation, not the best: picking the best of several on the held-out split
 * would report the noise's maximum. Pure data: the CLI and the lab draw it.
 */
import { mean, sampleStd } from '../util/stats';
import type { MetricsRecord } from './run';
import { ownAccuracy, type ValidationResult } from './validation';

export interface ComparedRun {
  method: string;
  seed: number;
  records: readonly MetricsRecord[];
}

/** Mean and standard error of the mean (sample standard deviation / √n; null for one run). */
export interface MeanSe {
  mean: number;
  se: number | null;
  n: number;
}

export function meanSe(xs: readonly number[]): MeanSe {
  const n = xs.length;
  if (!n) return { mean: NaN, se: null, n: 0 };
  return { mean: mean(xs), se: n < 2 ? null : sampleStd(xs) / Math.sqrt(n), n };
}

/** A validation and the number of loop steps made before it. */
interface Point {
  after: number;
  v: ValidationResult;
}

function validations(records: readonly MetricsRecord[]): Point[] {
  return records.flatMap((r) => (r.kind === 'validation' ? [{ after: r.step, v: r.validation }] : r.validation ? [{ after: r.step + 1, v: r.validation }] : []));
}

export interface MethodSummary {
  method: string;
  seeds: number[];
  /** Loop steps of the shortest run: what every figure below has in common. */
  steps: number;
  start: { own: MeanSe };
  final: {
    own: MeanSe;
    solver: MeanSe;
    /** Per level, in the method's own mode. */
    perLevel: Record<string, MeanSe>;
    problemAuc: MeanSe | null;
    planAuc: MeanSe | null;
    planShown: MeanSe | null;
  };
  /** Problems admitted to the bank by the end. */
  admitted: MeanSe;
  /** Of the plans the environment could read over each run's last PLANS_WINDOW steps, the share computing the answer (null: no such plans, or records before the metric). */
  plansRight: MeanSe | null;
  /** At each validation every run made: the own-mode accuracy, and the bank size. */
  curve: { after: number; own: MeanSe; solver: MeanSe }[];
  bank: { after: number; size: MeanSe }[];
}

const defined = <T>(xs: readonly (T | null | undefined)[]): T[] => xs.filter((x): x is T => x !== null && x !== undefined);

/** Steps at the end of a run over which the share of right plans is averaged: one step's few plans are noise. */
export const PLANS_WINDOW = 10;

export function summarize(runs: readonly ComparedRun[]): MethodSummary[] {
  const methods = [...new Set(runs.map((r) => r.method))];
  return methods.map((method) => {
    const mine = runs.filter((r) => r.method === method);
    const points = mine.map((r) => validations(r.records));
    const stepsOf = (r: ComparedRun) => r.records.filter((x) => x.kind === 'step').length;
    const steps = Math.min(...mine.map(stepsOf));
    // The last validation each run made at or before the shortest run's end.
    const finals = defined(points.map((ps) => ps.filter((p) => p.after <= steps).at(-1)?.v));
    const common = [...new Set(points.flatMap((ps) => ps.map((p) => p.after)))].filter((a) => a <= steps && points.every((ps) => ps.some((p) => p.after === a))).sort((a, b) => a - b);
    const at = (a: number) => points.map((ps) => ps.find((p) => p.after === a)!.v);
    const levels = [...new Set(finals.flatMap((v) => Object.keys((v.planned ?? v).perLevel)))].sort();
    const optional = (xs: (number | null | undefined)[]) => {
      const d = defined(xs);
      return d.length ? meanSe(d) : null;
    };
    const stepsRecords = mine.map((r) => r.records.filter((x): x is Extract<MetricsRecord, { kind: 'step' }> => x.kind === 'step'));
    const bankSteps = [...new Set(stepsRecords.flatMap((rs) => rs.map((x) => x.step + 1)))].filter((a) => a <= steps).sort((a, b) => a - b);
    return {
      method,
      seeds: mine.map((r) => r.seed),
      steps,
      start: { own: meanSe(defined(points.map((ps) => ps[0]?.v)).map(ownAccuracy)) },
      final: {
        own: meanSe(finals.map(ownAccuracy)),
        solver: meanSe(finals.map((v) => v.accuracy)),
        perLevel: Object.fromEntries(levels.map((l) => [l, meanSe(defined(finals.map((v) => (v.planned ?? v).perLevel[l]?.accuracy)))])),
        problemAuc: optional(finals.map((v) => v.critic?.problemAuc)),
        planAuc: optional(finals.map((v) => v.critic?.planAuc)),
        planShown: optional(finals.map((v) => v.planned?.planShown)),
      },
      admitted: meanSe(stepsRecords.map((rs) => rs.filter((x) => x.step < steps).at(-1)?.bank.admitted ?? 0)),
      plansRight: optional(stepsRecords.map((rs) => {
        const window = defined(rs.filter((x) => x.step < steps && x.step >= steps - PLANS_WINDOW).map((x) => x.plansRight));
        return window.length ? mean(window) : null;
      })),
      curve: common.map((after) => ({ after, own: meanSe(at(after).map(ownAccuracy)), solver: meanSe(at(after).map((v) => v.accuracy)) })),
      bank: bankSteps.map((after) => ({ after, size: meanSe(defined(stepsRecords.map((rs) => rs.find((x) => x.step + 1 === after)?.bank.size))) })),
    };
  });
}

/** a − b with the standard error of a difference of independent means, and how many of them it is. */
export function difference(a: MeanSe, b: MeanSe): { diff: number; se: number | null; z: number | null } {
  const diff = a.mean - b.mean;
  if (a.se === null || b.se === null) return { diff, se: null, z: null };
  const se = Math.sqrt(a.se ** 2 + b.se ** 2);
  return { diff, se, z: se > 0 ? diff / se : null };
}

const pct = (m: MeanSe | null | undefined) => (!m || !m.n ? '-' : `${(100 * m.mean).toFixed(1)}${m.se === null ? '' : ` ± ${(100 * m.se).toFixed(1)}`}`);
const num = (m: MeanSe | null | undefined, digits = 2) => (!m || !m.n ? '-' : `${m.mean.toFixed(digits)}${m.se === null ? '' : ` ± ${m.se.toFixed(digits)}`}`);

/** The comparison as a Markdown table: percentages as mean ± standard error over seeds. */
export function compareTable(summaries: readonly MethodSummary[], baseline?: string): string {
  const levels = [...new Set(summaries.flatMap((s) => Object.keys(s.final.perLevel)))].sort();
  const base = summaries.find((s) => s.method === baseline);
  const head = ['method', 'seeds', 'steps', 'start', 'final (own mode)', 'Solver alone', ...levels.map((l) => `L${l}`), ...(base ? [`vs ${base.method}`] : []), 'plans shown', `plans right (last ${PLANS_WINDOW} steps)`, 'Critic AUC problems', 'Critic AUC plans', 'admitted'];
  const rows = summaries.map((s) => {
    const d = base && base !== s ? difference(s.final.own, base.final.own) : null;
    const vs = base ? [d ? `${d.diff >= 0 ? '+' : ''}${(100 * d.diff).toFixed(1)}${d.z === null ? '' : ` (${d.z.toFixed(1)} SE)`}` : '-'] : [];
    return [s.method, String(s.seeds.length), String(s.steps), pct(s.start.own), pct(s.final.own), pct(s.final.solver), ...levels.map((l) => pct(s.final.perLevel[l])), ...vs, pct(s.final.planShown), pct(s.plansRight), num(s.final.problemAuc), num(s.final.planAuc), num(s.admitted, 1)];
  });
  return [`| ${head.join(' | ')} |`, `|${head.map((_, i) => (i === 0 ? '---' : '--:')).join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

const COLOURS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2'];

/** What the chart draws of a method: its held-out accuracy (own mode, and the Solver alone where recorded) and bank size over steps, mean ± SE over its seeds. */
export type ChartSeries = Pick<MethodSummary, 'method' | 'seeds' | 'bank'> & { curve: { after: number; own: MeanSe; solver?: MeanSe }[] };

/**
 * The panels as one SVG, two a row: the held-out accuracy in each method's own mode, the
 * Solver alone (when any run recorded it: it differs from the own mode where plans are
 * shown), and the bank size over steps; each method's mean with a ±1 SE band; the legend in
 * the grid's free cell, or below it. The viewBox lets a page scale it to its width.
 */
export function compareChart(summaries: readonly ChartSeries[]): string {
  const PW = 480;
  const PH = 320;
  const M = { left: 60, right: 16, top: 34, bottom: 44 };
  type Series = { colour: string; points: { x: number; y: MeanSe }[] };
  const panel = (x0: number, y0: number, title: string, yLabel: string, series: Series[], scale: number) => {
    const pts = series.flatMap((s) => s.points);
    const maxX = Math.max(1, ...pts.map((p) => p.x));
    const lo = (p: { y: MeanSe }) => scale * (p.y.mean - (p.y.se ?? 0));
    const hi = (p: { y: MeanSe }) => scale * (p.y.mean + (p.y.se ?? 0));
    let minY = Math.min(...pts.map(lo));
    let maxY = Math.max(...pts.map(hi));
    if (!pts.length) (minY = 0), (maxY = 1);
    if (maxY - minY < 1e-9) (minY -= 1), (maxY += 1);
    const pad = 0.08 * (maxY - minY);
    minY = Math.max(0, minY - pad);
    maxY += pad;
    const w = PW - M.left - M.right;
    const h = PH - M.top - M.bottom;
    const sx = (x: number) => (x0 + M.left + (x / maxX) * w).toFixed(1);
    const sy = (y: number) => (y0 + M.top + h - ((y - minY) / (maxY - minY)) * h).toFixed(1);
    const out = [`<text x="${x0 + M.left + w / 2}" y="${y0 + 20}" text-anchor="middle" font-weight="600">${title}</text>`];
    for (let i = 0; i <= 4; i++) {
      const y = minY + ((maxY - minY) * i) / 4;
      out.push(`<line x1="${sx(0)}" x2="${sx(maxX)}" y1="${sy(y)}" y2="${sy(y)}" stroke="#e5e7eb"/>`, `<text x="${+sx(0) - 6}" y="${+sy(y) + 4}" text-anchor="end">${y.toFixed(maxY - minY < 10 ? 1 : 0)}</text>`);
    }
    for (let i = 0; i <= 5; i++) out.push(`<text x="${sx(Math.round((maxX * i) / 5))}" y="${y0 + M.top + h + 18}" text-anchor="middle">${Math.round((maxX * i) / 5)}</text>`);
    out.push(
      `<text x="${x0 + M.left + w / 2}" y="${y0 + PH - 6}" text-anchor="middle">loop steps</text>`,
      `<text transform="translate(${x0 + 16} ${y0 + M.top + h / 2}) rotate(-90)" text-anchor="middle">${yLabel}</text>`,
      `<rect x="${sx(0)}" y="${y0 + M.top}" width="${w}" height="${h}" fill="none" stroke="#9ca3af"/>`,
    );
    for (const s of series) {
      if (!s.points.length) continue;
      const band = [...s.points.map((p) => `${sx(p.x)},${sy(hi(p))}`), ...[...s.points].reverse().map((p) => `${sx(p.x)},${sy(lo(p))}`)].join(' ');
      out.push(`<polygon points="${band}" fill="${s.colour}" fill-opacity="0.15" stroke="none"/>`);
      out.push(`<polyline fill="none" stroke="${s.colour}" stroke-width="2" points="${s.points.map((p) => `${sx(p.x)},${sy(scale * p.y.mean)}`).join(' ')}"/>`);
      for (const p of s.points) out.push(`<circle cx="${sx(p.x)}" cy="${sy(scale * p.y.mean)}" r="3" fill="${s.colour}"/>`);
    }
    return out.join('\n');
  };
  const colour = (i: number) => COLOURS[i % COLOURS.length]!;
  const accuracy = (pick: (c: ChartSeries['curve'][number]) => MeanSe | undefined) =>
    summaries.map((s, i) => ({ colour: colour(i), points: s.curve.flatMap((c) => (pick(c) ? [{ x: c.after, y: pick(c)! }] : [])) }));
  const solver = accuracy((c) => c.solver);
  const panels = [
    { title: 'Held-out accuracy, own inference mode (mean ± SE)', yLabel: 'accuracy (%)', series: accuracy((c) => c.own), scale: 100 },
    ...(solver.some((s) => s.points.length) ? [{ title: 'Held-out accuracy, the Solver alone (mean ± SE)', yLabel: 'accuracy (%)', series: solver, scale: 100 }] : []),
    { title: 'Problem bank (mean ± SE)', yLabel: 'problems', series: summaries.map((s, i) => ({ colour: colour(i), points: s.bank.map((b) => ({ x: b.after, y: b.size })) })), scale: 1 },
  ];
  const cell = (k: number) => ({ x: (k % 2) * PW, y: Math.floor(k / 2) * PH });
  const labels = summaries.map((s) => `${s.method}${s.seeds.length > 1 ? ` (${s.seeds.length} seeds)` : ''}`);
  // An odd panel count leaves the last row's right cell free: the legend goes there as a column.
  const free = panels.length % 2 === 1 ? cell(panels.length) : null;
  const rows = Math.ceil(panels.length / 2);
  const legendAt = (i: number) => (free ? { x: free.x + M.left, y: free.y + M.top + 10 + i * 22 } : { x: M.left + (i % 3) * 300, y: rows * PH + 12 + Math.floor(i / 3) * 20 });
  const legend = labels
    .map((label, i) => {
      const at = legendAt(i);
      return `<rect x="${at.x}" y="${at.y - 6}" width="14" height="4" fill="${colour(i)}"/><text x="${at.x + 20}" y="${at.y}">${label}</text>`;
    })
    .join('\n');
  const height = free ? rows * PH : rows * PH + 12 + Math.ceil(labels.length / 3) * 20;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${2 * PW}" height="${height}" viewBox="0 0 ${2 * PW} ${height}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
${panels.map((p, k) => panel(cell(k).x, cell(k).y, p.title, p.yLabel, p.series, p.scale)).join('\n')}
${legend}
</svg>
`;
}
