/**
 * A loop run inside the engine: the held model session as the run's model, its records kept
 * in memory (an export is their files), its events batched for the page, and the controls a
 * page needs (pause at a phase boundary, step once, resume, stop).
 */
import { importProblems } from '../data/import';
import { blobChunks } from '../data/lines';
import { problemToPair, readSftPairs } from '../data/sftPairs';
import { checkHeldOut } from '../data/content';
import { parseFieldMapping, type Problem } from '../data/problem';
import { kernelPlan } from '../gpu/kernelPlan';
import type { PromptSet } from '../model/checkpoint';
import { memorySink } from '../platform/fileSink';
import type { LoraConfig } from '../model/lora';
import type { ProblemBank } from '../sage/bank';
import { DEFAULT_METHOD, type MethodName } from '../sage/config';
import { checkReferences, Evolution, type RunState, type RunStore } from '../sage/run';
import { parseSettings, type RunSettings } from '../sage/settings';
import { MemoryRunStore } from '../sage/runRecords';
import { modelStart, recordedStart, resolveRunSettings } from '../sage/runSpec';
import { createValidators } from '../sage/validators';
import { sessionRunModel, warmupSft } from '../sage/runModel';
import { DEFAULT_POLICY, type ModelSession } from '../train/session';
import { batchEvery } from '../util/throttle';
import { CodeVerifier, type SandboxRunner } from '../verify/python/codeVerifier';
import type { EvolveEvent, EvolveRequest, EvolveResult, EvolveSettings, ProblemSetReport, SftPair, SftSeedsReport } from './api';
import type { RunAutosave } from './autosave';
import { errorText } from '../util/errorText';
import { compareLevels } from '../sage/levels';

/** Events reach the page at most this often. */
const EVENT_INTERVAL_MS = 250;
const PREVIEW = 5;
const REPORTED_ERRORS = 200;

/** A JSONL read as problems (detected per record, or through a `question=q,…` mapping); a file that is no problem set is refused. */
async function importFile(name: string, file: Blob, fields: string | undefined) {
  const mapping = fields?.trim() ? parseFieldMapping(fields) : undefined;
  if (typeof mapping === 'string') throw new Error(`field mapping: ${mapping}`);
  const r = await importProblems(blobChunks(file), { source: name, mapping });
  if (r.refused) throw new Error(`${name} is ${r.refused}`);
  return { mapping, r };
}

const formatCounts = (problems: readonly Problem[]): Partial<Record<Problem['format'], number>> => {
  const counts: Partial<Record<Problem['format'], number>> = {};
  for (const p of problems) counts[p.format] = (counts[p.format] ?? 0) + 1;
  return counts;
};

export async function readProblems(which: 'seeds' | 'validation', name: string, file: Blob, fields?: string): Promise<{ problems: Problem[]; report: ProblemSetReport }> {
  const { r } = await importFile(name, file, fields);
  if (!r.problems.length) throw new Error(`${name}: no usable problems${r.errors.length ? ` (line ${r.errors[0]!.line}: ${r.errors[0]!.reason})` : ''}`);
  return { problems: r.problems, report: problemSetReport(which, name, r.problems, r.errors, r.duplicates.length) };
}

/** A seed file as prompt → response pairs for fine-tuning, and what the page is told of it. */
export async function readSftSeeds(name: string, file: Blob, fields: string): Promise<{ pairs: SftPair[]; report: SftSeedsReport }> {
  const { mapping, r } = await importFile(name, file, fields);
  // With a mapping, the mapped problems are the pairs; otherwise pairs keep their own detection.
  const { pairs, errors } = mapping ? { pairs: r.problems.map(problemToPair), errors: r.errors } : await readSftPairs(blobChunks(file));
  return {
    pairs,
    report: {
      name,
      pairs: pairs.length,
      errors: errors.slice(0, REPORTED_ERRORS),
      errorCount: errors.length,
      counts: formatCounts(r.problems),
      duplicates: r.duplicates.length,
      notProblems: r.errors.length,
      fields: fields.trim(),
    },
  };
}

/** What the page is told of a set of problems: counts per format, the first bad lines, a preview. */
export function problemSetReport(which: 'seeds' | 'validation', name: string, problems: readonly Problem[], errors: readonly { line: number; reason: string }[] = [], duplicates = 0): ProblemSetReport {
  const levels = [...new Set(problems.flatMap((p) => (p.level === undefined ? [] : [String(p.level)])))].sort(compareLevels);
  return { which, name, problems: problems.length, counts: formatCounts(problems), errors: errors.slice(0, REPORTED_ERRORS), errorCount: errors.length, duplicates, preview: problems.slice(0, PREVIEW), levels };
}

/** What a run records as its config.json, the same fields the CLI writes. */
interface RunConfigRecord {
  method: MethodName;
  templates: 'compact' | 'instruct';
  model: string;
  /** A run the CLI began: the preset it started from (null from a checkpoint, named in model). */
  preset?: string | null;
  /** The LoRA adapter that trained, or null (the whole model). */
  lora: LoraConfig | null;
  settings: Omit<RunSettings, 'method' | 'templates'>;
  policy: typeof DEFAULT_POLICY;
}

/** The held model, as far as a run's settings care. */
export type HeldModel = Pick<ModelSession, 'origin' | 'lora' | 'rolesTaught' | 'labSettings'>;

/** A new run's settings on the held model (resolveRunSettings; the request's overrides checked). */
export function startSettings(request: EvolveRequest, held: HeldModel): RunSettings {
  return resolveRunSettings({
    method: request.method,
    start: modelStart(held.origin, held.rolesTaught, held.labSettings),
    templates: request.templates,
    lora: held.lora !== null,
    overrides: parseSettings(request.settings, { run: true }),
  });
}

/** A resumed run's settings (those its config.json records, then the request's overrides) and its prompts. */
export function resumeSettings(config: Partial<RunConfigRecord>, overrides: EvolveSettings): { settings: RunSettings; templates: PromptSet } {
  if (!config.method || !config.templates || !config.settings) throw new Error('not a run export: config.json has no method, templates or settings');
  const settings = resolveRunSettings({
    method: config.method,
    start: recordedStart(config),
    templates: config.templates,
    lora: Boolean(config.lora),
    recorded: config.settings,
    overrides: parseSettings(overrides, { run: true }),
  });
  return { settings, templates: config.templates };
}

/** Opens a pool of Python sandboxes (the platform's), for runs with code problems. */
export type SandboxFactory = () => SandboxRunner & { close(): void };

export class EvolveJob {
  private readonly evolution: Evolution;
  private running = false;
  private readonly sandbox: (SandboxRunner & { close(): void }) | null;
  /** Sends the events waiting for the page at once. */
  private readonly flush: () => void;
  private readonly emitEvent: (e: EvolveEvent) => void;
  /** Autosaves one at a time, in order. */
  private saving: Promise<void> = Promise.resolve();

  private constructor(
    readonly session: ModelSession,
    readonly store: MemoryRunStore,
    readonly settings: RunSettings,
    onEvents: (events: EvolveEvent[]) => void,
    openSandbox: SandboxFactory,
    private readonly autosave: RunAutosave | null,
    resume?: { state: RunState },
  ) {
    const events = batchEvery(onEvents, EVENT_INTERVAL_MS);
    this.flush = events.flush;
    const model = sessionRunModel(session, {
      policy: DEFAULT_POLICY,
      warmup: warmupSft(session, settings.seed, settings.warmupLr),
      // The browser's run keeps its checkpoints in memory, for the autosave and the export.
      checkpointSink: (tag) => {
        const sink = memorySink();
        return { file: sink.file, close: () => store.writeCheckpoint(tag, sink.files) };
      },
    });
    const { seeds, validation } = store.problems;
    this.sandbox = [...seeds, ...validation].some((p) => p.kind === 'code') ? openSandbox() : null;
    const validators = createValidators(this.sandbox ? new CodeVerifier(this.sandbox) : undefined);
    // Every validation (once the step's state is recorded) and every pause are autosaved.
    let validated = false;
    const records: RunStore = {
      metrics: async (m) => {
        await store.metrics(m);
        // The kernels the page's runtime ran on, for the export: the CLI's --replay-plan and --resume follow them.
        store.kernels = kernelPlan(session.model.rt);
        validated ||= m.kind === 'step' && m.validation !== undefined;
      },
      transcripts: (t) => store.transcripts(t),
      outcomes: (o) => store.outcomes(o),
      bank: (e) => store.bank(e),
      state: async (st) => {
        await store.state(st);
        if (validated) {
          validated = false;
          await this.autosaveNow(st.step);
        }
      },
    };
    this.evolution = new Evolution(settings, seeds, validation, model, validators, records, (e) => {
      events.push(e);
      // Held at a phase boundary, the weights do not change while they are written.
      if (e.type === 'paused') void this.autosaveNow(e.step);
    }, resume && { state: resume.state, bankEvents: [...store.bankEvents] });
    this.emitEvent = (e) => events.push(e);
    // Bank changes reach the page as well as the records.
    this.evolution.bank.subscribe((event) => events.push({ type: 'bank', event }));
  }

  /** A new run of the held model on the given problems; the policy optimizer starts afresh. */
  static start(
    session: ModelSession,
    problems: { seeds: Problem[]; validation: Problem[] },
    request: EvolveRequest,
    onEvents: (events: EvolveEvent[]) => void,
    openSandbox: SandboxFactory,
    autosave: RunAutosave | null = null,
  ): EvolveJob {
    checkHeldOut(problems.seeds, problems.validation);
    const settings = startSettings(request, session);
    checkReferences(problems.seeds, problems.validation, settings.method);
    const { method: _m, templates: _t, ...recorded } = settings;
    const config: RunConfigRecord = { method: request.method, templates: request.templates, model: session.origin, lora: session.lora, settings: recorded, policy: DEFAULT_POLICY };
    session.resetOptimizer();
    // Every checkpoint of the run, and any export of the model after it, records the prompts it trains with, its roles taught.
    session.templates = request.templates;
    session.rolesTaught = true;
    return new EvolveJob(session, new MemoryRunStore(config, problems), settings, onEvents, openSandbox, autosave);
  }

  /** Continues an exported run: `session` holds its last checkpoint (weights and AdamW state). */
  static resume(
    session: ModelSession,
    store: MemoryRunStore,
    state: RunState,
    overrides: EvolveSettings,
    onEvents: (events: EvolveEvent[]) => void,
    openSandbox: SandboxFactory,
    autosave: RunAutosave | null = null,
  ): EvolveJob {
    const config = store.config as Partial<RunConfigRecord>;
    const { settings, templates } = resumeSettings(config, overrides);
    checkReferences(store.problems.seeds, store.problems.validation, settings.method);
    const { method: _m, templates: _t, ...recorded } = settings;
    store.config = { ...config, settings: recorded };
    session.templates = templates;
    return new EvolveJob(session, store, settings, onEvents, openSandbox, autosave, { state });
  }

  async run(): Promise<Omit<EvolveResult, 'model'>> {
    this.running = true;
    try {
      const state = await this.evolution.run();
      // The ended run too, so a reload can still export it.
      await this.autosaveNow(state.step);
      await this.saving;
      return { state, reason: this.evolution.endReason ?? 'steps' };
    } finally {
      this.running = false;
      this.sandbox?.close();
      this.flush();
    }
  }

  pause(): void {
    this.evolution.pause();
  }

  /** Goes on once a pause's autosave is written (its weights must not change under it). */
  resume(): void {
    void this.saving.then(() => this.evolution.resume());
  }

  stepOnce(): void {
    void this.saving.then(() => this.evolution.stepOnce());
  }

  stop(): void {
    this.evolution.stop();
  }

  get bank(): ProblemBank {
    return this.evolution.bank;
  }

  /** Its files, with the current weights as last/: only while paused or after the run ended. */
  async files(): Promise<Map<string, Uint8Array>> {
    if (this.running && !this.evolution.isPaused) throw new Error('pause the run before exporting it (its weights change with every step)');
    return this.snapshot();
  }

  private async snapshot(): Promise<Map<string, Uint8Array>> {
    return this.store.files(await this.session.exportFiles({ kind: 'evolve', tag: 'last' }));
  }

  /** Writes the run's export to the autosave; a failure (a full quota) is reported, and the run goes on. */
  private autosaveNow(step: number): Promise<void> {
    const save = this.autosave;
    if (!save) return Promise.resolve();
    this.saving = this.saving.then(async () => {
      try {
        const info = await save.save(await this.snapshot(), { step, method: (this.store.config as { method?: string }).method ?? DEFAULT_METHOD });
        this.emitEvent({ type: 'autosave', info });
      } catch (e) {
        this.emitEvent({ type: 'autosave', error: errorText(e) });
      }
    });
    return this.saving;
  }
}
