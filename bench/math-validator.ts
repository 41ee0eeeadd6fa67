/**
 * Throughput of the math validator: every shipped GSM8K and MATH worked solution judged
 * against its reference answer (extraction, normalisation, equivalence), repeated.
 *   npx tsx bench/math-validator.ts
 */
import { readProblemFile } from '../src/data/nodeFile';
import type { MathProblem } from '../src/data/problem';
import { judgeMath } from '../src/verify/math';

const FILES = ['data/seeds/gsm8k-148.jsonl', 'data/seeds/math-156.jsonl', 'data/validation/gsm8k-test-1319.jsonl', 'data/validation/math500-344.jsonl'];
const ROUNDS = 5;

const problems: MathProblem[] = [];
for (const f of FILES) problems.push(...((await readProblemFile(f)).problems as MathProblem[]));
let correct = 0;
for (const p of problems) if (judgeMath(p.solution!, p.answer!).correct) correct++; // warm-up, and the check that all agree
const t0 = performance.now();
for (let r = 0; r < ROUNDS; r++) for (const p of problems) judgeMath(p.solution!, p.answer!);
const s = (performance.now() - t0) / 1000;
console.log(`${problems.length} reference solutions (${correct} judged correct); ${ROUNDS * problems.length} checks in ${s.toFixed(2)} s: ${Math.round((ROUNDS * problems.length) / s)} checks/s`);
