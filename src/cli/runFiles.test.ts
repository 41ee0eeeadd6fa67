import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { rng } from '../util/random';
import { freshSeed } from '../gpu/testUtils';
import type { BankEvent } from '../sage/bank';
import { MemoryRunStore } from '../sage/runRecords';
import { DEFAULT_MODEL, SHIPPED_MODEL_CATALOGUE, SHIPPED_MODELS_DIR } from '../sage/shippedModels';
import { checkpointRecord, checkpointTemplates, readCheckpointFolder, RUN_FILES, RunFolder, SHIPPED_MODEL, shippedModelIn, writeCheckpointFolder } from './runFiles';

const lines = (dir: string, name: string) => readFileSync(join(dir, name), 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, any>);

describe('a run folder killed between two checkpoints', () => {
  it('rewinds to its last checkpoint: the records of later steps are dropped, the bank replayed to that step, a second rewind changes nothing', async () => {
    const seed = freshSeed();
    const r = rng(seed);
    const steps = 3 + Math.floor(r() * 6);
    const k = 1 + Math.floor(r() * (steps - 1));
    const dir = mkdtempSync(join(tmpdir(), 'sage-rewind-'));
    const folder = new RunFolder(dir, 2);
    folder.writeConfig({ method: 'sage', settings: {} });
    await folder.metrics({ kind: 'validation', step: 0, validation: {} as never });
    await folder.outcomes([{ step: 0, mode: 'solver', problems: [] }]);
    const events: BankEvent[] = [];
    for (let step = 0; step < steps; step++) {
      await folder.metrics({ kind: 'step', step } as never);
      await folder.transcripts([{ step } as never, { step } as never]);
      await folder.outcomes([{ step: step + 1, mode: 'solver', problems: [] }, { step: step + 1, mode: 'planned', problems: [] }]);
      const made: BankEvent[] = [
        { type: 'reject', step, reason: 'validator' },
        { type: 'admit', entry: { problem: { id: `gen/${step}/0` }, provenance: { origin: 'generated', parents: [], step, quality: 0.9, passRates: [] } } as never },
        { type: 'pass-rate', id: 's1', step, rate: r() },
      ];
      for (const e of made) folder.bank(e);
      events.push(...made);
      await folder.state({ step: step + 1, best: null, evaluationsWithoutGain: 0, warmedUp: true });
      // last/ and its state as of step k; the process dies later.
      if (step + 1 === k) await folder.checkpointing.saved({ step: k, best: null, evaluationsWithoutGain: 0, warmedUp: true });
    }
    folder.writeProblems([], []);
    writeCheckpointFolder(join(dir, 'last'), new Map([['config.json', new TextEncoder().encode('{}')]]));
    // The lab's import of the folder as it was left keeps the same records as --resume.
    const imported = MemoryRunStore.fromFiles(readCheckpointFolder(dir));
    const resume = new RunFolder(dir).rewind();
    expect(imported.store.metricsRecords).toEqual(lines(dir, RUN_FILES.metrics));
    expect(imported.store.transcriptRecords).toEqual(lines(dir, RUN_FILES.transcripts));
    expect(imported.store.outcomeRecords).toEqual(lines(dir, RUN_FILES.outcomes));
    expect(imported.resume.bankEvents).toEqual(resume.bankEvents);
    expect(imported.store.bankEvents).toEqual(resume.bankEvents);
    expect(resume.state.step, `seed ${seed}`).toBe(k);
    expect(resume.dropped).toBe(steps - k);
    expect(lines(dir, RUN_FILES.metrics).map((m) => [m.kind, m.step])).toEqual([['validation', 0], ...Array.from({ length: k }, (_, i) => ['step', i])]);
    expect(lines(dir, RUN_FILES.transcripts).map((t) => t.step)).toEqual(Array.from({ length: k }, (_, i) => [i, i]).flat());
    // The validation after step k belongs to the checkpoint; those after it run again.
    expect(lines(dir, RUN_FILES.outcomes).map((o) => o.step)).toEqual([0, ...Array.from({ length: k }, (_, i) => [i + 1, i + 1]).flat()]);
    const kept = events.slice(0, 3 * k);
    expect(resume.bankEvents).toEqual(kept);
    expect(lines(dir, RUN_FILES.bank)).toEqual(kept);
    const again = new RunFolder(dir).rewind();
    expect(again.dropped).toBe(0);
    expect(again.bankEvents).toEqual(kept);
    expect(existsSync(join(dir, `${RUN_FILES.metrics}.tmp`))).toBe(false);
  });

  it('writes state.json with its checkpoint only: a step\'s state alone leaves the folder resuming from the checkpoint', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sage-rewind-'));
    const folder = new RunFolder(dir);
    await folder.state({ step: 7, best: null, evaluationsWithoutGain: 0, warmedUp: true });
    expect(existsSync(join(dir, RUN_FILES.state))).toBe(false);
    await folder.checkpointing.saved({ step: 5, best: null, evaluationsWithoutGain: 0, warmedUp: true });
    await folder.state({ step: 6, best: null, evaluationsWithoutGain: 0, warmedUp: true });
    writeFileSync(join(dir, RUN_FILES.config), '{}');
    expect(folder.readResume().state.step).toBe(5);
  });
});

describe('the prompts a checkpoint folder records', () => {
  it('are its record (the shipped model: compact), instruct where it records none, and --templates when given, with a line when that differs from the record', () => {
    expect(checkpointRecord(SHIPPED_MODEL).templates).toBe('compact');
    expect(checkpointTemplates(checkpointRecord(SHIPPED_MODEL), SHIPPED_MODEL, undefined)).toBe('compact');
    const plain = mkdtempSync(join(tmpdir(), 'sage-plain-'));
    expect(checkpointRecord(plain).templates).toBeUndefined();
    expect(checkpointTemplates(checkpointRecord(plain), plain, undefined)).toBe('instruct');
    const said: string[] = [];
    const log = vi.spyOn(console, 'log').mockImplementation((line: string) => void said.push(line));
    try {
      expect(checkpointTemplates(checkpointRecord(SHIPPED_MODEL), SHIPPED_MODEL, 'compact')).toBe('compact');
      expect(checkpointTemplates(checkpointRecord(plain), plain, 'compact')).toBe('compact');
      expect(said).toEqual([]);
      expect(checkpointTemplates(checkpointRecord(SHIPPED_MODEL), SHIPPED_MODEL, 'instruct')).toBe('instruct');
      expect(said).toEqual([`--templates instruct: ${SHIPPED_MODEL} records the compact prompts (its sage_lab.json, those it was trained with); instruct as asked`]);
    } finally {
      log.mockRestore();
    }
    writeFileSync(join(plain, 'sage_lab.json'), '{"templates": "chat"}');
    expect(() => checkpointRecord(plain).templates).toThrow(`${plain}/sage_lab.json: "templates" must be one of compact, instruct (got "chat")`);
  });
});

describe('the shipped checkpoints', () => {
  it('are the catalogue: every folder of data/models has an entry and every entry a checkpoint, which its path names however it is written', () => {
    const folders = readdirSync(SHIPPED_MODELS_DIR, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name);
    expect(folders.sort()).toEqual(Object.keys(SHIPPED_MODEL_CATALOGUE).sort());
    for (const name of folders) {
      expect(existsSync(join(SHIPPED_MODELS_DIR, name, 'config.json'))).toBe(true);
      expect(checkpointRecord(join(SHIPPED_MODELS_DIR, name)).templates).toBe('compact');
      expect(shippedModelIn(`./${SHIPPED_MODELS_DIR}/${name}/`)).toBe(name);
      expect(shippedModelIn(resolve(SHIPPED_MODELS_DIR, name))).toBe(name);
    }
    expect(shippedModelIn(SHIPPED_MODEL)).toBe(DEFAULT_MODEL);
    expect(shippedModelIn(SHIPPED_MODELS_DIR)).toBeUndefined();
    expect(shippedModelIn(join(SHIPPED_MODELS_DIR, 'toString'))).toBeUndefined();
    expect(shippedModelIn(mkdtempSync(join(tmpdir(), 'sage-plain-')))).toBeUndefined();
  });
});
