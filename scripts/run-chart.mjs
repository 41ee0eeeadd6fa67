// Draws runs' metrics.jsonl as one SVG: validation accuracy and problem-bank size over loop
// steps, one line per run. Usage: node scripts/run-chart.mjs OUT.svg NAME=RUN_DIR [NAME=RUN_DIR ...]
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [out, ...specs] = process.argv.slice(2);
if (!out || !specs.length) {
  console.error('usage: node scripts/run-chart.mjs OUT.svg NAME=RUN_DIR [NAME=RUN_DIR ...]');
  process.exit(2);
}
const COLOURS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea'];
const runs = specs.map((spec, i) => {
  const [name, dir] = spec.split('=');
  const records = readFileSync(join(dir, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  // A step record's validation was measured after that step: it belongs at step + 1.
  const accuracy = records.filter((r) => r.validation).map((r) => [r.kind === 'validation' ? r.step : r.step + 1, 100 * r.validation.accuracy]);
  const bank = records.filter((r) => r.kind === 'step').map((r) => [r.step + 1, r.bank.size]);
  return { name, colour: COLOURS[i % COLOURS.length], accuracy, bank };
});

const W = 900;
const H = 300;
const M = { left: 64, right: 20, top: 36, bottom: 46 };
function panel(x0, title, yLabel, series) {
  const pts = series.flatMap((s) => s.points);
  const maxX = Math.max(1, ...pts.map((p) => p[0]));
  let minY = Math.min(...pts.map((p) => p[1]));
  let maxY = Math.max(...pts.map((p) => p[1]));
  if (maxY - minY < 1e-9) (minY -= 1), (maxY += 1);
  const pad = 0.08 * (maxY - minY);
  minY = Math.max(0, minY - pad);
  maxY += pad;
  const w = W / 2 - M.left - M.right;
  const h = H - M.top - M.bottom;
  const sx = (x) => x0 + M.left + (x / maxX) * w;
  const sy = (y) => M.top + h - ((y - minY) / (maxY - minY)) * h;
  const parts = [`<text x="${x0 + M.left + w / 2}" y="20" text-anchor="middle" font-weight="600">${title}</text>`];
  for (let i = 0; i <= 4; i++) {
    const y = minY + ((maxY - minY) * i) / 4;
    parts.push(`<line x1="${sx(0)}" x2="${sx(maxX)}" y1="${sy(y)}" y2="${sy(y)}" stroke="#e5e7eb"/>`);
    parts.push(`<text x="${sx(0) - 6}" y="${sy(y) + 4}" text-anchor="end">${y.toFixed(maxY - minY < 10 ? 1 : 0)}</text>`);
  }
  for (let i = 0; i <= 5; i++) {
    const x = Math.round((maxX * i) / 5);
    parts.push(`<text x="${sx(x)}" y="${M.top + h + 18}" text-anchor="middle">${x}</text>`);
  }
  parts.push(`<text x="${x0 + M.left + w / 2}" y="${H - 6}" text-anchor="middle">loop step</text>`);
  parts.push(`<text transform="translate(${x0 + 16} ${M.top + h / 2}) rotate(-90)" text-anchor="middle">${yLabel}</text>`);
  parts.push(`<rect x="${sx(0)}" y="${M.top}" width="${w}" height="${h}" fill="none" stroke="#9ca3af"/>`);
  for (const s of series) {
    if (!s.points.length) continue;
    parts.push(`<polyline fill="none" stroke="${s.colour}" stroke-width="2" points="${s.points.map((p) => `${sx(p[0])},${sy(p[1])}`).join(' ')}"/>`);
    for (const p of s.points) parts.push(`<circle cx="${sx(p[0])}" cy="${sy(p[1])}" r="3" fill="${s.colour}"/>`);
  }
  return parts.join('\n');
}

const legend = runs.map((r, i) => `<rect x="${M.left + i * 150}" y="${H + 4}" width="14" height="4" fill="${r.colour}"/><text x="${M.left + i * 150 + 20}" y="${H + 10}">${r.name}</text>`).join('\n');
const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H + 20}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
${panel(0, 'Validation accuracy (greedy pass@1)', 'accuracy (%)', runs.map((r) => ({ colour: r.colour, points: r.accuracy })))}
${panel(W / 2, 'Problem bank', 'problems', runs.map((r) => ({ colour: r.colour, points: r.bank })))}
${legend}
</svg>
`;
writeFileSync(out, svg);
console.log(`wrote ${out}`);
