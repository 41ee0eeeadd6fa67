/**
 * Role prompts as editable templates: `{{name}}` placeholders filled by one function, and
 * the output each role must produce (its tags, for the parsers). Short by default: a model
 * trained from scratch has a context of a few hundred bytes. A model with a chat template
 * wraps the rendered text as the user turn (the `wrap` hook).
 */
import type { Problem } from '../data/problem';
import type { PromptSet } from '../model/checkpoint';
import type { OutputSpec } from './parse';

export type TemplateName = 'challenger' | 'challengerCode' | 'planner' | 'solver' | 'solverWithPlan' | 'criticProblem' | 'criticPlan' | 'criticAnswer';
/** The Critic's templates: rating a problem, a plan, an answer (as MAE's Judge). */
export type CriticTemplate = Extract<TemplateName, 'criticProblem' | 'criticPlan' | 'criticAnswer'>;

/** The generation templates, and how one reference problem is shown to the Challenger (`reference` for math, `referenceCode` for code). */
export type Templates = Record<TemplateName | 'reference' | 'referenceCode', string>;

/** For instruction-tuned models: each prompt says what to write and in which tags. */
export const INSTRUCT_TEMPLATES: Templates = {
  challenger: 'Examples:\n{{references}}\nWrite one new, harder {{kind}} problem as <question>...</question> with its <answer>...</answer>.\n',
  challengerCode: 'Examples:\n{{references}}\nWrite one new, harder Python problem as <question>...</question>, a reference solution as <solution>...</solution> and assert statements that test it as <tests>...</tests>.\n',
  planner: 'Problem: {{problem}}\nWrite a short step-by-step plan as <plan>...</plan>.\n',
  solver: 'Problem: {{problem}}\nGive the final answer as <answer>...</answer>.\n',
  solverWithPlan: 'Problem: {{problem}}\nPlan: {{plan}}\nGive the final answer as <answer>...</answer>.\n',
  criticProblem: 'Problem: {{problem}}\nRate its quality from 1 to 10 as <score>N</score>.\n',
  criticPlan: 'Problem: {{problem}}\nPlan: {{plan}}\nRate the plan from 1 to 10 as <score>N</score>.\n',
  criticAnswer: 'Problem: {{problem}}\nAnswer: {{answer}}\nRate the answer from 1 to 10 as <score>N</score>.\n',
  reference: '<question>{{problem}}</question><answer>{{answer}}</answer>',
  referenceCode: '<question>{{problem}}</question><solution>{{solution}}</solution><tests>{{tests}}</tests>',
};

/**
 * For models trained from scratch, which learn the roles from the warm-up's examples rather
 * than from instructions: short prompts leave the context (256 bytes for `tiny`) to the
 * problem and the answer.
 */
export const COMPACT_TEMPLATES: Templates = {
  challenger: '{{references}}\nHarder {{kind}}:\n',
  challengerCode: '{{references}}\nHarder code:\n',
  planner: 'Plan: {{problem}}\n',
  solver: 'Solve: {{problem}}\n',
  solverWithPlan: 'Solve: {{problem}}\nPlan: {{plan}}\n',
  criticProblem: 'Rate problem: {{problem}}\n',
  criticPlan: 'Rate plan: {{problem}}\nPlan: {{plan}}\n',
  criticAnswer: 'Rate answer: {{problem}}\nAnswer: {{answer}}\n',
  reference: '{{problem}} {{answer}}',
  referenceCode: '{{problem}}',
};

export const DEFAULT_TEMPLATES = INSTRUCT_TEMPLATES;

/** Each set of role prompts by the name a checkpoint records (see LAB_RECORD). */
export const TEMPLATE_SETS: Readonly<Record<PromptSet, Templates>> = { compact: COMPACT_TEMPLATES, instruct: INSTRUCT_TEMPLATES };

/**
 * Which role prompts a model gets: the ones asked for, else the ones its checkpoint records
 * (those it was trained with), else compact for a model trained here from scratch and instruct
 * for a checkpoint that records none (a plain Hugging Face model, instruction-tuned).
 */
export function chooseTemplates(o: { given?: PromptSet; recorded?: PromptSet | null; fromScratch: boolean }): PromptSet {
  return o.given ?? o.recorded ?? (o.fromScratch ? 'compact' : 'instruct');
}

/** What each template's completion must contain. */
export const OUTPUTS: Record<TemplateName, OutputSpec> = {
  challenger: { tags: [{ name: 'question', required: true }, { name: 'answer', required: true }], textOutside: false },
  challengerCode: { tags: [{ name: 'question', required: true }, { name: 'solution', required: true }, { name: 'tests', required: true }], textOutside: false },
  planner: { tags: [{ name: 'plan', required: true }], textOutside: false },
  solver: { tags: [{ name: 'answer', required: true }], textOutside: true },
  solverWithPlan: { tags: [{ name: 'answer', required: true }], textOutside: true },
  criticProblem: { tags: [{ name: 'score', required: true }], textOutside: false },
  criticPlan: { tags: [{ name: 'score', required: true }], textOutside: false },
  criticAnswer: { tags: [{ name: 'score', required: true }], textOutside: false },
};

/** Closing tags that end a completion early: the stop strings of generation. */
export function stopStrings(name: TemplateName): string[] {
  const tags = OUTPUTS[name].tags;
  return [`</${tags[tags.length - 1]!.name}>`];
}

/**
 * Fills `{{name}}` placeholders. A placeholder without a value is an error (a template
 * edited in settings must not silently lose the problem); values are inserted verbatim.
 */
export function render(template: string, values: Readonly<Record<string, string>>, wrap: (text: string) => string = (t) => t): string {
  const text = template.replace(/\{\{(\w+)\}\}/g, (_, name: string) => {
    const v = values[name];
    if (v === undefined) throw new Error(`template placeholder {{${name}}} has no value (given: ${Object.keys(values).join(', ') || 'none'})`);
    return v;
  });
  return wrap(text);
}

/** A code problem's tests as assert lines, when it has them (MBPP-style problems and the Challenger's). */
export function assertLines(p: Problem): string[] | null {
  return p.kind === 'code' && p.tests.style === 'asserts' ? p.tests.asserts : null;
}

/** The Challenger's reference problems, one per line. */
export function referenceList(problems: readonly Problem[], templates: Templates): string {
  return problems
    .map((p) =>
      p.kind === 'math'
        ? render(templates.reference, { problem: p.statement, answer: p.answer ?? '' })
        : render(templates.referenceCode, { problem: p.statement, solution: p.solution ?? '', tests: (assertLines(p) ?? []).join('\n') }),
    )
    .join('\n');
}

/** The placeholders a template uses, for checking an edited template in settings. */
export function placeholders(template: string): string[] {
  return [...new Set([...template.matchAll(/\{\{(\w+)\}\}/g)].map((m) => m[1]!))];
}
