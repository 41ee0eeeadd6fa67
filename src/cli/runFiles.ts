/**
 * A run's folder on disk: config.json, metrics.jsonl, transcripts.jsonl, bank-events.jsonl
 * (append-only: a crash loses at most the step in flight), state.json, and checkpoints as
 * Hugging Face folders (best/, last/). What `npm run evolve --resume DIR` reads back.
 */
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BankEvent } from '../sage/bank';
import type { Transcript } from '../sage/loop';
import type { MetricsRecord, RunState, RunStore } from '../sage/run';

export const RUN_FILES = {
  config: 'config.json',
  metrics: 'metrics.jsonl',
  transcripts: 'transcripts.jsonl',
  bank: 'bank-events.jsonl',
  state: 'state.json',
} as const;

/** Writes whole files through a temporary name, so a crash never leaves half a file. */
function writeAtomic(path: string, data: string | Uint8Array): void {
  writeFileSync(`${path}.tmp`, data);
  renameSync(`${path}.tmp`, path);
}

/** Every file of a checkpoint folder, by name (a half-written `.tmp` left by a crash is skipped). */
export function readCheckpointFolder(dir: string): Map<string, Uint8Array> {
  if (!existsSync(dir)) throw new Error(`no checkpoint folder ${dir}`);
  return new Map(readdirSync(dir).filter((f) => !f.endsWith('.tmp')).map((f) => [f, new Uint8Array(readFileSync(join(dir, f)))]));
}

export class RunFolder implements RunStore {
  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true });
    // The event log exists from the start, so a run with no event yet still resumes.
    appendFileSync(join(dir, RUN_FILES.bank), '');
  }

  writeConfig(config: unknown): void {
    writeAtomic(join(this.dir, RUN_FILES.config), JSON.stringify(config, null, 2) + '\n');
  }

  async metrics(m: MetricsRecord): Promise<void> {
    appendFileSync(join(this.dir, RUN_FILES.metrics), JSON.stringify(m) + '\n');
  }

  async transcripts(t: Transcript[]): Promise<void> {
    if (t.length) appendFileSync(join(this.dir, RUN_FILES.transcripts), t.map((x) => JSON.stringify(x)).join('\n') + '\n');
  }

  bank(e: BankEvent): void {
    appendFileSync(join(this.dir, RUN_FILES.bank), JSON.stringify(e) + '\n');
  }

  async state(s: RunState): Promise<void> {
    writeAtomic(join(this.dir, RUN_FILES.state), JSON.stringify(s, null, 2) + '\n');
  }

  writeCheckpoint(tag: string, files: ReadonlyMap<string, Uint8Array>): void {
    const dir = join(this.dir, tag);
    mkdirSync(dir, { recursive: true });
    for (const [name, bytes] of files) writeAtomic(join(dir, name), bytes);
  }

  readCheckpoint(tag: string): Map<string, Uint8Array> {
    return readCheckpointFolder(join(this.dir, tag));
  }

  /** What a resumed run needs: its config, state and bank events; a line cut by a crash is dropped. */
  readResume(): { config: unknown; state: RunState; bankEvents: BankEvent[] } {
    const read = (name: string) => {
      const path = join(this.dir, name);
      if (!existsSync(path)) throw new Error(`${this.dir} is not a run folder: no ${name}`);
      return readFileSync(path, 'utf8');
    };
    const lines = read(RUN_FILES.bank).split('\n');
    const bankEvents: BankEvent[] = [];
    lines.forEach((line, i) => {
      if (!line.trim()) return;
      try {
        bankEvents.push(JSON.parse(line) as BankEvent);
      } catch {
        if (i < lines.length - 2) throw new Error(`${RUN_FILES.bank}:${i + 1}: not valid JSON`);
      }
    });
    return { config: JSON.parse(read(RUN_FILES.config)), state: JSON.parse(read(RUN_FILES.state)) as RunState, bankEvents };
  }
}
