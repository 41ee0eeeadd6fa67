// `npm run eval -- --samples N --corpus-form` with the sampling done elsewhere: where the engine
// on SwiftShader would take hours for N samples of 400 problems in two forms, a reference
// generator on the CPU (scripts/fixtures/sample_reference.py, transformers) completes the very
// prompts eval puts, and eval's own code judges and tallies what it wrote.
//   prompts: the held-out problems eval takes for --limit, in each form, with eval's prompt, token
//            limit and stop strings (src/sage/sampledValidation.ts VALIDATION_FORMS)
//   judge:   the completions (greedy, and n samples a prompt) judged by the form's judge, tallied
//            per level and pooled as eval tallies them (greedy and pass@k), printed as eval prints them
// Usage: npx tsx scripts/reference-eval.ts --prompts OUT.jsonl [--limit 400]
//        npx tsx scripts/reference-eval.ts --judge COMPLETIONS.jsonl --out DIR
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SHIPPED_SPLITS } from '../src/data/curriculum';
import { readProblemFile } from '../src/data/nodeFile';
import { EVAL_SAMPLES, formsTable } from '../src/research/evaluation';
import { stratified } from '../src/sage/run';
import { FORM_NAMES, perLevel, tally, VALIDATION_FORMS, type FormName, type FormResult, type SampledOutcome } from '../src/sage/sampledValidation';
import { COMPACT_TEMPLATES } from '../src/sage/templates';
import { createValidators } from '../src/sage/validators';
import { DEFAULT_LOOP } from '../src/sage/loopContract';
import { isMain, runCli, UsageError, type OptionValues } from '../src/cli/options';

export const referenceEvalCli = {
  name: 'reference-eval',
  summary: "eval's prompts for a reference generator, and its completions judged and tallied as eval does.",
  options: {
    prompts: { type: 'string', arg: 'FILE', help: 'write the prompts (JSONL: id, level, form, prompt, maxNewTokens, stop)' },
    judge: { type: 'string', arg: 'FILE', exists: 'file', help: 'judge completions (JSONL: id, form, greedy, samples) and tally them' },
    out: { type: 'string', arg: 'DIR', help: `with --judge: folder for ${EVAL_SAMPLES} and summary.json` },
    validation: { type: 'string', arg: 'FILE', exists: 'file', default: SHIPPED_SPLITS.validation.file, help: 'held-out problems' },
    limit: { type: 'int', min: 1, default: 400, help: 'problems, taken in turn from each level as eval --limit takes them' },
  },
} as const;

interface Completions {
  id: string;
  form: FormName;
  greedy: string;
  samples: string[];
}

/** Text up to and with the first stop string: what the engine returns when generation stops there. */
const cut = (text: string, stop: readonly string[]) => stop.reduce((t, s) => (t.includes(s) ? t.slice(0, t.indexOf(s) + s.length) : t), text);

async function main(o: OptionValues<typeof referenceEvalCli.options>): Promise<void> {
  const problems = stratified((await readProblemFile(o.validation)).problems, o.limit);
  if (o.prompts) {
    const lines = FORM_NAMES.flatMap((form) => {
      const f = VALIDATION_FORMS[form];
      return problems.filter((p) => f.applies(p)).map((p) => ({ id: p.id, level: p.level, form, prompt: f.prompt(p, COMPACT_TEMPLATES), maxNewTokens: f.maxNewTokens(DEFAULT_LOOP.maxNewTokens.solver), stop: f.stop }));
    });
    writeFileSync(o.prompts, lines.map((l) => JSON.stringify(l) + '\n').join(''));
    console.log(`${lines.length} prompts (${problems.length} problems, forms ${FORM_NAMES.join(', ')}) to ${o.prompts}`);
    return;
  }
  if (!o.judge || !o.out) throw new UsageError('give --prompts FILE, or --judge FILE with --out DIR');
  const byId = new Map(problems.map((p) => [p.id, p]));
  const completions = readFileSync(o.judge, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Completions);
  const validators = createValidators();
  const samples = Math.min(...completions.map((c) => c.samples.length));
  const results: FormResult[] = [];
  for (const form of FORM_NAMES) {
    const f = VALIDATION_FORMS[form];
    const mine = completions.filter((c) => c.form === form);
    if (!mine.length) continue;
    const outcomes: SampledOutcome[] = [];
    for (const c of mine) {
      const p = byId.get(c.id);
      if (!p) throw new Error(`${o.judge}: ${c.id} is not among the ${problems.length} problems`);
      const verdicts = await Promise.all(c.samples.slice(0, samples).map((t) => f.judge(p, cut(t, f.stop), validators)));
      outcomes.push({ id: p.id, ...(p.level === undefined ? {} : { level: p.level }), greedy: await f.judge(p, cut(c.greedy, f.stop), validators), n: verdicts.length, c: verdicts.filter((v) => v >= 1).length });
    }
    results.push({ form, all: tally(outcomes, samples), perLevel: perLevel(outcomes, samples), outcomes });
  }
  mkdirSync(o.out, { recursive: true });
  writeFileSync(join(o.out, EVAL_SAMPLES), results.map((f) => JSON.stringify({ form: f.form, samples, problems: f.outcomes }) + '\n').join(''));
  writeFileSync(join(o.out, 'summary.json'), JSON.stringify({ completions: o.judge, validation: o.validation, limit: o.limit, samples, forms: Object.fromEntries(results.map((f) => [f.form, { all: f.all, perLevel: f.perLevel }])) }, null, 2) + '\n');
  console.log(`greedy, pass@k from ${samples} samples a problem, by form:\n${formsTable(results)}`);
}

if (isMain(import.meta.url)) await runCli(referenceEvalCli, main);
