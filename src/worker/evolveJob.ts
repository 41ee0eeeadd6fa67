/**
 * A loop run inside the engine: the held model session as the run's model, its records kept
 * in memory (an export is their files), its events batched for the page, and the controls a
 * page needs (pause at a phase boundary, step once, resume, stop).
 */
import { importProblems } from '../data/import';
import { blobChunks } from '../data/lines';
import { checkHeldOut, parseFieldMapping, type Problem } from '../data/problem';
import { METHODS, type MethodName } from '../sage/config';
import { DEFAULT_LOOP } from '../sage/loop';
import { Evolution, type RunSettings, type RunState } from '../sage/run';
import { MemoryRunStore } from '../sage/runRecords';
import { DEFAULT_RUN, parseSettings } from '../sage/settings';
import { COMPACT_TEMPLATES, INSTRUCT_TEMPLATES } from '../sage/templates';
import { createValidators } from '../sage/validators';
import { sessionRunModel, warmupSft } from '../train/runModel';
import { DEFAULT_POLICY, type ModelSession } from '../train/session';
import { batchEvery } from '../util/throttle';
import { CodeVerifier, type SandboxRunner } from '../verify/python/codeVerifier';
import type { EvolveEvent, EvolveRequest, EvolveResult, EvolveSettings, ProblemSetReport } from './api';

/** Events reach the page at most this often. */
const EVENT_INTERVAL_MS = 250;
const PREVIEW = 5;
const REPORTED_ERRORS = 200;

export async function readProblems(which: 'seeds' | 'validation', name: string, file: Blob, fields?: string): Promise<{ problems: Problem[]; report: ProblemSetReport }> {
  const mapping = fields?.trim() ? parseFieldMapping(fields) : undefined;
  if (typeof mapping === 'string') throw new Error(`field mapping: ${mapping}`);
  const r = await importProblems(blobChunks(file), { source: name, mapping });
  if (r.refused) throw new Error(`${name} is ${r.refused}`);
  if (!r.problems.length) throw new Error(`${name}: no usable problems${r.errors.length ? ` (line ${r.errors[0]!.line}: ${r.errors[0]!.reason})` : ''}`);
  return {
    problems: r.problems,
    report: {
      which, name, problems: r.problems.length, counts: r.counts,
      errors: r.errors.slice(0, REPORTED_ERRORS), errorCount: r.errors.length, duplicates: r.duplicates.length,
      preview: r.problems.slice(0, PREVIEW),
    },
  };
}

/** What a run records as its config.json, the same fields the CLI writes. */
interface RunConfigRecord {
  method: MethodName;
  templates: 'compact' | 'instruct';
  model: string;
  settings: Omit<RunSettings, 'method' | 'templates'>;
  policy: typeof DEFAULT_POLICY;
}

/** Defaults, then a resumed run's recorded settings, then the request's (each checked). */
function runSettings(method: MethodName, templates: 'compact' | 'instruct', overrides: EvolveSettings, recorded: Partial<RunSettings> = {}): RunSettings {
  if (!(method in METHODS)) throw new Error(`unknown method "${method}" (methods: ${Object.keys(METHODS).join(', ')})`);
  return {
    ...DEFAULT_LOOP,
    ...DEFAULT_RUN,
    ...recorded,
    ...parseSettings(overrides, { run: true }),
    method: METHODS[method],
    templates: templates === 'instruct' ? INSTRUCT_TEMPLATES : COMPACT_TEMPLATES,
  };
}

/** Opens a pool of Python sandboxes (the platform's), for runs with code problems. */
export type SandboxFactory = () => SandboxRunner & { close(): void };

export class EvolveJob {
  private readonly evolution: Evolution;
  private running = false;
  private readonly sandbox: (SandboxRunner & { close(): void }) | null;
  /** Sends the events waiting for the page at once. */
  private readonly flush: () => void;

  private constructor(
    readonly session: ModelSession,
    readonly store: MemoryRunStore,
    settings: RunSettings,
    onEvents: (events: EvolveEvent[]) => void,
    openSandbox: SandboxFactory,
    resume?: { state: RunState },
  ) {
    const events = batchEvery(onEvents, EVENT_INTERVAL_MS);
    this.flush = events.flush;
    const model = sessionRunModel(session, {
      policy: DEFAULT_POLICY,
      warmup: warmupSft(session, settings.seed),
      writeCheckpoint: (tag, files) => store.writeCheckpoint(tag, files),
    });
    const { seeds, validation } = store.problems;
    this.sandbox = [...seeds, ...validation].some((p) => p.kind === 'code') ? openSandbox() : null;
    const validators = createValidators(this.sandbox ? new CodeVerifier(this.sandbox) : undefined);
    this.evolution = new Evolution(settings, seeds, validation, model, validators, store, (e) => events.push(e), resume && { state: resume.state, bankEvents: [...store.bankEvents] });
    // Bank changes reach the page as well as the records.
    this.evolution.bank.subscribe((event) => events.push({ type: 'bank', event }));
  }

  /** A new run of the held model on the given problems; the policy optimizer starts afresh. */
  static start(session: ModelSession, problems: { seeds: Problem[]; validation: Problem[] }, request: EvolveRequest, onEvents: (events: EvolveEvent[]) => void, openSandbox: SandboxFactory): EvolveJob {
    checkHeldOut(problems.seeds, problems.validation);
    const settings = runSettings(request.method, request.templates, request.settings);
    const { method: _m, templates: _t, ...recorded } = settings;
    const config: RunConfigRecord = { method: request.method, templates: request.templates, model: session.origin, settings: recorded, policy: DEFAULT_POLICY };
    session.resetOptimizer();
    return new EvolveJob(session, new MemoryRunStore(config, problems), settings, onEvents, openSandbox);
  }

  /** Continues an exported run: `session` holds its last checkpoint (weights and AdamW state). */
  static resume(session: ModelSession, store: MemoryRunStore, state: RunState, overrides: EvolveSettings, onEvents: (events: EvolveEvent[]) => void, openSandbox: SandboxFactory): EvolveJob {
    const config = store.config as Partial<RunConfigRecord>;
    if (!config.method || !config.templates || !config.settings) throw new Error('not a run export: config.json has no method, templates or settings');
    const settings = runSettings(config.method, config.templates, overrides, config.settings);
    const { method: _m, templates: _t, ...recorded } = settings;
    store.config = { ...config, settings: recorded };
    return new EvolveJob(session, store, settings, onEvents, openSandbox, { state });
  }

  async run(): Promise<EvolveResult> {
    this.running = true;
    try {
      const state = await this.evolution.run();
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

  resume(): void {
    this.evolution.resume();
  }

  stepOnce(): void {
    this.evolution.stepOnce();
  }

  stop(): void {
    this.evolution.stop();
  }

  /** Its files, with the current weights as last/: only while paused or after the run ended. */
  async files(): Promise<Map<string, Uint8Array>> {
    if (this.running && !this.evolution.isPaused) throw new Error('pause the run before exporting it (its weights change with every step)');
    return this.store.files(await this.session.exportFiles({ kind: 'evolve', tag: 'last' }));
  }
}
