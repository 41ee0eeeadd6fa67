/**
 * A whole evolution run, shared by `npm run evolve` and the lab's engine worker: the
 * warm-up SFT that teaches a model from scratch the roles' formats, then loop steps with
 * validation every E steps, the best checkpoint kept, early stopping, and every record
 * (metrics, transcripts, bank events) handed to a RunStore as it happens so that a run can
 * be resumed from what was saved. Knows nothing of the GPU: the model comes as RunModel.
 */
import { hasReference, type Problem } from '../data/problem';
import type { SftPair } from '../data/sftPairs';
import type { SftDocument, SftExample } from '../train/sft';
import { rng } from '../util/random';
import { ProblemBank, type BankEvent } from './bank';
import type { MethodConfig, RoleName } from './config';
import { criticProbe, type CriticProbe } from './criticData';
import { runShapeHints, SageLoop, type StepMetrics, type Transcript } from './loop';
import type { LoopModel, LoopSettings, Phase, Validators } from './loopContract';
import { DEFAULT_RUN, type RunSettings } from './settings';
import { createValidators } from './validators';
import { EarlyStopping, validate, type Validated, type ValidationOptions, type ValidationOutcomes, type ValidationResult } from './validation';
import { corpusProblems, rehearsalDocuments, warmupPairs, writeOwnProblems } from './warmup';

/** The model side of a run: the loop's generation and update, SFT for the warm-up, checkpoints. */
export interface RunModel extends LoopModel {
  warmup(examples: SftExample[], steps: number, onStep: (step: number, loss: number) => void): Promise<void>;
  /** Saves weights and optimizer state under a tag ('best', 'last'). */
  saveCheckpoint(tag: string): Promise<void>;
}

/** One line of metrics.jsonl: a loop step (with its validation when one ran), or the validation before the first step. */
export type MetricsRecord =
  | ({ kind: 'step' } & StepMetrics & { validation?: ValidationResult })
  | { kind: 'validation'; step: number; validation: ValidationResult };

/** Where a run's records go as they happen (files in Node, OPFS/IndexedDB in the browser). */
export interface RunStore {
  metrics(m: MetricsRecord): Promise<void>;
  transcripts(t: Transcript[]): Promise<void>;
  /** Each held-out problem's outcome at a validation, one record per mode (outcomes.jsonl). */
  outcomes(o: ValidationOutcomes[]): Promise<void>;
  bank(e: BankEvent): void;
  /** The run's state after each step (with the weights as they are now, what an export of the run needs). */
  state(s: RunState): Promise<void>;
  /**
   * Where a run resumes from its `last/` checkpoint (a folder on disk, which a killed process
   * leaves as it was): `last/` is saved every `every` steps and at the end, and `saved` gets
   * the state that goes with it, the one a resumed run continues from.
   */
  checkpointing?: { every: number; saved(s: RunState): Promise<void> };
}

export interface RunState {
  /** Steps completed. */
  step: number;
  best: ValidationResult | null;
  evaluationsWithoutGain: number;
  warmedUp: boolean;
}

export type RunEvent =
  /** Problems the model wrote before the warm-up for the `own` Challenger warm-up: how many it wrote, how many read as a problem, a few. */
  | { type: 'own-problems'; written: number; read: number; examples: { question: string; answer: string }[] }
  /** Corpus documents rehearsed in the warm-up beside its role pairs (warmupRehearsal). */
  | { type: 'rehearsal'; documents: number; pairs: number }
  | { type: 'warmup'; step: number; of: number; loss: number }
  /** Kernels being tuned for the run's shapes before its first step: `done` of `total` shape classes. */
  | { type: 'tuning'; done: number; total: number }
  | { type: 'phase'; step: number; phase: Phase | 'validate' }
  | { type: 'paused'; step: number; phase: Phase | 'step' }
  | { type: 'resumed'; step: number }
  | { type: 'step'; metrics: StepMetrics; transcripts: Transcript[] }
  /** With each problem's outcome per mode, for a paired comparison of runs (absent where a run's records predate them). */
  | { type: 'validation'; result: ValidationResult; best: boolean; outcomes?: ValidationOutcomes[] }
  | { type: 'done'; reason: 'steps' | 'early-stop' | 'stopped'; state: RunState };

/**
 * At most `limit` problems taken in turn from each (source, level) group in file order, so
 * that a subset of a split sorted by level still covers every level and source.
 */
export function stratified(problems: readonly Problem[], limit: number): Problem[] {
  const groups = new Map<string, Problem[]>();
  for (const p of problems) {
    const key = `${p.source}/${p.level ?? ''}`;
    const g = groups.get(key);
    if (g) g.push(p);
    else groups.set(key, [p]);
  }
  const lists = [...groups.values()];
  const out: Problem[] = [];
  for (let i = 0; out.length < Math.min(limit, problems.length); i++) {
    for (const g of lists) if (i < g.length && out.length < limit) out.push(g[i]!);
  }
  return out;
}

/** Held-out problems the Critic's AUC is measured on (each real and corrupted, its plan matching and wrong; at most validationLimit), and their seed: fixed, so runs compare. */
const CRITIC_PROBE_PROBLEMS = 100;
const CRITIC_PROBE_SEED = 0x5a6e;

/** A run's Critic probe, within the validation's budget: a run that validates on a few problems probes the Critic on as few. */
export function heldOutCriticProbe(validation: readonly Problem[], validationLimit: number): CriticProbe {
  return criticProbe(stratified(validation, Math.min(CRITIC_PROBE_PROBLEMS, validationLimit)), rng(CRITIC_PROBE_SEED));
}

/** The settings a validation needs: what the method infers with (its own mode, its Critic), its prompts and token limits. */
export type ValidationSettings = Pick<RunSettings, 'method' | 'templates' | 'maxNewTokens'>;

/** How a run validates after `step`: the Solver alone, the method's own mode when it has a Planner and a Critic, the Critic's AUC when it has one. */
export function validationOptions(s: ValidationSettings, step: number, probe: CriticProbe): ValidationOptions {
  const has = (role: RoleName) => s.method.roles.includes(role);
  return {
    templates: s.templates,
    maxNewTokens: s.maxNewTokens,
    step,
    planned: has('planner') && has('critic') ? { rewards: s.method.rewards } : undefined,
    criticProbe: has('critic') ? probe : undefined,
    unparsableScore: s.method.rewards.unparsableScore,
  };
}

/**
 * A model validated on its own, outside a run (`npm run eval`, the lab's Evaluate): the same
 * problems a run with this validationLimit validates on, the same Critic probe, the same call.
 */
export function validateHeldOut(model: Pick<LoopModel, 'generate'>, validators: Validators, validation: readonly Problem[], s: ValidationSettings & Pick<RunSettings, 'validationLimit'>, step = 0): Promise<Validated> {
  checkReferences([], validation, s.method);
  return validate(model, validators, stratified(validation, s.validationLimit), validationOptions(s, step, heldOutCriticProbe(validation, s.validationLimit)));
}

/** A run's bank options: the method's difficulty weight, the near-duplicate threshold. */
function bankOptions(method: MethodConfig, nearDuplicate: number) {
  return { alpha: method.rewards.alpha, nearDuplicate };
}

/**
 * A loop on a fresh bank of these seeds, as a run starts one, without a run's records, validation
 * or resume: what the benchmarks and scripts step.
 */
export function detachedLoop(model: LoopModel, seeds: readonly Problem[], settings: LoopSettings, onPhase?: (phase: Phase) => void | Promise<void>, nearDuplicate = DEFAULT_RUN.nearDuplicate): SageLoop {
  const { bank } = ProblemBank.fromSeeds(seeds, bankOptions(settings.method, nearDuplicate));
  return new SageLoop(model, createValidators(), bank, settings, onPhase);
}

/** Thrown at a phase boundary when a stop was asked for: the step in flight is abandoned. */
class StepAbandoned extends Error {}

/**
 * Refuses problems without a reference answer where the run needs one, before a run is built
 * (the CLI's, before it loads the model; the page's engine, as it starts or resumes a run): validation measures
 * accuracy against it, and a method with validators checks the Solver's answers on the
 * seeds with it. A validator-free method (MAE: the Judge scores the answers) trains on
 * questions alone.
 */
export function checkReferences(seeds: readonly Problem[], validation: readonly Problem[], method: MethodConfig): void {
  const missing = (ps: readonly Problem[]) => ps.filter((p) => !hasReference(p));
  const held = missing(validation);
  if (held.length) throw new Error(`validation: ${held.length} problems have no answer (first: ${held[0]!.id}); validation measures accuracy against a reference answer`);
  const seedsWithout = missing(seeds);
  if (seedsWithout.length && !method.validatorFree) {
    throw new Error(`seeds: ${seedsWithout.length} problems have no answer (first: ${seedsWithout[0]!.id}); ${method.name} checks the Solver's answers against them: give each an answer, or run a validator-free method (mae)`);
  }
}

/**
 * What the warm-up trains on: the seeds' pairs for every role (with the corpus's problems for
 * the Solver), and the corpus's documents rehearsed beside them, none stating an expression of
 * `validation`. A function of the settings, the files and the own problems alone, so that a
 * reference trainer can be given the very examples (scripts/warmup-examples.ts).
 */
/** The settings the warm-up's examples depend on. */
export type WarmupExampleSettings = Pick<
  RunSettings,
  'templates' | 'seed' | 'references' | 'challengerWarmup' | 'warmupSolverTarget' | 'warmupSolverShare' | 'warmupPlanVariants' | 'warmupAnswerPairs' | 'warmupCorpusProblems' | 'warmupRehearsal'
>;

export function warmupExamples(
  s: WarmupExampleSettings,
  seeds: readonly Problem[],
  validation: readonly Problem[],
  ownProblems?: readonly { question: string; answer: string }[],
): { pairs: SftPair[]; rehearsal: SftDocument[] } {
  // Its own stream (seed + 3), decontaminated from the held-out split as rehearsal is.
  const solverProblems = corpusProblems(s.warmupCorpusProblems, s.seed + 3, validation);
  const pairs = warmupPairs(seeds, { templates: s.templates, challenger: s.challengerWarmup, ownProblems, references: s.references, maxSolution: 160, solverTarget: s.warmupSolverTarget, solverShare: s.warmupSolverShare, planVariants: s.warmupPlanVariants, answerPairs: s.warmupAnswerPairs, solverProblems }, rng(s.seed));
  // Its own stream (seed + 2): the pairs use rng(seed), the own problems seed + 1.
  return { pairs, rehearsal: rehearsalDocuments(pairs.length, s.warmupRehearsal, s.seed + 2, validation) };
}

export class Evolution {
  readonly bank: ProblemBank;
  readonly loop: SageLoop;
  private readonly early: EarlyStopping;
  private stopRequested = false;
  /** Why the last run() ended. */
  endReason: 'steps' | 'early-stop' | 'stopped' | null = null;
  private pauseRequested = false;
  /** Pause again after the step in flight (stepOnce). */
  private pauseAfterStep = false;
  /** Set while paused: resolving it lets the run go on. */
  private paused: { release: () => void; done: Promise<void> } | null = null;
  /** The problems every validation uses: the same ones each time. */
  private readonly heldOut: readonly Problem[];
  /** The Critic's held-out pairs: the same ones every validation and every run. */
  private readonly criticProbe: CriticProbe;
  private state: RunState;

  constructor(
    readonly settings: RunSettings,
    readonly seeds: readonly Problem[],
    readonly validation: readonly Problem[],
    readonly model: RunModel,
    readonly validators: Validators,
    readonly store: RunStore,
    private readonly emit: (e: RunEvent) => void,
    /** A resumed run: its state and bank events. */
    resume?: { state: RunState; bankEvents: readonly BankEvent[] },
  ) {
    const options = bankOptions(settings.method, settings.nearDuplicate);
    this.bank = resume ? ProblemBank.replay(seeds, resume.bankEvents, options) : ProblemBank.fromSeeds(seeds, options).bank;
    this.bank.subscribe((e) => store.bank(e));
    this.loop = new SageLoop(model, validators, this.bank, settings, (phase) => this.boundary(phase));
    this.heldOut = stratified(validation, settings.validationLimit);
    this.criticProbe = heldOutCriticProbe(validation, settings.validationLimit);
    this.state = resume?.state ?? { step: 0, best: null, evaluationsWithoutGain: 0, warmedUp: false };
    this.early = new EarlyStopping(settings.patience, { best: this.state.best, since: this.state.evaluationsWithoutGain });
    this.loop.step = this.state.step;
  }

  /**
   * Ends the run at the next phase boundary: the step in flight is abandoned (no update has
   * been made in it, so the weights are those after the last whole step) and the last
   * checkpoint and state are saved.
   */
  stop(): void {
    this.stopRequested = true;
    this.paused?.release();
  }

  /** Holds the run at the next phase boundary until resume() or stepOnce(). */
  pause(): void {
    this.pauseRequested = true;
  }

  resume(): void {
    this.pauseRequested = false;
    this.pauseAfterStep = false;
    this.paused?.release();
  }

  /** From a pause: runs until the end of the step in flight (or one whole step), then pauses again. */
  stepOnce(): void {
    this.pauseAfterStep = true;
    this.pauseRequested = false;
    this.paused?.release();
  }

  get isPaused(): boolean {
    return this.paused !== null;
  }

  /** Between two phases: where a pause holds and a stop takes effect. */
  private async boundary(phase: Phase | 'step'): Promise<void> {
    if (this.pauseRequested && !this.stopRequested) {
      let release!: () => void;
      const done = new Promise<void>((r) => (release = r));
      this.paused = { release, done };
      this.emit({ type: 'paused', step: this.loop.step, phase });
      await done;
      this.paused = null;
      if (!this.stopRequested) this.emit({ type: 'resumed', step: this.loop.step });
    }
    if (this.stopRequested) throw new StepAbandoned();
    if (phase !== 'step') this.emit({ type: 'phase', step: this.loop.step, phase });
  }

  private async evaluate(): Promise<ValidationResult> {
    this.emit({ type: 'phase', step: this.loop.step, phase: 'validate' });
    const { result, outcomes } = await validate(this.model, this.validators, this.heldOut, validationOptions(this.settings, this.loop.step, this.criticProbe));
    await this.store.outcomes(outcomes);
    const best = this.early.record(result);
    this.state.best = this.early.best;
    this.state.evaluationsWithoutGain = this.early.since;
    if (best) await this.model.saveCheckpoint('best');
    this.emit({ type: 'validation', result, best, outcomes });
    return result;
  }

  /** The problems the model writes before its warm-up (writeOwnProblems), reported; none is refused. */
  private async ownProblems(): Promise<{ question: string; answer: string }[]> {
    const { written, read } = await writeOwnProblems((request) => this.model.generate(request), this.seeds, this.settings);
    this.emit({ type: 'own-problems', written, read: read.length, examples: read.slice(0, 5) });
    if (!read.length) throw new Error(`the own Challenger warm-up: none of the ${written} continuations the model wrote states a problem the environment reads with an answer (choose another challengerWarmup)`);
    return read;
  }

  private async saveLast(): Promise<void> {
    await this.model.saveCheckpoint('last');
    await this.store.checkpointing?.saved({ ...this.state });
  }

  async run(): Promise<RunState> {
    const s = this.settings;
    if (!this.state.warmedUp && s.warmupSteps > 0) {
      const ownProblems = s.challengerWarmup === 'own' ? await this.ownProblems() : undefined;
      const { pairs, rehearsal } = warmupExamples(s, this.seeds, this.validation, ownProblems);
      if (rehearsal.length) this.emit({ type: 'rehearsal', documents: rehearsal.length, pairs: pairs.length });
      await this.model.warmup([...pairs, ...rehearsal], s.warmupSteps, (step, loss) => this.emit({ type: 'warmup', step, of: s.warmupSteps, loss }));
      // Runs that compare methods start from this one warm-up (--model DIR --templates compact).
      await this.model.saveCheckpoint('warmup');
    }
    this.state.warmedUp = true;
    // Every shape the run can use is tuned now, not inside its steps (none on a machine that ran it before).
    if (this.model.prepare) {
      await this.model.prepare(runShapeHints(s, this.seeds, this.heldOut.length), (done, total) => this.emit({ type: 'tuning', done, total }));
    }
    // The accuracy the loop starts from.
    if (this.state.step === 0) {
      await this.store.metrics({ kind: 'validation', step: 0, validation: await this.evaluate() });
    }
    const end = this.state.step + s.steps;
    let reason: 'steps' | 'early-stop' | 'stopped' = 'steps';
    while (this.loop.step < end) {
      let result;
      try {
        await this.boundary('step');
        result = await this.loop.runStep();
      } catch (e) {
        if (!(e instanceof StepAbandoned)) throw e;
        reason = 'stopped';
        break;
      }
      const { metrics, transcripts } = result;
      if (this.pauseAfterStep) {
        this.pauseAfterStep = false;
        this.pauseRequested = true;
      }
      const validation = this.loop.step % s.evalEvery === 0 || this.loop.step === end ? await this.evaluate() : undefined;
      this.state.step = this.loop.step;
      await this.store.metrics({ kind: 'step', ...metrics, ...(validation ? { validation } : {}) });
      await this.store.transcripts(transcripts);
      await this.store.state({ ...this.state });
      this.emit({ type: 'step', metrics, transcripts });
      if (validation && this.early.stop) {
        reason = 'early-stop';
        break;
      }
      const every = this.store.checkpointing?.every;
      if (every && this.loop.step % every === 0 && this.loop.step < end) await this.saveLast();
    }
    await this.saveLast();
    await this.store.state({ ...this.state });
    this.endReason = reason;
    this.emit({ type: 'done', reason, state: { ...this.state } });
    return this.state;
  }
}
