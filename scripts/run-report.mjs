// Summarises runs' metrics.jsonl as Markdown: validation accuracy (start, final, best, per level)
// and seconds per loop step split by phase, with the share spent generating.
// Usage: node scripts/run-report.mjs NAME=RUN_DIR [NAME=RUN_DIR ...]
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const specs = process.argv.slice(2);
if (!specs.length) {
  console.error('usage: node scripts/run-report.mjs NAME=RUN_DIR [NAME=RUN_DIR ...]');
  process.exit(2);
}
const pct = (x) => `${(100 * x).toFixed(1)}%`;
const mean = (xs) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
const runs = specs.map((spec) => {
  const [name, dir] = spec.split('=');
  return { name, records: readFileSync(join(dir, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l)) };
});

const levels = [...new Set(runs.flatMap((r) => r.records.flatMap((m) => Object.keys(m.validation?.perLevel ?? {}))))].sort();
console.log(`| run | steps | start | final | best (after step) | ${levels.map((l) => `final L${l}`).join(' | ')} |`);
console.log(`|---|--:|--:|--:|--:|${levels.map(() => '--:').join('|')}|`);
for (const { name, records } of runs) {
  const vals = records.filter((m) => m.validation).map((m) => ({ after: m.kind === 'validation' ? m.step : m.step + 1, v: m.validation }));
  const best = vals.reduce((a, b) => (b.v.accuracy > a.v.accuracy ? b : a));
  const last = vals.at(-1);
  const steps = records.filter((m) => m.kind === 'step').length;
  console.log(`| ${name} | ${steps} | ${pct(vals[0].v.accuracy)} | ${pct(last.v.accuracy)} | ${pct(best.v.accuracy)} (${best.after}) | ${levels.map((l) => (last.v.perLevel[l] ? pct(last.v.perLevel[l].accuracy) : '-')).join(' | ')} |`);
}

console.log('');
const phases = [...new Set(runs.flatMap((r) => r.records.flatMap((m) => Object.keys(m.seconds?.phases ?? {}))))];
console.log(`| run | s/step | ${phases.join(' | ')} | generation share | tokens/s |`);
console.log(`|---|--:|${phases.map(() => '--:').join('|')}|--:|--:|`);
for (const { name, records } of runs) {
  // The first step also tunes kernels for new shapes: left out of the means.
  const steps = records.filter((m) => m.kind === 'step').slice(1);
  if (!steps.length) continue;
  const total = mean(steps.map((m) => m.seconds.total));
  const cells = phases.map((p) => mean(steps.map((m) => m.seconds.phases?.[p] ?? 0)).toFixed(1));
  const gen = mean(steps.map((m) => m.seconds.generation)) / total;
  console.log(`| ${name} | ${total.toFixed(1)} | ${cells.join(' | ')} | ${pct(gen)} | ${mean(steps.map((m) => m.tokensPerS)).toFixed(0)} |`);
}
