import { create, type StateCreator } from 'zustand';
import { proxy } from 'comlink';
import type {
  BaseDtype,
  KvDtype,
  CheckpointFile,
  DeviceReport,
  LoadProgress,
  LoraConfig,
  GenerateOptions,
  GenerateProgress,
  GenerateResult,
  ModelSummary,
  PresetName,
  SelfCheckResult,
  SftCorpusReport,
  SftRunResult,
  SftSeedsReport,
  SftSettings,
  SftStepReport,
  TrainCheckResult,
  TrainStepReport,
} from '../worker/api';
import { canSaveToFolder, downloadBytes, pickFolder, saveToFolder, toPicked } from './checkpointFiles';
import { zipFiles } from '../util/zip';
import { callEngine } from './engineClient';
import { problemsSlice, runSlice, settingsSlice, type RunSlices } from './runSlices';
import { runsSlice, type RunsSlice } from './runsSlice';
import { compareSlice, type CompareSlice } from './compareSlice';
import { evaluateSlice, type EvaluateSlice } from './evaluateSlice';
import { SHIPPED_SEEDS, shippedModelFiles } from './shippedData';
import { DEFAULT_RUN } from '../sage/settings';
import { chooseTemplates } from '../sage/templates';
import { errorText } from '../util/errorText';
import type { DocumentSplit } from '../data/corpus';

type Status = 'idle' | 'running' | 'done' | 'error';

export interface DeviceSlice {
  deviceStatus: Status;
  device: DeviceReport | null;
  deviceError: string | null;
  connect(): Promise<void>;
}

export interface SelfCheckSlice {
  checkStatus: Status;
  check: SelfCheckResult | null;
  checkError: string | null;
  runSelfCheck(shape?: { M: number; N: number; K: number }): Promise<void>;
}

export interface TrainCheckSlice {
  trainStatus: Status;
  trainSteps: TrainStepReport[];
  train: TrainCheckResult | null;
  trainError: string | null;
  runTrainCheck(steps?: number): Promise<void>;
}

export interface SftSlice {
  /** The seed file read for fine-tuning (its pairs held in the engine). */
  seeds: SftSeedsReport | null;
  /** Or a corpus read in its place (its documents held in the engine): trained with the loss on every token. */
  corpus: SftCorpusReport | null;
  seedsError: string | null;
  model: ModelSummary | null;
  /** What the model controls are doing: loading a preset, importing, exporting. */
  modelBusy: string | null;
  /** How far an import's weights have reached the GPU, shard by shard. */
  modelLoad: LoadProgress | null;
  modelError: string | null;
  sftStatus: Status;
  sftSteps: SftStepReport[];
  sftResult: SftRunResult | null;
  sftError: string | null;
  /** Where the last export went. */
  exported: string | null;
  /**
   * Reads a seed file in chunks as prompt → response pairs and as problems; `fields`
   * (`question=q,answer=a`) replaces format detection. A later load wins over an earlier
   * one still reading.
   */
  loadSeeds(name: string, file: Blob, fields?: string): Promise<void>;
  /** Re-reads the loaded seed file with a field mapping (empty: detection). */
  remapSeeds(fields: string): Promise<void>;
  /** Reads a file as a corpus of documents, in place of the seed pairs; a later load wins, as for seeds. */
  loadCorpus(name: string, file: Blob, split: DocumentSplit): Promise<void>;
  /** Re-reads the loaded file as pairs or as documents. */
  readLoadedAs(as: 'pairs' | DocumentSplit): Promise<void>;
  /** Fetches a seed file the lab ships (data/seeds/, by file name). */
  loadShippedSeeds(name: string): Promise<void>;
  newModel(preset: PresetName, seed: number): Promise<void>;
  /** Imports a checkpoint from picked files (a folder's or one .zip), named `name` when given. */
  /** Imports a checkpoint folder; `baseDtype` f16 stores its base in half precision. */
  importModel(files: File[], name?: string, baseDtype?: BaseDtype): Promise<void>;
  /** Imports a checkpoint the lab ships (data/models/, by name); its prompts are those it records (compact). */
  loadShippedModel(name: string): Promise<void>;
  runSft(settings: SftSettings): Promise<void>;
  stopSft(): void;
  exportModel(to: 'zip' | 'folder'): Promise<void>;
  /** Fine-tunes a fresh LoRA adapter on the frozen model from now on (null: the whole model again). */
  setLora(lora: LoraConfig | null): Promise<void>;
  /** Adds a PEFT adapter folder (picked files or a .zip) to the held model. */
  addAdapter(files: File[]): Promise<void>;
  /** Saves the LoRA adapter alone as a PEFT adapter folder. */
  exportAdapter(to: 'zip' | 'folder'): Promise<void>;
  /** Stores the base weights in f16 (half the memory, frozen; needs an adapter) or back in f32. */
  setBaseDtype(dtype: BaseDtype): Promise<void>;
  /** Keeps generation's KV cache in f16 (half its memory) or f32. */
  setKvCache(dtype: KvDtype): Promise<void>;
}

export interface GenerateSlice {
  genStatus: Status;
  /** Each sample's text so far, as the engine streams it. */
  genTexts: string[];
  genResult: GenerateResult | null;
  genError: string | null;
  /** Completes `prompt` `samples` times in one batch with the held model. */
  runGenerate(prompt: string, samples: number, options: Partial<GenerateOptions>): Promise<void>;
}

export type LabState = DeviceSlice & SelfCheckSlice & TrainCheckSlice & SftSlice & GenerateSlice & RunSlices & RunsSlice & CompareSlice & EvaluateSlice;

/** The named fields of the lab's state, for a selector that re-renders only when one of them changes (with useShallow). */
export function pick<K extends keyof LabState>(s: LabState, keys: readonly K[]): Pick<LabState, K> {
  return Object.fromEntries(keys.map((k) => [k, s[k]])) as Pick<LabState, K>;
}

const deviceSlice: StateCreator<LabState, [], [], DeviceSlice> = (set) => ({
  deviceStatus: 'idle',
  device: null,
  deviceError: null,
  async connect() {
    set({ deviceStatus: 'running', deviceError: null });
    try {
      set({ device: await callEngine((e) => e.init()), deviceStatus: 'done' });
    } catch (e) {
      set({ deviceStatus: 'error', deviceError: errorText(e) });
    }
  },
});

const selfCheckSlice: StateCreator<LabState, [], [], SelfCheckSlice> = (set) => ({
  checkStatus: 'idle',
  check: null,
  checkError: null,
  async runSelfCheck(shape = { M: 128, N: 96, K: 80 }) {
    set({ checkStatus: 'running', checkError: null });
    try {
      set({ check: await callEngine((e) => e.selfCheck(shape)), checkStatus: 'done' });
    } catch (e) {
      set({ checkStatus: 'error', checkError: errorText(e) });
    }
  },
});

const trainCheckSlice: StateCreator<LabState, [], [], TrainCheckSlice> = (set, get) => ({
  trainStatus: 'idle',
  trainSteps: [],
  train: null,
  trainError: null,
  async runTrainCheck(steps = 60) {
    set({ trainStatus: 'running', trainSteps: [], train: null, trainError: null });
    const onStep = proxy((r: TrainStepReport) => set({ trainSteps: [...get().trainSteps, r] }));
    try {
      set({ train: await callEngine((e) => e.trainCheck({ steps }, onStep)), trainStatus: 'done' });
    } catch (e) {
      set({ trainStatus: 'error', trainError: errorText(e) });
    }
  },
});

const sftSlice: StateCreator<LabState, [], [], SftSlice> = (set, get) => {
  /** The file behind `seeds` or `corpus`, kept to re-read it; and the latest load's number. */
  let seedFile: Blob | null = null;
  let seedLoad = 0;
  /** Runs a model action, showing what it does and any refusal beside the model. */
  /** Writes checkpoint files into a folder the user picks, or downloads them as one .zip. */
  const save = async (files: CheckpointFile[], to: 'zip' | 'folder', suffix: string) => {
    const base = `${get().model?.origin ?? 'model'}-step${get().model?.optimizerStep ?? 0}${suffix}`.replace(/[^\w.-]+/g, '_');
    if (to === 'folder' && canSaveToFolder()) {
      if (await saveToFolder(files)) set({ exported: `${files.length} files written to the chosen folder` });
    } else {
      downloadBytes(`${base}.zip`, zipFiles(files), 'application/zip');
      set({ exported: `${base}.zip downloaded (${files.map((f) => f.name).join(', ')})` });
    }
  };
  const modelAction = async (what: string, action: () => Promise<void>) => {
    set({ modelBusy: what, modelError: null });
    try {
      await action();
    } catch (e) {
      set({ modelError: errorText(e) });
    } finally {
      set({ modelBusy: null });
    }
  };
  return {
    seeds: null,
    corpus: null,
    seedsError: null,
    model: null,
    modelBusy: null,
    modelLoad: null,
    modelError: null,
    sftStatus: 'idle',
    sftSteps: [],
    sftResult: null,
    sftError: null,
    exported: null,
    async loadSeeds(name, file, fields = '') {
      const load = ++seedLoad;
      try {
        const seeds = await callEngine((e) => e.readSftSeeds(name, file, fields));
        if (load !== seedLoad) return;
        seedFile = file;
        set({ seeds, corpus: null, seedsError: null });
      } catch (e) {
        if (load === seedLoad) set({ seedsError: errorText(e) });
      }
    },
    async loadCorpus(name, file, split) {
      const load = ++seedLoad;
      try {
        const corpus = await callEngine((e) => e.readSftCorpus(name, file, split));
        if (load !== seedLoad) return;
        seedFile = file;
        set({ corpus, seeds: null, seedsError: null });
      } catch (e) {
        if (load === seedLoad) set({ seedsError: errorText(e) });
      }
    },
    async readLoadedAs(as) {
      const name = get().seeds?.name ?? get().corpus?.name;
      if (!seedFile || !name) return;
      await (as === 'pairs' ? get().loadSeeds(name, seedFile) : get().loadCorpus(name, seedFile, as));
    },
    async remapSeeds(fields) {
      const name = get().seeds?.name;
      if (seedFile && name) await get().loadSeeds(name, seedFile, fields);
    },
    async loadShippedSeeds(name) {
      try {
        const url = SHIPPED_SEEDS[name];
        if (!url) throw new Error('not a shipped seed file');
        const r = await fetch(url);
        if (!r.ok) throw new Error(`HTTP ${r.status}`);
        await get().loadSeeds(name, await r.blob());
      } catch (e) {
        set({ seedsError: `could not load the demo seeds ${name}: ${errorText(e)}` });
      }
    },
    newModel: (preset, seed) =>
      modelAction(`initialising ${preset}`, async () => {
        set({ model: await callEngine((e) => e.loadPreset(preset, seed)), sftSteps: [], sftResult: null, exported: null });
      }),
    importModel: (picked, as, baseDtype) =>
      modelAction('importing', async () => {
        const staged = await callEngine((e) => e.stageFiles(toPicked(picked)));
        const name = as ?? staged.name;
        const onProgress = proxy((p: LoadProgress) => set({ modelLoad: p }));
        try {
          const model = await callEngine((e) => e.importCheckpoint(name, null, onProgress, baseDtype));
          set({ model, sftSteps: [], sftResult: null, exported: null });
          // The prompts follow the checkpoint: those it records, else instruct (a plain Hugging Face model, instruction-tuned).
          get().setTemplates(chooseTemplates({ recorded: model.templates, fromScratch: false }));
        } finally {
          set({ modelLoad: null });
        }
      }),
    async loadShippedModel(name) {
      let files: File[];
      try {
        files = await shippedModelFiles(name);
      } catch (e) {
        set({ modelError: `could not load the shipped model ${name}: ${errorText(e)}` });
        return;
      }
      await get().importModel(files, name);
    },
    async runSft(settings) {
      if (!get().seeds?.pairs && !get().corpus?.documents) {
        set({ sftStatus: 'error', sftError: 'load seed examples or a corpus first' });
        return;
      }
      set({ sftStatus: 'running', sftError: null, sftResult: null, exported: null });
      const onStep = proxy((r: SftStepReport) => set({ sftSteps: [...get().sftSteps, r] }));
      try {
        if (!get().model) set({ model: await callEngine((e) => e.loadPreset('tiny', settings.seed)) });
        const result = await callEngine((e) => e.sft(null, settings, onStep));
        set({ sftResult: result, model: result.model, sftStatus: 'done' });
      } catch (e) {
        set({ sftStatus: 'error', sftError: errorText(e) });
      }
    },
    stopSft() {
      void callEngine((e) => e.stopSft());
    },
    exportModel: (to) =>
      modelAction('exporting', async () => {
        if (to === 'folder' && canSaveToFolder()) {
          // The engine writes the folder itself, a weight at a time from the GPU.
          const dir = await pickFolder();
          if (!dir) return;
          const written = await callEngine((e) => e.exportCheckpointTo(dir));
          set({ exported: `${written.length} files written to the chosen folder (${written.join(', ')})` });
        } else {
          await save(await callEngine((e) => e.exportCheckpoint()), to, '');
        }
      }),
    setLora: (lora) =>
      modelAction(lora ? 'adding a LoRA adapter' : 'dropping the adapter', async () => {
        // The adapter's initial weights come from the run's seed, like the rest of a run.
        set({ model: await callEngine((e) => e.setLora(lora, Number(get().typed.seed ?? DEFAULT_RUN.seed))), exported: null });
      }),
    addAdapter: (picked) =>
      modelAction('adding the adapter', async () => {
        await callEngine((e) => e.stageFiles(toPicked(picked)));
        set({ model: await callEngine((e) => e.addAdapter()), exported: null });
      }),
    exportAdapter: (to) =>
      modelAction('exporting the adapter', async () => {
        await save(await callEngine((e) => e.exportAdapter()), to, '-adapter');
      }),
    setBaseDtype: (dtype) =>
      modelAction(`storing the base in ${dtype}`, async () => {
        set({ model: await callEngine((e) => e.setBaseDtype(dtype)) });
      }),
    setKvCache: (dtype) =>
      modelAction(`keeping the KV cache in ${dtype}`, async () => {
        set({ model: await callEngine((e) => e.setKvCache(dtype)) });
      }),
  };
};

const generateSlice: StateCreator<LabState, [], [], GenerateSlice> = (set) => ({
  genStatus: 'idle',
  genTexts: [],
  genResult: null,
  genError: null,
  async runGenerate(prompt, samples, options) {
    set({ genStatus: 'running', genTexts: new Array<string>(samples).fill(''), genResult: null, genError: null });
    const onToken = proxy((p: GenerateProgress) => set({ genTexts: p.texts }));
    try {
      const result = await callEngine((e) => e.generate(new Array<string>(samples).fill(prompt), options, onToken));
      set({ genResult: result, genTexts: result.rows.map((r) => r.text), genStatus: 'done' });
    } catch (e) {
      set({ genStatus: 'error', genError: errorText(e) });
    }
  },
});

export const useLab = create<LabState>()((...a) => ({
  ...deviceSlice(...a),
  ...selfCheckSlice(...a),
  ...trainCheckSlice(...a),
  ...sftSlice(...a),
  ...generateSlice(...a),
  ...problemsSlice(...a),
  ...settingsSlice(...a),
  ...runSlice(...a),
  ...runsSlice(...a),
  ...compareSlice(...a),
  ...evaluateSlice(...a),
}));
