import type { Platform } from '../platform/types';
import { OPTIONAL_FEATURES } from '../gpu/device';
import { Runtime } from '../gpu/runtime';
import { matmulTuner } from '../gpu/ops/autotune';
import { matmul } from '../gpu/ops/matmul';
import { matmulRef, rowRelativeError } from '../gpu/reference';
import { transfer } from 'comlink';
import { importCheckpoint } from '../model/checkpoint';
import { directorySink } from '../platform/directorySink';
import { paramCount } from '../model/config';
import { checkKvCache } from '../model/memory';
import { modelMemory } from '../train/memorySummary';
import { DEFAULT_LOOP } from '../sage/loopContract';
import { ByteTokenizer } from '../model/tokenizer';
import { memorisationRun } from '../train/memorise';
import { ModelSession, RateMeter } from '../train/session';
import { runSteps } from '../train/trainLoop';
import type { SftExample } from '../train/sft';
import { readSftCorpus } from './corpusFile';
import { bankToJsonl, bankToVerlParquet } from '../sage/bankExport';
import { MemoryRunStore, RUN_FILES } from '../sage/runRecords';
import { recordSettings } from '../sage/runSpec';
import { opfsAutosave } from './autosave';
import { zipFiles } from '../util/zip';
import { latestEvery } from '../util/throttle';
import { EvolveJob, problemSetReport, readProblems, readSftSeeds } from './evolveJob';
import { readPicked } from './pickedFiles';
import { evaluateHeld } from './evaluate';
import { findOverlap, holdOut, overlapReport, withoutOverlap } from '../data/content';
import type { Problem } from '../data/problem';
import { rng } from '../util/random';
import type {
  CheckpointFile,
  DeviceReport,
  EngineApi,
  EvolveEvent,
  EvolveSettings,
  ModelSummary,
  SelfCheckResult,
  SftRunResult,
  TrainCheckResult,
  TrainStepReport,
} from './api';

/** The loss per answer token below which the training check passes. */
const CHECK_THRESHOLD = 0.2;
/** Streamed generation reaches the UI at most this often: each update crosses the worker boundary. */
const STREAM_INTERVAL_MS = 100;

/** The engine: owns the device. Runs in a Web Worker in the browser, in-process in Node. */
export function createEngine(platform: Platform): EngineApi {
  let runtime: Promise<Runtime> | null = null;
  /** The model held for fine-tuning and export. */
  let session: ModelSession | null = null;
  /**
   * The device, acquired on first use. A lost device (a driver reset, a crashed GPU process)
   * takes the held model and run with it; the next call acquires a new one, and an autosaved
   * run can be resumed on it.
   */
  /** Resolves with the reason when the current device is lost. */
  let deviceLost: Promise<string> = new Promise(() => {});
  const rt = () =>
    (runtime ??= Runtime.create(platform).then((r) => {
      const mine = runtime;
      deviceLost = new Promise((resolve) =>
        r.ctx.onLost((info) => {
          resolve(`${info.reason}${info.message ? `: ${info.message}` : ''}`);
          if (runtime !== mine) return;
          runtime = null;
          session = null;
          job = null;
        }),
      );
      return r;
    }));
  /**
   * Work that failed because the device went away fails with that reason, not with whichever
   * GPU call noticed first (the loss is reported a moment after the call fails).
   */
  const explainLoss = async <T>(work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (e) {
      const lost = await Promise.race([deviceLost, new Promise<null>((resolve) => setTimeout(() => resolve(null), 1000))]);
      if (lost !== null) throw new Error(`the GPU device was lost (${lost}); the work in flight stopped there`);
      throw e;
    }
  };
  /** What is using the held model (training, importing, exporting), if anything. */
  let busy: string | null = null;
  let stopRequested = false;
  /** Problems held for the next loop run. */
  const problems: { seeds: Problem[] | null; validation: Problem[] | null } = { seeds: null, validation: null };
  /** The loop run in progress or last ended, for its controls and export. */
  let job: EvolveJob | null = null;
  /** The seed and validation files' names, for the reports of a split taken from them. */
  let seedName = '';
  let validationName = '';
  /** What fine-tuning trains on: the pairs of the seed file or the documents of the corpus read last. */
  let sftExamples: SftExample[] = [];
  /** Files read by stageFiles, until an import or a resume takes them. */
  let staged: CheckpointFile[] | null = null;
  const takeFiles = (files: CheckpointFile[] | null): CheckpointFile[] => {
    if (files) return files;
    if (!staged) throw new Error('no files staged: pick a checkpoint folder or .zip first');
    const taken = staged;
    staged = null;
    return taken;
  };
  /** Where loop runs autosave (OPFS in a browser; none in Node). */
  const autosave = opfsAutosave();
  const runningJob = (): EvolveJob => {
    if (!job) throw new Error('no loop run: start one first');
    return job;
  };
  const toFiles = (files: ReadonlyMap<string, Uint8Array>): CheckpointFile[] => {
    const list = [...files].map(([name, bytes]) => ({ name, bytes }));
    return transfer(list, [...new Set(list.map((f) => f.bytes.buffer as ArrayBuffer))]);
  };

  /** Runs `work` alone: the held model is never trained, replaced or exported twice at once. */
  async function exclusive<T>(what: string, work: () => Promise<T>): Promise<T> {
    if (busy) throw new Error(`cannot start ${what} while ${busy} is running`);
    busy = what;
    try {
      return await explainLoss(work);
    } finally {
      busy = null;
    }
  }

  /** Continues an exported or autosaved run on its own model and problems. */
  const resumeFrom = (files: Map<string, Uint8Array>, onEvents: (events: EvolveEvent[]) => void, settings: EvolveSettings) =>
    exclusive('a loop run', async () => {
      const { store, resume, checkpoint } = MemoryRunStore.fromFiles(files);
      const next = ModelSession.create(await rt(), { kind: 'checkpoint', checkpoint: importCheckpoint(checkpoint), name: 'resumed run' });
      replaceModel(next);
      problems.seeds = [...store.problems.seeds];
      problems.validation = [...store.problems.validation];
      job = EvolveJob.resume(next, store, resume.state, settings, onEvents, () => platform.codeSandbox(), autosave);
      const resumed = job;
      return { ...(await resumed.run()), model: summary(next) };
    });

  const held = (): ModelSession => {
    if (!session) throw new Error('no model loaded: start from a preset or import a checkpoint first');
    return session;
  };

  const replaceModel = (next: ModelSession): ModelSummary => {
    session?.destroy();
    // An ended run's export needs its model: it is gone with it.
    job = null;
    session = next;
    return summary(next);
  };

  return {
    async init(): Promise<DeviceReport> {
      let r: Runtime;
      try {
        r = await rt();
      } catch (e) {
        runtime = null;
        throw e;
      }
      return {
        platform: platform.name,
        adapter: {
          vendor: r.ctx.adapter.vendor,
          architecture: r.ctx.adapter.architecture,
          device: r.ctx.adapter.device,
          description: r.ctx.adapter.description,
        },
        features: OPTIONAL_FEATURES.map((name) => ({ name, granted: r.ctx.features.has(name) })),
        subgroupSize: r.ctx.subgroupSize,
        subgroupMatmul: r.subgroupMatmul,
        subgroupMatrix: r.ctx.subgroupMatrix ? `${r.ctx.subgroupMatrix.M}×${r.ctx.subgroupMatrix.N}×${r.ctx.subgroupMatrix.K}` : null,
        limits: { ...r.ctx.limits },
      };
    },

    async selfCheck({ M, N, K }): Promise<SelfCheckResult> {
      const r = await rt();
      const a = Float32Array.from({ length: M * K }, () => Math.random() * 2 - 1);
      const b = Float32Array.from({ length: K * N }, () => Math.random() * 2 - 1);
      const ta = r.upload(a, [M, K]);
      const tb = r.upload(b, [K, N]);
      const shape = { batch: 1, M, N, K, transA: false, transB: false };
      const tuner = matmulTuner(r);
      const tuning = tuner.isTuned(shape) ? 'cached' : 'measured';
      if (tuning === 'measured') {
        await tuner.tune(shape);
        await r.cacheFlush();
      }
      const variant = tuner.choose(shape);
      try {
        matmul(r, { a: ta, b: tb }); // warm-up: compiles the pipeline
        await r.sync();
        const t0 = performance.now();
        const out = matmul(r, { a: ta, b: tb });
        const got = await r.read(out);
        const gpuMs = performance.now() - t0;
        r.release(out);
        const ref = matmulRef({ a, b, ...shape });
        const scale = matmulRef({ a: a.map(Math.abs), b: b.map(Math.abs), ...shape });
        const maxRelError = rowRelativeError(got, ref, N, scale).error;
        return {
          shape: { M, N, K },
          variant,
          tuning,
          maxRelError,
          passed: maxRelError <= 1e-5,
          gpuMs,
          gflops: (2 * M * N * K) / gpuMs / 1e6,
        };
      } finally {
        r.release(ta, tb);
      }
    },

    async trainCheck({ steps }, onStep: (report: TrainStepReport) => void): Promise<TrainCheckResult> {
      return exclusive('the training check', async () => {
        const r = await rt();
        const { model, trainer } = memorisationRun(r, steps);
        let first = Number.NaN;
        let last = Number.NaN;
        const rate = new RateMeter();
        try {
          for (let i = 0; i < steps; i++) {
            const s = await trainer.step();
            if (i === 0) first = s.loss;
            last = s.loss;
            rate.add(s);
            onStep({ step: s.step, loss: s.loss, gradNorm: s.gradNorm, tokensPerS: rate.tokensPerS });
          }
        } finally {
          trainer.destroy();
          model.destroy();
        }
        return {
          preset: 'tiny',
          parameters: paramCount(model.config),
          steps,
          firstLoss: first,
          finalLoss: last,
          passed: last < CHECK_THRESHOLD,
          threshold: CHECK_THRESHOLD,
          tokensPerS: rate.tokensPerS,
        };
      });
    },

    async loadPreset(preset, seed) {
      return exclusive('loading a preset', async () => replaceModel(ModelSession.create(await rt(), { kind: 'preset', preset, seed })));
    },

    async stageFiles(picked) {
      staged = null;
      const read = await readPicked(picked);
      staged = read.files;
      // The outcomes too: a resumed run's comparison pairs its first validation's problems with its last.
      const recordNames: readonly string[] = [RUN_FILES.config, RUN_FILES.metrics, RUN_FILES.outcomes, RUN_FILES.bank, RUN_FILES.state];
      return { name: read.name, records: read.files.filter((f) => recordNames.includes(f.name)) };
    },

    async importCheckpoint(name, files, onProgress, baseDtype) {
      return exclusive('importing a checkpoint', async () => {
        const r = await rt();
        const checkpoint = importCheckpoint(new Map(takeFiles(files).map((f) => [f.name, f.bytes])));
        // A record's run settings are checked here, as a refusal of the checkpoint: the page resolves its defaults from them.
        if (checkpoint.labSettings) recordSettings(checkpoint.labSettings);
        const stream = onProgress ? latestEvery(onProgress, STREAM_INTERVAL_MS) : null;
        const next = ModelSession.create(r, { kind: 'checkpoint', checkpoint, name, onProgress: stream?.push, baseDtype }, () => {
          // Every refusal came before this: the held model goes only now, so the two never share the GPU.
          session?.destroy();
          session = null;
        });
        stream?.flush();
        return replaceModel(next);
      });
    },

    async readSftSeeds(name, file, fields) {
      const read = await readSftSeeds(name, file, fields);
      sftExamples = read.pairs;
      return read.report;
    },

    async readSftCorpus(name, file, split) {
      const read = await readSftCorpus(name, file, split);
      sftExamples = read.documents;
      return read.report;
    },

    async sft(examples, settings, onStep): Promise<SftRunResult> {
      return exclusive('fine-tuning', async () => {
        const s = held();
        stopRequested = false;
        const trainer = await s.startSft(examples ?? sftExamples, settings);
        const r = await runSteps(trainer, {
          steps: settings.steps,
          onStep: (p) => onStep({ step: p.step, loss: p.loss, gradNorm: p.gradNorm, tokensPerS: p.tokensPerS, lr: p.lr, finite: p.finite }),
          stopped: () => stopRequested,
        });
        return { model: summary(s), steps: r.steps, firstLoss: r.firstLoss, finalLoss: r.finalLoss, tokensPerS: r.tokensPerS, skipped: r.skipped, stopped: r.stopped };
      });
    },

    stopSft() {
      stopRequested = true;
    },

    async generate(prompts, options, onToken) {
      return exclusive('generating', async () => {
        const stream = onToken ? latestEvery(onToken, STREAM_INTERVAL_MS) : null;
        const result = await held().generate(prompts, options, stream?.push);
        stream?.flush();
        return result;
      });
    },

    async exportCheckpoint(): Promise<CheckpointFile[]> {
      return exclusive('exporting a checkpoint', async () => toFiles(await held().exportFiles({ kind: 'sft' })));
    },

    async exportCheckpointTo(dir) {
      return exclusive('exporting a checkpoint', async () => {
        const sink = directorySink(dir);
        await held().writeCheckpoint(sink, { kind: 'sft' });
        return sink.written;
      });
    },

    async setLora(lora, seed) {
      return exclusive('setting up LoRA', async () => {
        held().setLora(lora, { seed });
        return summary(held());
      });
    },

    async addAdapter() {
      return exclusive('adding an adapter', async () => {
        held().setLora(null, { adapterFiles: new Map(takeFiles(null).map((f) => [f.name, f.bytes])) });
        return summary(held());
      });
    },

    async exportAdapter() {
      return exclusive('exporting the adapter', async () => toFiles(await held().exportAdapter()));
    },

    async setBaseDtype(dtype) {
      return exclusive(`storing the base in ${dtype}`, async () => {
        await held().setBaseDtype(dtype);
        return summary(held());
      });
    },

    async setKvCache(dtype) {
      return exclusive(`keeping the KV cache in ${dtype}`, async () => {
        const s = held();
        checkKvCache(s.config, dtype);
        s.kvCache = dtype;
        return summary(s);
      });
    },

    async loadProblems(which, name, file, fields) {
      const { problems: loaded, report } = await readProblems(which, name, file, fields);
      problems[which] = loaded;
      if (which === 'seeds') seedName = name;
      else validationName = name;
      return report;
    },

    async holdOutSeeds(fraction, seed) {
      if (!problems.seeds) throw new Error('no seed problems loaded: load a seed file first');
      const name = seedName;
      const split = holdOut(problems.seeds, fraction, rng(seed));
      problems.seeds = split.seeds;
      problems.validation = split.validation;
      validationName = `${Math.round(100 * fraction)}% of ${name} held out (seed ${seed})`;
      return {
        seeds: problemSetReport('seeds', name, split.seeds),
        validation: problemSetReport('validation', validationName, split.validation),
      };
    },

    async problemOverlap() {
      if (!problems.seeds || !problems.validation) return null;
      return overlapReport(findOverlap(problems.seeds, problems.validation), problems.validation.length);
    },

    async dropOverlap() {
      if (!problems.seeds || !problems.validation) throw new Error('load seed and validation problems first');
      const overlap = findOverlap(problems.seeds, problems.validation);
      const kept = withoutOverlap(problems.validation, overlap);
      if (!kept.length) throw new Error('every validation problem shares its content with a seed: nothing would be held out');
      problems.validation = kept;
      if (overlap.length) validationName = `${validationName}, ${overlap.length} overlapping the seeds dropped`;
      return problemSetReport('validation', validationName, kept);
    },

    async evaluate(request) {
      return exclusive('evaluating', async () => {
        if (!problems.validation) throw new Error('no validation problems loaded: load a held-out file first');
        return evaluateHeld(held(), problems.validation, request, () => platform.codeSandbox());
      });
    },

    async evolve(request, onEvents) {
      return exclusive('a loop run', async () => {
        const s = held();
        if (!problems.seeds) throw new Error('no seed problems loaded: load a seed file first');
        if (!problems.validation) throw new Error('no validation problems loaded: load a held-out file first');
        const started = EvolveJob.start(s, { seeds: problems.seeds, validation: problems.validation }, request, onEvents, () => platform.codeSandbox(), autosave);
        job = started;
        return { ...(await started.run()), model: summary(s) };
      });
    },

    async resumeRun(files, onEvents, settings = {}) {
      return resumeFrom(new Map(takeFiles(files).map((f) => [f.name, f.bytes])), onEvents, settings);
    },

    async autosaved() {
      const info = await autosave?.info();
      if (!autosave || !info) return null;
      const records = await autosave.load([RUN_FILES.config, RUN_FILES.metrics, RUN_FILES.outcomes, RUN_FILES.bank, RUN_FILES.state]);
      return records ? { info, records: toFiles(records) } : null;
    },

    async resumeAutosave(onEvents, settings = {}) {
      const files = await autosave?.load();
      if (!files) throw new Error('no autosaved run in this browser');
      return resumeFrom(files, onEvents, settings);
    },

    async discardAutosave() {
      await autosave?.clear();
    },

    pauseEvolve: () => runningJob().pause(),
    resumeEvolve: () => runningJob().resume(),
    stepEvolve: () => runningJob().stepOnce(),
    stopEvolve: () => runningJob().stop(),

    async exportRun() {
      return toFiles(await runningJob().files());
    },

    async exportRunZip() {
      const bytes = zipFiles([...(await runningJob().files())].map(([name, data]) => ({ name, bytes: data })));
      return transfer({ name: 'run.zip', bytes }, [bytes.buffer as ArrayBuffer]);
    },

    async exportBank(format) {
      const { bank, settings } = runningJob();
      return format === 'jsonl'
        ? { name: 'bank.jsonl', bytes: new TextEncoder().encode(bankToJsonl(bank)) }
        : { name: 'bank.parquet', bytes: bankToVerlParquet(bank, 'train', settings.templates) };
    },
  };
}

function summary(s: ModelSession): ModelSummary {
  const c = s.config;
  return {
    origin: s.origin,
    parameters: s.parameters,
    layers: c.num_hidden_layers,
    hidden: c.hidden_size,
    heads: c.num_attention_heads,
    kvHeads: c.num_key_value_heads,
    vocab: c.vocab_size,
    context: c.max_position_embeddings,
    tokenizer: s.tokenizer instanceof ByteTokenizer ? 'byte-level' : 'Hugging Face',
    chatTemplate: s.tokenizer.chatTemplate !== null,
    rope: c.rope_scaling?.rope_type ?? 'default',
    optimizerStep: s.optimizerStep,
    lora: s.lora ? { ...s.lora, trainable: s.model.trainable.size } : null,
    baseDtype: s.baseDtype,
    kvCache: s.kvCache,
    memory: modelMemory(c, s.lora, DEFAULT_LOOP.proposals * DEFAULT_LOOP.difficultySamples, s.kvCache),
    templates: s.templates,
    rolesTaught: s.rolesTaught,
    labSettings: s.labSettings,
  };
}

