// Draws runs' metrics.jsonl as one SVG: held-out accuracy (each run's own inference mode) and
// problem-bank size over loop steps, one line per run (src/research/compareChart.ts's chart,
// each run its own series). Usage: npx tsx scripts/run-chart.ts OUT.svg NAME=RUN_DIR [NAME=RUN_DIR ...]
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { summarize } from '../src/research/compare';
import { compareChart } from '../src/research/compareChart';
import type { MetricsRecord } from '../src/sage/run';
import { parseJsonl, RUN_FILES } from '../src/sage/runRecords';

const [out, ...specs] = process.argv.slice(2);
if (!out || !specs.length) {
  console.error('usage: npx tsx scripts/run-chart.ts OUT.svg NAME=RUN_DIR [NAME=RUN_DIR ...]');
  process.exit(2);
}
const runs = specs.map((spec) => {
  const [name, dir] = spec.split('=');
  if (!name || !dir) {
    console.error(`run-chart: "${spec}" is not NAME=RUN_DIR`);
    process.exit(2);
  }
  const file = join(dir, RUN_FILES.metrics);
  return { method: name, seed: 0, records: parseJsonl<MetricsRecord>(readFileSync(file, 'utf8'), file) };
});
writeFileSync(out, compareChart(summarize(runs)));
console.log(`wrote ${out}`);
