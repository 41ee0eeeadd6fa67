/**
 * A comparison's curves as one SVG (compareChart): held-out accuracy and the problem bank over
 * loop steps, each method's mean over its seeds with a band of ±1 standard error.
 */
import { CEILING, type MeanSe, type MethodSummary } from './compare';

/** Words in lines of at most `width` characters (a longer word on its own line). */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  for (const word of text.split(' ')) {
    const last = lines.at(-1);
    if (last !== undefined && last.length + 1 + word.length <= width) lines[lines.length - 1] = `${last} ${word}`;
    else lines.push(word);
  }
  return lines;
}

const COLOURS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2'];

/** What the chart draws of a method: its held-out accuracy (own mode, and the Solver alone where recorded) and bank size over steps, mean ± SE over its seeds. */
export type ChartSeries = Pick<MethodSummary, 'method' | 'seeds' | 'bank'> & { curve: { after: number; own: MeanSe; solver?: MeanSe }[]; ceiling?: string | null };

/**
 * The panels as one SVG, two a row: the held-out accuracy in each method's own mode, the
 * Solver alone (when any run recorded it: it differs from the own mode where plans are
 * shown), and the bank size over steps; each method's mean with a band of ±1 standard error
 * over its seeds (the spread between seeds only: the sampling of the problems is in the
 * table's paired intervals, not here), titled so; the ceiling dashed, its legend saying what it
 * is; the legend in the grid's free cell, or below it. The viewBox lets a page scale it to its width.
 */
export function compareChart(summaries: readonly ChartSeries[]): string {
  const PW = 480;
  const PH = 320;
  const M = { left: 60, right: 16, top: 34, bottom: 44 };
  type Series = { colour: string; dashed: boolean; points: { x: number; y: MeanSe }[] };
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
      out.push(`<polyline fill="none" stroke="${s.colour}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ''} points="${s.points.map((p) => `${sx(p.x)},${sy(scale * p.y.mean)}`).join(' ')}"/>`);
      for (const p of s.points) out.push(`<circle cx="${sx(p.x)}" cy="${sy(scale * p.y.mean)}" r="3" fill="${s.colour}"/>`);
    }
    return out.join('\n');
  };
  const colour = (i: number) => COLOURS[i % COLOURS.length]!;
  // The ceiling is a reference, not a method: dashed, and its legend says what it is.
  const dashed = (s: ChartSeries) => s.ceiling === s.method;
  const accuracy = (pick: (c: ChartSeries['curve'][number]) => MeanSe | undefined) =>
    summaries.map((s, i) => ({ colour: colour(i), dashed: dashed(s), points: s.curve.flatMap((c) => (pick(c) ? [{ x: c.after, y: pick(c)! }] : [])) }));
  const solver = accuracy((c) => c.solver);
  const panels = [
    { title: 'Held-out accuracy, own inference mode (mean ± 1 SE over seeds)', yLabel: 'accuracy (%)', series: accuracy((c) => c.own), scale: 100 },
    ...(solver.some((s) => s.points.length) ? [{ title: 'Held-out accuracy, the Solver alone (mean ± 1 SE over seeds)', yLabel: 'accuracy (%)', series: solver, scale: 100 }] : []),
    { title: 'Problem bank (mean ± 1 SE over seeds)', yLabel: 'problems', series: summaries.map((s, i) => ({ colour: colour(i), dashed: dashed(s), points: s.bank.map((b) => ({ x: b.after, y: b.size })) })), scale: 1 },
  ];
  const cell = (k: number) => ({ x: (k % 2) * PW, y: Math.floor(k / 2) * PH });
  // Each entry's lines: the method and its seeds, then for the ceiling what it is, wrapped to a legend column.
  const labels = summaries.map((s) => [`${s.method}${s.seeds.length > 1 ? ` (${s.seeds.length} seeds)` : ''}`, ...(dashed(s) ? wrap(CEILING.label, 44) : [])]);
  const LINE = 15;
  // An odd panel count leaves the last row's right cell free: the legend goes there as a column.
  const free = panels.length % 2 === 1 ? cell(panels.length) : null;
  const rows = Math.ceil(panels.length / 2);
  const extra = (i: number) => labels[i]!.length - 1;
  const rowExtra = (r: number) => Math.max(0, ...labels.slice(3 * r, 3 * r + 3).map((l) => l.length - 1));
  const legendAt = (i: number) => {
    if (free) return { x: free.x + M.left, y: free.y + M.top + 10 + i * 22 + LINE * labels.slice(0, i).reduce((a, l) => a + l.length - 1, 0) };
    const row = Math.floor(i / 3);
    return { x: M.left + (i % 3) * 300, y: rows * PH + 12 + row * 20 + LINE * Array.from({ length: row }, (_, r) => rowExtra(r)).reduce((a, b) => a + b, 0) };
  };
  const legend = labels
    .map((lines, i) => {
      const at = legendAt(i);
      const mark = dashed(summaries[i]!)
        ? `<line x1="${at.x}" x2="${at.x + 14}" y1="${at.y - 4}" y2="${at.y - 4}" stroke="${colour(i)}" stroke-width="2" stroke-dasharray="4 2"/>`
        : `<rect x="${at.x}" y="${at.y - 6}" width="14" height="4" fill="${colour(i)}"/>`;
      const text = lines.map((line, k) => `<tspan x="${at.x + 20}" dy="${k ? LINE : 0}">${line}</tspan>`).join('');
      return `${mark}<text x="${at.x + 20}" y="${at.y}">${extra(i) ? text : lines[0]}</text>`;
    })
    .join('\n');
  const legendRows = Math.ceil(labels.length / 3);
  const height = free ? rows * PH : rows * PH + 12 + legendRows * 20 + LINE * Array.from({ length: legendRows }, (_, r) => rowExtra(r)).reduce((a, b) => a + b, 0);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${2 * PW}" height="${height}" viewBox="0 0 ${2 * PW} ${height}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
${panels.map((p, k) => panel(cell(k).x, cell(k).y, p.title, p.yLabel, p.series, p.scale)).join('\n')}
${legend}
</svg>
`;
}
