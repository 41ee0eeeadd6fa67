/**
 * The loop run's slices of the lab's store: the seed and validation files the engine holds,
 * the run's settings (checked as typed), and the run itself (controls, the view folded from
 * the engine's events, export and resume). Files are read and problems held in the engine
 * worker; the store keeps reports and compact points only.
 */
import type { StateCreator } from 'zustand';
import { proxy } from 'comlink';
import { DEFAULT_METHOD, METHODS, type MethodName } from '../sage/config';
import { DEFAULT_LOOP } from '../sage/loopContract';
import { checkSetting, DEFAULT_RUN, RUN_SPECS, type RunSettings, SETTING_SPECS, type SettingName } from '../sage/settings';
import { modelStart, runDefaults, type ModelChoices } from '../sage/runSpec';
import { DEFAULT_MODEL } from '../sage/shippedModels';
import type { PromptSet } from '../model/checkpoint';
import { OVERLAP_REASON, type OverlapReport } from '../data/content';
import type { AutosaveInfo, CheckpointFile, EvolveEvent, EvolveResult, EvolveSettings, ModelSummary, ProblemSetReport } from '../worker/api';
import { canSaveToFolder, downloadBytes, saveToFolder, toPicked } from './checkpointFiles';
import { callEngine } from './engineClient';
import type { RunConfig } from './runHistory';
import { EMPTY_RUN, historyEvents, isActive, reduceRun, type RunView } from './runView';
import { SHIPPED_LAB_SETTINGS, SHIPPED_ROLES_TAUGHT, SHIPPED_SEEDS, SHIPPED_VALIDATION } from './shippedData';
import type { LabState } from './store';
import { errorText } from '../util/errorText';

export interface ProblemsSlice {
  seedReport: ProblemSetReport | null;
  validationReport: ProblemSetReport | null;
  /** What is being read now, and the last refusal, per split. */
  problemsBusy: Partial<Record<'seeds' | 'validation', string>>;
  problemsError: Partial<Record<'seeds' | 'validation', string>>;
  /** Reads a JSONL in the engine; a shipped seed file brings its built-in validation split. */
  loadProblemFile(which: 'seeds' | 'validation', name: string, file: Blob): Promise<void>;
  loadShippedProblems(name: string): Promise<void>;
  /** Holds out a fraction of the loaded seeds as the validation split. */
  holdOutSeeds(fraction: number): Promise<void>;
  /** Validation problems that share their content with a seed, told before a run (null until both splits are held). */
  problemOverlap: OverlapReport | null;
  /** Drops them from the validation split held. */
  dropOverlap(): Promise<void>;
}

/** Numeric settings of a run as typed (strings until they parse), and each one's refusal. */
export type NumericSetting = Exclude<SettingName, 'maxNewTokens' | ChoiceSetting>;
/** Settings picked from a list: the advantage estimator, dropping zero-spread groups, which transcripts to keep, the difficulty term, seed parity, the warm-up's Challenger and Solver targets. */
export type ChoiceSetting = 'advantage' | 'dropZeroSpread' | 'transcripts' | 'difficulty' | 'seedParity' | 'challengerWarmup' | 'warmupSolverTarget';
/** The warm-up's choices are unset until picked: their default depends on the model held (warmupRecipe), and the engine applies it. */
export type Choices = Pick<RunSettings, Exclude<ChoiceSetting, 'challengerWarmup' | 'warmupSolverTarget'>> & Partial<Pick<RunSettings, 'challengerWarmup' | 'warmupSolverTarget'>>;
export const DEFAULT_CHOICES: Choices = {
  advantage: DEFAULT_LOOP.advantage,
  dropZeroSpread: DEFAULT_LOOP.dropZeroSpread,
  transcripts: DEFAULT_LOOP.transcripts,
  difficulty: DEFAULT_LOOP.difficulty,
  seedParity: DEFAULT_LOOP.seedParity,
};
export const NUMERIC_SETTINGS = [...Object.keys(SETTING_SPECS), ...Object.keys(RUN_SPECS)] as NumericSetting[];
/**
 * What a run's defaults depend on for the model held, or (none held) the shipped one Start
 * loads: where it starts (a preset from scratch, or a checkpoint whose record may say its roles
 * were never taught), the prompts, whether a LoRA adapter trains.
 */
export const modelChoices = (model: ModelSummary | null, templates: PromptSet): ModelChoices => ({
  start: model ? modelStart(model.origin, model.rolesTaught, model.labSettings) : modelStart(DEFAULT_MODEL, SHIPPED_ROLES_TAUGHT[DEFAULT_MODEL] !== false, SHIPPED_LAB_SETTINGS[DEFAULT_MODEL]),
  templates,
  lora: Boolean(model?.lora),
});
/** A setting's default, as the engine and the CLI resolve it for the same model (runDefaults). */
export const settingDefault = (name: NumericSetting, c: ModelChoices): number => runDefaults(c)[name];

export interface SettingsSlice {
  method: MethodName;
  templates: 'compact' | 'instruct';
  /** Values as typed; a missing one is its default. */
  typed: Partial<Record<NumericSetting, string>>;
  settingErrors: Partial<Record<NumericSetting, string>>;
  choices: Choices;
  setChoice<K extends ChoiceSetting>(name: K, value: Choices[K]): void;
  setMethod(m: MethodName): void;
  setTemplates(t: 'compact' | 'instruct'): void;
  setSetting(name: NumericSetting, text: string): void;
  resetSettings(): void;
}

/** A run a comparison starts: its method, its whole settings (the seed its own) and the comparison's key. */
export interface QueuedRun {
  method: MethodName;
  settings: EvolveSettings;
  comparison: string;
}

export interface RunSlice {
  run: RunView;
  runError: string | null;
  /** When the run started and how long it has been held (paused), for elapsed time and ETA. */
  runClock: { started: number; heldMs: number; pausedAt: number | null } | null;
  /** The settings the running (or last) run was started with. */
  runSettings: { method: MethodName; steps: number } | null;
  runExported: string | null;
  /** Starts a run with the settings typed, or as one run of a comparison (its method, settings and key). */
  startRun(queued?: QueuedRun): Promise<void>;
  pauseRun(): void;
  resumeRun(): void;
  stepRun(): void;
  stopRun(): void;
  exportRun(to: 'zip' | 'folder'): Promise<void>;
  /** Downloads the run's problem bank as JSONL or as the verl Parquet dataset. */
  exportBank(format: 'jsonl' | 'parquet'): Promise<void>;
  /** Continues a run from its exported folder or .zip. */
  resumeFromFiles(picked: File[]): Promise<void>;
  /** A run autosaved in this browser (found when the page opens), offered for resuming. */
  savedRun: AutosaveInfo | null;
  /** The browser's storage use and quota, when it reports them. */
  storage: { usage: number; quota: number } | null;
  checkAutosave(): Promise<void>;
  resumeAutosaved(): Promise<void>;
  discardAutosaved(): Promise<void>;
}

export type RunSlices = ProblemsSlice & SettingsSlice & RunSlice;

export const problemsSlice: StateCreator<LabState, [], [], ProblemsSlice> = (set, get) => {
  /** The latest load per split: an earlier one still reading does not overwrite it. */
  const loads = { seeds: 0, validation: 0 };
  /** The latest overlap asked for: the engine answers in order, so the last answer is the splits as they are now. */
  let overlapAsked = 0;
  const refreshOverlap = async () => {
    const asked = ++overlapAsked;
    const overlap = await callEngine((e) => e.problemOverlap());
    if (asked === overlapAsked) set({ problemOverlap: overlap });
  };
  return {
    seedReport: null,
    validationReport: null,
    problemsBusy: {},
    problemsError: {},
    problemOverlap: null,
    async loadProblemFile(which, name, file) {
      const load = ++loads[which];
      set({ problemsBusy: { ...get().problemsBusy, [which]: name }, problemsError: { ...get().problemsError, [which]: undefined } });
      try {
        const report = await callEngine((e) => e.loadProblems(which, name, file));
        if (load === loads[which]) set(which === 'seeds' ? { seedReport: report } : { validationReport: report });
        await refreshOverlap();
      } catch (e) {
        if (load === loads[which]) set({ problemsError: { ...get().problemsError, [which]: errorText(e) } });
      } finally {
        if (load === loads[which]) set({ problemsBusy: { ...get().problemsBusy, [which]: undefined } });
      }
    },
    async holdOutSeeds(fraction) {
      try {
        const seed = Number(get().typed.seed ?? DEFAULT_RUN.seed);
        const { seeds, validation } = await callEngine((e) => e.holdOutSeeds(fraction, seed));
        set({ seedReport: seeds, validationReport: validation, problemsError: { ...get().problemsError, validation: undefined } });
        await refreshOverlap();
      } catch (e) {
        set({ problemsError: { ...get().problemsError, validation: errorText(e) } });
      }
    },
    async dropOverlap() {
      try {
        const validation = await callEngine((e) => e.dropOverlap());
        set({ validationReport: validation, problemsError: { ...get().problemsError, validation: undefined } });
        await refreshOverlap();
      } catch (e) {
        set({ problemsError: { ...get().problemsError, validation: errorText(e) } });
      }
    },
    async loadShippedProblems(name) {
      const fetchBlob = async (url: string) => {
        const r = await fetch(url);
        if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
        return r.blob();
      };
      try {
        const seeds = SHIPPED_SEEDS[name];
        if (!seeds) throw new Error('not a shipped seed file');
        const validation = SHIPPED_VALIDATION[name];
        await Promise.all([
          get().loadProblemFile('seeds', name, await fetchBlob(seeds)),
          validation
            ? (async () => {
                // A mixed seed file's held-out split is its sources' splits, one after another.
                const parts = await Promise.all(validation.urls.map(fetchBlob));
                await get().loadProblemFile('validation', validation.name, new Blob(parts.flatMap((p) => [p, '\n'])));
              })()
            : Promise.resolve(),
        ]);
      } catch (e) {
        set({ problemsError: { ...get().problemsError, seeds: `could not load the demo seeds ${name}: ${errorText(e)}` } });
      }
    },
  };
};

export const settingsSlice: StateCreator<LabState, [], [], SettingsSlice> = (set, get) => ({
  method: DEFAULT_METHOD,
  templates: 'compact',
  typed: {},
  settingErrors: {},
  choices: DEFAULT_CHOICES,
  setChoice: (name, value) => set({ choices: { ...get().choices, [name]: value } }),
  setMethod: (method) => set({ method }),
  setTemplates: (templates) => set({ templates }),
  setSetting(name, text) {
    const typed = { ...get().typed, [name]: text };
    const value = Number(text);
    const error = text.trim() === '' ? `${name} needs a value` : checkSetting(name, value);
    set({ typed, settingErrors: { ...get().settingErrors, [name]: error ?? undefined } });
  },
  resetSettings: () => set({ typed: {}, settingErrors: {}, choices: DEFAULT_CHOICES }),
});

/** The run request's settings: every typed value, or the first refusal. */
export function requestSettings(s: SettingsSlice): EvolveSettings {
  const bad = NUMERIC_SETTINGS.find((n) => s.settingErrors[n]);
  if (bad) throw new Error(s.settingErrors[bad]!);
  // Only the choices changed from their defaults: a resumed run keeps its own otherwise.
  const choices = Object.fromEntries(Object.entries(s.choices).filter(([k, v]) => DEFAULT_CHOICES[k as ChoiceSetting] !== v));
  return { ...Object.fromEntries(Object.entries(s.typed).map(([k, v]) => [k, Number(v)])), ...choices } as EvolveSettings;
}

/** What a kept run records of its inputs (the model: the shipped checkpoint unless another is held). */
const recordConfig = (s: LabState, method: MethodName, templates: RunConfig['templates']): RunConfig => ({
  method,
  templates,
  settings: {},
  seeds: s.seedReport?.name ?? '—',
  validation: s.validationReport?.name ?? '—',
  model: s.model?.origin ?? DEFAULT_MODEL,
  ...(s.seedReport?.levels.length ? { seedLevels: s.seedReport.levels } : {}),
});

export const runSlice: StateCreator<LabState, [], [], RunSlice> = (set, get) => {
  const onEvents = proxy((events: EvolveEvent[]) => {
    const before = get().run.status;
    const run = reduceRun(get().run, events);
    const clock = get().runClock;
    // Held time comes out of elapsed time and the ETA.
    if (clock && run.status === 'paused' && before !== 'paused') set({ runClock: { ...clock, pausedAt: Date.now() } });
    if (clock?.pausedAt && run.status !== 'paused') set({ runClock: { ...clock, heldMs: clock.heldMs + Date.now() - clock.pausedAt, pausedAt: null } });
    set({ run });
    if (events.some((e) => e.type === 'step' || e.type === 'validation' || e.type === 'done')) get().recordRun();
    if (events.some((e) => e.type === 'autosave')) void refreshStorage();
  });
  const refreshStorage = async () => {
    const est = await navigator.storage?.estimate?.().catch(() => null);
    if (est?.quota) set({ storage: { usage: est.usage ?? 0, quota: est.quota } });
  };
  /** Runs a loop call to its end, recording why it ended or failed. */
  const drive = async (call: () => Promise<unknown>) => {
    try {
      await call();
      set({ run: { ...get().run, status: 'done', phase: null } });
      get().recordRun();
    } catch (e) {
      const lost = /device (was )?lost/i.test(errorText(e));
      set({ run: { ...get().run, status: 'error', phase: null }, runError: errorText(e), ...(lost ? { model: null } : {}) });
      get().recordRun();
      // The autosave survives a lost device or a failed step: offer it.
      await get().checkAutosave();
    }
  };
  /** The records of the autosave the page offers (config, metrics, outcomes, bank, state). */
  let savedRecords: CheckpointFile[] = [];
  /** Rebuilds the charts from a run's records, then continues it for the typed number of steps. */
  const resumeWith = async (records: readonly CheckpointFile[], resume: (steps: number) => Promise<EvolveResult>) => {
    const read = (name: string) => {
      const f = records.find((x) => x.name === name);
      return f ? new TextDecoder().decode(f.bytes) : null;
    };
    let method: MethodName = DEFAULT_METHOD;
    let templates: RunConfig['templates'] = get().templates;
    let history: RunView;
    try {
      const config = JSON.parse(read('config.json') ?? '{}') as { method?: MethodName; templates?: RunConfig['templates'] };
      if (config.method && config.method in METHODS) method = config.method;
      if (config.templates === 'compact' || config.templates === 'instruct') templates = config.templates;
      history = reduceRun(EMPTY_RUN, historyEvents(read));
    } catch (e) {
      set({ runError: `not a run export: ${errorText(e)}` });
      return;
    }
    const steps = Number(get().typed.steps ?? DEFAULT_RUN.steps);
    set({
      run: { ...history, status: 'starting', endReason: null },
      runError: null,
      runExported: null,
      runClock: { started: Date.now(), heldMs: 0, pausedAt: null },
      runSettings: { method, steps: history.steps.length + steps },
    });
    get().beginRecord({ ...recordConfig(get(), method, templates), resumed: true });
    await drive(async () => set({ model: (await resume(steps)).model }));
  };
  return {
    run: EMPTY_RUN,
    runError: null,
    runClock: null,
    runSettings: null,
    runExported: null,
    async startRun(queued) {
      const s = get();
      const method = queued?.method ?? s.method;
      let settings: EvolveSettings;
      try {
        settings = queued?.settings ?? requestSettings(s);
        if (!s.seedReport) throw new Error('load seed problems first');
        if (!s.validationReport) throw new Error('load held-out validation problems first');
        const overlap = s.problemOverlap;
        if (overlap?.count) throw new Error(`${overlap.count} validation problems share their content with a seed, and ${OVERLAP_REASON}: drop them in the Problems panel, or load another held-out file`);
      } catch (e) {
        set({ runError: errorText(e) });
        return;
      }
      set({
        run: { ...EMPTY_RUN, status: 'starting' },
        runError: null,
        runExported: null,
        runClock: { started: Date.now(), heldMs: 0, pausedAt: null },
        runSettings: { method, steps: settings.steps ?? DEFAULT_RUN.steps },
      });
      // No model held: the shipped checkpoint (compact prompts, its roles taught), so that a first run reaches its first step in a minute or two.
      const templates = s.model ? s.templates : 'compact';
      settings = { ...settings, warmupSteps: settings.warmupSteps ?? settingDefault('warmupSteps', modelChoices(s.model, templates)) };
      get().beginRecord({ ...recordConfig(s, method, templates), settings, ...(queued ? { comparison: queued.comparison } : {}) });
      await drive(async () => {
        if (!get().model) {
          await get().loadShippedModel(DEFAULT_MODEL);
          if (!get().model) throw new Error(get().modelError ?? `could not load ${DEFAULT_MODEL}`);
        }
        set({ model: (await callEngine((e) => e.evolve({ method, templates, settings }, onEvents))).model });
      });
    },
    pauseRun: () => void callEngine((e) => e.pauseEvolve()),
    resumeRun: () => void callEngine((e) => e.resumeEvolve()),
    stepRun: () => void callEngine((e) => e.stepEvolve()),
    stopRun: () => void callEngine((e) => e.stopEvolve()),
    async exportRun(to) {
      try {
        const name = `sage-run-${get().runSettings?.method ?? 'run'}-step${get().run.steps.length}`;
        if (to === 'folder' && canSaveToFolder()) {
          const files = await callEngine((e) => e.exportRun());
          if (await saveToFolder(files)) set({ runExported: `${files.length} files written to the chosen folder` });
        } else {
          const zip = await callEngine((e) => e.exportRunZip());
          downloadBytes(`${name}.zip`, zip.bytes, 'application/zip');
          set({ runExported: `${name}.zip downloaded (${(zip.bytes.byteLength / 2 ** 20).toFixed(1)} MiB)` });
        }
      } catch (e) {
        set({ runExported: null, runError: errorText(e) });
      }
    },
    async exportBank(format) {
      try {
        const f = await callEngine((e) => e.exportBank(format));
        downloadBytes(f.name, f.bytes, format === 'jsonl' ? 'application/jsonl' : 'application/vnd.apache.parquet');
      } catch (e) {
        set({ runError: errorText(e) });
      }
    },
    async resumeFromFiles(picked) {
      let records;
      try {
        records = (await callEngine((e) => e.stageFiles(toPicked(picked)))).records;
      } catch (e) {
        set({ runError: errorText(e) });
        return;
      }
      await resumeWith(records, (steps) => callEngine((e) => e.resumeRun(null, onEvents, { steps })));
    },
    savedRun: null,
    storage: null,
    async checkAutosave() {
      await refreshStorage();
      const saved = await callEngine((e) => e.autosaved()).catch(() => null);
      // A run started meanwhile is not interrupted by an offer to resume another.
      if (saved && !isActive(get().run.status)) {
        savedRecords = saved.records;
        set({ savedRun: saved.info });
      }
    },
    async resumeAutosaved() {
      const records = savedRecords;
      set({ savedRun: null });
      await resumeWith(records, (steps) => callEngine((e) => e.resumeAutosave(onEvents, { steps })));
    },
    async discardAutosaved() {
      set({ savedRun: null });
      await callEngine((e) => e.discardAutosave());
    },
  };
};
