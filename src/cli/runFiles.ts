/**
 * A run's folder on disk, in the layout of src/sage/runRecords.ts, written as the run goes
 * (the bank's event log append-only: a crash loses at most the step in flight). What `npm run
 * evolve --resume DIR` reads back, and what the lab imports to continue a run.
 */
import { appendFileSync, closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, writeFileSync, writeSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import type { Problem } from '../data/problem';
import { parseKernelPlan, type KernelPlan } from '../gpu/kernelPlan';
import { importCheckpoint, LAB_RECORD, parseLabRecord, type ImportedCheckpoint, type LabRecord, type PromptSet } from '../model/checkpoint';
import type { FileSink } from '../platform/fileSink';
import type { LoadProgress } from '../train/session';
import type { BankEvent, ProblemBank } from '../sage/bank';
import { bankToVerlParquet, heldOutToVerlParquet } from '../sage/bankExport';
import { recordSettings, type SettingValues } from '../sage/runSpec';
import { DEFAULT_MODEL, isShippedModel, SHIPPED_MODELS_DIR, type ShippedModelName } from '../sage/shippedModels';
import { chooseTemplates, type Templates } from '../sage/templates';
import type { Transcript } from '../sage/loop';
import type { MetricsRecord, RunState, RunStore } from '../sage/run';
import type { ValidationOutcomes } from '../sage/validation';
import { parseJsonl, parseProblems, parseResume, recordsUpTo, RUN_FILES, type ResumeRecords } from '../sage/runRecords';

export { RUN_FILES };

/** Writes whole files through a temporary name, so a crash never leaves half a file. */
function writeAtomic(path: string, data: string | Uint8Array): void {
  writeFileSync(`${path}.tmp`, data);
  renameSync(`${path}.tmp`, path);
}

/**
 * Every file of a checkpoint folder by its path there (adapter/adapter_config.json for a
 * subfolder's); a half-written `.tmp` left by a crash is skipped.
 */
export function readCheckpointFolder(dir: string): Map<string, Uint8Array> {
  if (!existsSync(dir)) throw new Error(`no checkpoint folder ${dir}`);
  const files = new Map<string, Uint8Array>();
  const walk = (sub: string) => {
    for (const entry of readdirSync(join(dir, sub), { withFileTypes: true })) {
      const name = sub ? `${sub}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(name);
      else if (!entry.name.endsWith('.tmp')) {
        // A plain Uint8Array over the file's own bytes: no copy, and slice() copies as readers expect of it (a Buffer's does not).
        const b = readFileSync(join(dir, name));
        files.set(name, new Uint8Array(b.buffer, b.byteOffset, b.byteLength));
      }
    }
  };
  walk('');
  return files;
}

/**
 * A checkpoint folder imported. Its refusal names the folder, so that a bad --model or --from
 * is one line that says which folder and why ("…/x: config.json is missing").
 */
export function importCheckpointFolder(dir: string): ImportedCheckpoint {
  const files = readCheckpointFolder(dir);
  try {
    return importCheckpoint(files);
  } catch (e) {
    throw new Error(`${dir}: ${(e as Error).message}`);
  }
}

/** Writes a checkpoint's files (names may hold subfolders) into `dir`, each whole or not at all. */
export function writeCheckpointFolder(dir: string, files: ReadonlyMap<string, Uint8Array>): void {
  for (const [name, bytes] of files) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeAtomic(join(dir, name), bytes);
  }
}

/**
 * A sink that writes a checkpoint's files (names may hold subfolders) into `dir` as their
 * chunks come, each file whole or not at all (written beside, then renamed).
 */
export function folderSink(dir: string): FileSink & { written: string[] } {
  const written: string[] = [];
  return {
    written,
    async file(name, chunks) {
      const path = join(dir, name);
      mkdirSync(dirname(path), { recursive: true });
      const fd = openSync(`${path}.tmp`, 'w');
      try {
        for await (const c of chunks) writeSync(fd, c);
      } finally {
        closeSync(fd);
      }
      renameSync(`${path}.tmp`, path);
      written.push(name);
    },
  };
}

/** A checkpoint folder's LAB_RECORD, checked (empty when it has none: a plain Hugging Face model). */
export function checkpointRecord(dir: string): LabRecord {
  const path = join(dir, LAB_RECORD);
  if (!existsSync(path)) return {};
  try {
    return parseLabRecord(readFileSync(path));
  } catch (e) {
    throw new Error(`${dir}/${(e as Error).message}`);
  }
}

/** The run settings a checkpoint folder's record (checkpointRecord) says the model is meant for, checked as --config is (none: {}). */
export function recordedRunSettings(record: LabRecord, dir: string): Partial<SettingValues> {
  const settings = record.settings;
  try {
    return settings ? recordSettings(settings) : {};
  } catch (e) {
    throw new Error(`${dir}/${(e as Error).message}`);
  }
}

/**
 * The role prompts for a command on a checkpoint folder, given its record (checkpointRecord; see
 * chooseTemplates): --templates when given, with a line when it differs from what the
 * checkpoint records; else the record.
 */
export function checkpointTemplates(record: LabRecord, dir: string, given: string | undefined): PromptSet {
  const recorded = record.templates;
  if (given && recorded && given !== recorded) console.log(`--templates ${given}: ${dir} records the ${recorded} prompts (its ${LAB_RECORD}, those it was trained with); ${given} as asked`);
  return chooseTemplates({ given: given as PromptSet | undefined, recorded, fromScratch: false });
}

/** Prints a line (on stderr, beside any machine-readable output) as each weight shard of a checkpoint reaches the GPU. */
export function logShards(p: LoadProgress): void {
  if (p.bytes === p.total) console.error(`loaded ${p.file} (${p.shard} of ${p.shards}, ${(p.total / 2 ** 20).toFixed(0)} MiB)`);
}

/** The shipped default's folder (DEFAULT_MODEL): where a run starts unless told otherwise. */
export const SHIPPED_MODEL = `${SHIPPED_MODELS_DIR}/${DEFAULT_MODEL}`;

/** Which shipped checkpoint a folder is (data/models/<name>, however the path is written), if it is one. */
export function shippedModelIn(dir: string): ShippedModelName | undefined {
  const path = relative(resolve(SHIPPED_MODELS_DIR), resolve(dir));
  return isShippedModel(path) ? path : undefined;
}

/** The run folder's verl datasets: the bank to train on, the held-out split to validate on. */
export const VERL_FILES = { train: 'verl/train.parquet', test: 'verl/test.parquet' } as const;

/** Steps between two saves of `last/`: what a killed run may have to do again. */
export const DEFAULT_CHECKPOINT_EVERY = 10;

export class RunFolder implements RunStore {
  /** `last/` is saved every this many steps, and state.json with it: the state of `last/`, what --resume continues from. */
  readonly checkpointing: NonNullable<RunStore['checkpointing']>;
  private verl: { bank: ProblemBank; templates: Templates } | null = null;
  private writtenPlan: string | null = null;

  constructor(
    readonly dir: string,
    checkpointEvery = DEFAULT_CHECKPOINT_EVERY,
  ) {
    this.checkpointing = {
      every: checkpointEvery,
      saved: async (s) => {
        // The bank as it stands at the checkpoint, beside its weights: verl continues from both.
        if (this.verl) writeAtomic(join(this.dir, VERL_FILES.train), bankToVerlParquet(this.verl.bank, 'train', this.verl.templates));
        writeAtomic(join(this.dir, RUN_FILES.state), JSON.stringify(s, null, 2) + '\n');
      },
    };
    mkdirSync(dir, { recursive: true });
    // The event log exists from the start, so a run with no event yet still resumes.
    appendFileSync(join(dir, RUN_FILES.bank), '');
  }

  /** The first record of a run found in the folder, if one is there. */
  static heldRecord(dir: string): string | null {
    return Object.values(RUN_FILES).find((f) => existsSync(join(dir, f)) && (f !== RUN_FILES.bank || readFileSync(join(dir, f)).length > 0)) ?? null;
  }

  writeConfig(config: unknown): void {
    writeAtomic(join(this.dir, RUN_FILES.config), JSON.stringify(config, null, 2) + '\n');
  }

  /**
   * Keeps the run's problems as verl's RL datasets (VERL_FILES): the held-out split now, the
   * bank with every checkpoint of `last/`, prompts in the run's Solver template.
   */
  exportVerl(bank: ProblemBank, heldOut: readonly Problem[], templates: Templates): void {
    this.verl = { bank, templates };
    mkdirSync(join(this.dir, 'verl'), { recursive: true });
    writeAtomic(join(this.dir, VERL_FILES.test), heldOutToVerlParquet(heldOut, templates));
  }

  writeProblems(seeds: readonly Problem[], validation: readonly Problem[]): void {
    writeAtomic(join(this.dir, RUN_FILES.seeds), JSON.stringify(seeds));
    writeAtomic(join(this.dir, RUN_FILES.validation), JSON.stringify(validation));
  }

  async metrics(m: MetricsRecord): Promise<void> {
    appendFileSync(join(this.dir, RUN_FILES.metrics), JSON.stringify(m) + '\n');
  }

  async transcripts(t: Transcript[]): Promise<void> {
    if (t.length) appendFileSync(join(this.dir, RUN_FILES.transcripts), t.map((x) => JSON.stringify(x)).join('\n') + '\n');
  }

  async outcomes(o: ValidationOutcomes[]): Promise<void> {
    if (o.length) appendFileSync(join(this.dir, RUN_FILES.outcomes), o.map((x) => JSON.stringify(x)).join('\n') + '\n');
  }

  bank(e: BankEvent): void {
    appendFileSync(join(this.dir, RUN_FILES.bank), JSON.stringify(e) + '\n');
  }

  /** A step's state goes to disk with the checkpoint it belongs to (checkpointing.saved), not before. */
  async state(_: RunState): Promise<void> {}

  /** Writes the checkpoint under `tag` file by file as it comes (see folderSink). */
  checkpointSink(tag: string): FileSink & { written: string[] } {
    return folderSink(join(this.dir, tag));
  }

  /** Writes the run's kernel plan when it differs from the one last written (it grows as new shapes are met). */
  writeKernelPlan(plan: KernelPlan): void {
    const text = JSON.stringify(plan, null, 2) + '\n';
    if (text === this.writtenPlan) return;
    writeAtomic(join(this.dir, RUN_FILES.kernels), text);
    this.writtenPlan = text;
  }

  /** The kernel plan recorded in run folder `dir` (null when it has none). */
  static kernelPlanOf(dir: string): KernelPlan | null {
    const path = join(dir, RUN_FILES.kernels);
    return existsSync(path) ? parseKernelPlan(readFileSync(path, 'utf8'), path) : null;
  }

  /** The problems the run was given (its seeds and held-out split), as it began. */
  readProblems(): { seeds: Problem[]; validation: Problem[] } {
    const read = (name: string) => parseProblems(readFileSync(join(this.dir, name), 'utf8'), join(this.dir, name));
    return { seeds: read(RUN_FILES.seeds), validation: read(RUN_FILES.validation) };
  }

  /** What a resumed run needs: its config, state and bank events. */
  readResume(): ResumeRecords {
    return parseResume((name) => {
      const path = join(this.dir, name);
      if (!existsSync(path)) {
        // The config is written first and the state with the first checkpoint: a run killed before that has nothing to resume.
        if (name === RUN_FILES.state && existsSync(join(this.dir, RUN_FILES.config))) throw new Error(`${this.dir} has no checkpoint to resume from (no ${name}: the run stopped before its first): start it again`);
        throw new Error(`${this.dir} is not a run folder: no ${name}`);
      }
      return readFileSync(path, 'utf8');
    });
  }

  /**
   * The run as of its `last/` checkpoint, to continue from there: the records of steps after
   * it (a process killed between two checkpoints) are dropped from the files, since those
   * steps run again. `dropped`: how many steps that was. `resume`: the records as readResume() gave them.
   */
  rewind(resume = this.readResume()): ResumeRecords & { dropped: number } {
    const upTo = recordsUpTo(resume.state.step);
    /** `all` without the records `keep` refuses, the file rewritten when any were. */
    const filter = <T>(name: string, all: T[], keep: (x: T) => boolean): { kept: T[]; dropped: number } => {
      const kept = all.filter(keep);
      if (kept.length < all.length) writeAtomic(join(this.dir, name), kept.map((x) => JSON.stringify(x) + '\n').join(''));
      return { kept, dropped: all.length - kept.length };
    };
    const read = <T>(name: string): T[] => {
      const path = join(this.dir, name);
      return existsSync(path) ? parseJsonl<T>(readFileSync(path, 'utf8'), path) : [];
    };
    const metrics = filter(RUN_FILES.metrics, read<MetricsRecord>(RUN_FILES.metrics), upTo.metrics);
    filter(RUN_FILES.transcripts, read<Transcript>(RUN_FILES.transcripts), upTo.transcript);
    filter(RUN_FILES.outcomes, read<ValidationOutcomes>(RUN_FILES.outcomes), upTo.outcomes);
    const bank = filter(RUN_FILES.bank, resume.bankEvents, upTo.bankEvent);
    return { ...resume, bankEvents: bank.kept, dropped: metrics.dropped };
  }
}
