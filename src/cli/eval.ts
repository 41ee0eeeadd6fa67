/**
 * `npm run eval`: a checkpoint scored on held-out problems on its own, with no run around it —
 * the loop's own validation (the same validate() call, problems, Critic probe and token
 * limits a run on this model would use): greedy pass@1 per source and level, the Solver alone
 * and in the method's own mode, the Critic's AUC, and every problem's outcome in a file. With
 * --samples N, pass@k too (N answers sampled a problem, the unbiased estimator), and with
 * --corpus-form greedy and pass@k in the arithmetic corpus's form beside the task's format
 * (sampledValidation.ts): what the model knows against what it answers where the loop reads it.
 *
 *   OUT/outcomes.jsonl  one line per mode with every problem's verdict and answer (a run's format)
 *   OUT/summary.json    what was evaluated, and the tallies (a ValidationResult; per form, greedy and pass@k)
 *   OUT/samples.jsonl   with --samples or --corpus-form: one line per form, each problem's greedy verdict and right samples of n
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { SHIPPED_SPLITS } from '../data/curriculum';
import { Runtime } from '../gpu/runtime';
import { PROMPT_SETS } from '../model/checkpoint';
import type { BaseDtype, KvDtype } from '../model/memory';
import { nodePlatform } from '../platform/node';
import { EVAL_SAMPLES, EVAL_SUMMARY, formsTable, validationTable } from '../research/evaluation';
import { DEFAULT_METHOD, METHODS, type MethodName } from '../sage/config';
import { stratified, validateHeldOut, type ValidationSettings } from '../sage/run';
import { RUN_FILES } from '../sage/runRecords';
import { DEFAULT_RUN, modelDefaults } from '../sage/settings';
import { TEMPLATE_SETS } from '../sage/templates';
import { FORM_NAMES, validateForm, VALIDATION_FORMS, type FormName, type FormResult } from '../sage/sampledValidation';
import { createValidators } from '../sage/validators';
import { sessionGenerate } from '../sage/runModel';
import { ModelSession } from '../train/session';
import { CodeVerifier } from '../verify/python/codeVerifier';
import { NodeSandboxPool } from '../verify/python/nodePool';
import { BASE_DTYPE_OPTION, KV_CACHE_OPTION } from './loraOptions';
import { isMain, runCli, UsageError, type OptionValues } from './options';
import { checkpointRecord, checkpointTemplates, importCheckpointFolder, logShards, readCheckpointFolder, recordedRunSettings, SHIPPED_MODEL } from './runFiles';
import { readConfig, readSplit } from './runInputs';

/** Rows sampled at once: 32 problems of 16 samples, within SwiftShader's memory as 400 greedy rows are. */
const SAMPLE_BATCH_ROWS = 512;

export const evalCli = {
  name: 'eval',
  summary: "A checkpoint's greedy pass@1 on held-out problems, per source and level, the Solver alone and in the method's own mode, and the Critic's AUC: the loop's validation, on its own, every problem's outcome kept.",
  options: {
    model: { type: 'string', arg: 'DIR', exists: 'dir', default: SHIPPED_MODEL, help: 'the checkpoint folder to evaluate (Hugging Face layout; a run\'s best/ or last/)' },
    validation: { type: 'string', arg: 'FILE', exists: 'file', default: SHIPPED_SPLITS.validation.file, help: 'held-out problems with reference answers (JSONL: curriculum, GSM8K, MATH, HumanEval, MBPP, Q/A)' },
    method: { type: 'string', choices: Object.keys(METHODS), default: DEFAULT_METHOD, help: "the method whose own mode is measured beside the Solver alone: a Planner and a Critic infer with the Planner's plan shown when the Critic passes it (sage); a Critic alone adds its AUC (mae); rlvr is the Solver alone" },
    templates: { type: 'string', choices: PROMPT_SETS, help: 'role prompts (default: those the checkpoint records in sage_lab.json, else instruct); they also set the token limits, as in a run' },
    limit: { type: 'int', min: 1, default: DEFAULT_RUN.validationLimit, help: 'problems, taken in turn from each source and level in file order: a run with --validation-limit N validates on the same ones' },
    config: { type: 'string', arg: 'FILE', exists: 'file', help: 'JSON loop settings as evolve --config takes them: its maxNewTokens replace the token limits (to score as a run with that file did)' },
    out: { type: 'string', arg: 'DIR', help: `folder for ${RUN_FILES.outcomes} and ${EVAL_SUMMARY} (default runs/eval-<model>-<date>)` },
    adapter: { type: 'string', arg: 'DIR', exists: 'dir', help: 'add this PEFT adapter folder (adapter_config.json, adapter_model.safetensors) to the model first' },
    samples: { type: 'int', min: 0, default: 0, help: 'answers sampled per problem at --temperature: pass@k for k = 1, 2, 5, 10, … and N (the unbiased estimator), per level and pooled, beside greedy (0: greedy only)' },
    temperature: { type: 'number', min: 0, minExclusive: true, default: 1, help: 'sampling temperature of --samples (top-k and top-p off)' },
    seed: { type: 'int', min: 0, default: 0, help: 'seed of the sampling (--samples)' },
    'corpus-form': { type: 'flag', help: "also score each problem with an expression in the arithmetic corpus's form: BOS, `EXPR =`, right when the continuation's first number is the answer (greedy, and sampled with --samples)" },
    'base-dtype': BASE_DTYPE_OPTION,
    'kv-cache': KV_CACHE_OPTION,
  },
  notes: [
    'env SAGE_GPU=hardware  use a real GPU instead of SwiftShader',
    'example: npm run eval -- --model runs/sage-1/best --validation data/validation/curriculum-1000.jsonl --limit 400',
    'example: npm run eval -- --model data/models/tiny-arith --method rlvr --limit 400 --samples 16 --corpus-form   (greedy and pass@16, task format and corpus form)',
  ],
} as const;

type Options = OptionValues<typeof evalCli.options>;

async function main(o: Options): Promise<void> {
  const out = o.out ?? join('runs', `eval-${basename(o.model)}-${new Date().toISOString().slice(0, 19).replace(/[:T]/g, '-')}`);
  // Outcomes appended to another evaluation's would read as one.
  const taken = [RUN_FILES.outcomes, EVAL_SUMMARY, EVAL_SAMPLES].find((f) => existsSync(join(out, f)));
  if (taken) throw new UsageError(`--out ${out} already holds an evaluation (${taken}): give another folder`);
  const validation = await readSplit(o.validation, 'validation');
  const problems = stratified(validation, o.limit);
  const forms: FormName[] = FORM_NAMES.filter((f) => f === 'task' || (f === 'corpus' && o['corpus-form']));
  if (o['corpus-form'] && !problems.some((p) => VALIDATION_FORMS.corpus.applies(p))) {
    throw new UsageError(`--corpus-form: none of the ${problems.length} held-out problems has an arithmetic expression to write as \`EXPR =\` (curriculum problems have one)`);
  }
  const sampled = o.samples > 0 || forms.length > 1;
  const record = checkpointRecord(o.model);
  const templates = checkpointTemplates(record, o.model, o.templates);
  const methodName = o.method as MethodName;
  const settings: ValidationSettings & { validationLimit: number } = {
    method: METHODS[methodName],
    templates: TEMPLATE_SETS[templates],
    // A run on this model generates within these limits (modelDefaults, then its record's), unless its --config said otherwise.
    maxNewTokens: (o.config ? readConfig(o.config).maxNewTokens : undefined) ?? recordedRunSettings(record, o.model).maxNewTokens ?? modelDefaults(templates, false).maxNewTokens,
    validationLimit: o.limit,
  };

  const rt = await Runtime.create(nodePlatform());
  const session = ModelSession.create(rt, { kind: 'checkpoint', checkpoint: importCheckpointFolder(o.model), name: o.model, onProgress: logShards, baseDtype: o['base-dtype'] as BaseDtype });
  if (o.adapter) session.setLora(null, { adapterFiles: readCheckpointFolder(o.adapter) });
  session.kvCache = o['kv-cache'] as KvDtype;
  const t = settings.maxNewTokens;
  console.log(
    `model ${o.model}${o.adapter ? ` + adapter ${o.adapter}` : ''} · ${(session.parameters / 1e6).toFixed(2)}M params · ${templates} prompts · ${settings.method.summary} · ` +
      `${Math.min(o.limit, validation.length)} of ${validation.length} held-out problems · token limits Planner ${t.planner}, Solver ${t.solver}, Critic ${t.critic} · adapter ${rt.ctx.adapter.key}`,
  );
  // Code problems are judged in Python sandboxes (separate processes, no network).
  const sandbox = validation.some((p) => p.kind === 'code') ? new NodeSandboxPool() : null;
  const started = Date.now();
  let validated;
  const formResults: FormResult[] = [];
  try {
    const model = { generate: sessionGenerate(session) };
    const validators = createValidators(sandbox ? new CodeVerifier(sandbox) : undefined);
    validated = await validateHeldOut(model, validators, validation, settings);
    if (sampled) {
      const options = { templates: settings.templates, solverTokens: settings.maxNewTokens.solver, samples: o.samples, temperature: o.temperature, seed: o.seed, batchRows: SAMPLE_BATCH_ROWS };
      // The task's greedy pass is the validation's Solver alone, on the same problems in the same order.
      const solverAlone = validated.outcomes.find((x) => x.mode === 'solver')!.problems.map((p) => p.verdict);
      for (const form of forms) {
        const onBatch = (done: number, total: number) => console.log(`${form} form: ${done}/${total} batches (${((Date.now() - started) / 1000).toFixed(0)} s)`);
        formResults.push(await validateForm(model, validators, problems, form, { ...options, onBatch }, form === 'task' ? solverAlone : undefined));
      }
    }
  } finally {
    sandbox?.close();
    session.destroy();
    rt.destroy();
  }
  const { result, outcomes } = validated;
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, RUN_FILES.outcomes), outcomes.map((x) => JSON.stringify(x) + '\n').join(''));
  const byForm = sampled ? { samples: o.samples, temperature: o.temperature, seed: o.seed, forms: Object.fromEntries(formResults.map((f) => [f.form, { all: f.all, perLevel: f.perLevel }])) } : {};
  const summary = { model: o.model, adapter: o.adapter ?? null, validation: o.validation, method: methodName, templates, limit: o.limit, maxNewTokens: settings.maxNewTokens, result, ...byForm };
  writeFileSync(join(out, EVAL_SUMMARY), JSON.stringify(summary, null, 2) + '\n');
  if (sampled) writeFileSync(join(out, EVAL_SAMPLES), formResults.map((f) => JSON.stringify({ form: f.form, samples: o.samples, temperature: o.temperature, problems: f.outcomes }) + '\n').join(''));
  console.log(`\ngreedy pass@1 (${((Date.now() - started) / 1000).toFixed(0)} s):\n${validationTable(result, methodName)}\n`);
  if (sampled) {
    const how = o.samples > 0 ? `, pass@k from ${o.samples} samples a problem at temperature ${o.temperature} (seed ${o.seed})` : '';
    console.log(`greedy${how}, by form (task: the Solver's template; corpus: \`EXPR =\`, the first number read):\n${formsTable(formResults)}\n`);
  }
  console.log(`every problem's outcome per mode in ${join(out, RUN_FILES.outcomes)}, the tallies in ${join(out, EVAL_SUMMARY)}${sampled ? `, per form in ${join(out, EVAL_SAMPLES)}` : ''}`);
}

/** The command on these arguments: the process's own when started from a shell, a test's in its process. */
export const run = (argv: readonly string[]): Promise<void> => runCli(evalCli, main, argv);

if (isMain(import.meta.url)) await run(process.argv.slice(2));
