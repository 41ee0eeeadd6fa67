import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { METHODS, type MethodName } from '../sage/config';
import { adapterName, dismissFirstVisit, firstVisitDismissed, REFERENCE_STEP, showFirstVisit, startPlan, type PlanInput } from './firstVisit';
import { DEFAULT_MODEL, SHIPPED_MODELS_DIR } from '../sage/shippedModels';

/** A deterministic generator, so a failure names inputs that reproduce. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32);
}

const SWIFTSHADER = { vendor: 'google', architecture: 'swiftshader', device: '', description: '' };

function input(r: () => number, over: Partial<PlanInput> = {}): PlanInput {
  const int = (lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));
  const methods = Object.keys(METHODS) as MethodName[];
  return {
    method: methods[int(0, methods.length - 1)]!,
    model: null,
    seeds: { name: `seeds-${int(1, 999)}.jsonl`, problems: int(1, 5000) },
    validation: { name: `held-${int(1, 999)}.jsonl`, problems: int(1, 2000) },
    steps: int(1, 500),
    evalEvery: int(1, 20),
    patience: int(1, 10),
    validationLimit: int(1, 1000),
    warmupSteps: 0,
    adapter: SWIFTSHADER,
    ...over,
  };
}

describe('the figures quoted before a first step', () => {
  it('are those of the benchmark record they name (browser rows)', () => {
    const record = JSON.parse(readFileSync(REFERENCE_STEP.record, 'utf8')) as {
      machine: { cores: number };
      adapter: { architecture: string };
      tables: unknown[];
      data: { browser: { rows: { method: string; stepSeconds: number[]; prepare: { seconds: number } }[] } };
    };
    expect(record.machine.cores).toBe(2);
    expect(record.adapter.architecture).toBe('swiftshader');
    // Measured as a default run makes its steps: the default checkpoint with the settings it records.
    expect(JSON.stringify(record.tables)).toContain(`${SHIPPED_MODELS_DIR}/${DEFAULT_MODEL} with the settings its record names`);
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const quoted = Object.entries(REFERENCE_STEP.secondsPerStep);
    expect(quoted.length).toBeGreaterThan(0);
    for (const [method, seconds] of quoted) {
      const row = record.data.browser.rows.find((x) => x.method === method);
      expect(row, method).toBeDefined();
      expect(Math.round(10 * median(row!.stepSeconds)) / 10, method).toBe(seconds);
    }
    // The tuning before the first step: the first method of the record, from an empty cache.
    expect(Math.round(record.data.browser.rows[0]!.prepare.seconds)).toBe(REFERENCE_STEP.tuningSeconds);
  });
});

describe('startPlan', () => {
  it('says what Start uses, resolved from the inputs, over random inputs', () => {
    const r = rng(34);
    for (let i = 0; i < 200; i++) {
      const p = input(r);
      const plan = startPlan(p);
      expect(plan.model).toContain(DEFAULT_MODEL);
      expect(plan.model).not.toContain('warm-up steps');
      expect(plan.problems).toContain(`${p.seeds!.problems} seed problems from ${p.seeds!.name}`);
      expect(plan.problems).toContain(`on ${Math.min(p.validationLimit, p.validation!.problems)} held-out problems of ${p.validation!.name}`);
      expect(plan.problems).toContain(`every ${p.evalEvery} steps`);
      expect(plan.method).toContain(METHODS[p.method].summary);
      expect(plan.method).toContain(`for ${p.steps} steps`);
      expect(plan.method).toContain(`${p.patience} validations`);
      // Honest about the estimate: none for this adapter, a measured figure for scale, of the method when it was measured.
      expect(plan.time).toContain('no estimate');
      expect(plan.time).toContain('google swiftshader');
      const measured = REFERENCE_STEP.secondsPerStep[p.method];
      expect(plan.time).toContain(measured === undefined ? `sage took ${REFERENCE_STEP.secondsPerStep.sage} s a step` : `${p.method} took ${measured} s a step`);
    }
  });

  it('names a held model and a warm-up, and waits for files still loading', () => {
    const plan = startPlan(input(rng(1), { model: { origin: 'tiny', parameters: 1_020_000 }, warmupSteps: 400, seeds: null, validation: null }));
    expect(plan.model).toBe('tiny (1.02 M parameters), the model held now; first 400 warm-up steps of supervised training on the seeds');
    expect(plan.problems).toBe('the demo curriculum, still loading');
  });

  it('names the adapter as the device report does', () => {
    expect(adapterName(null)).toBe('this adapter');
    expect(adapterName({ vendor: 'nvidia', architecture: 'hopper', device: '', description: 'NVIDIA H100' })).toBe('nvidia hopper (NVIDIA H100)');
    expect(adapterName({ vendor: '', architecture: '', device: '', description: '' })).toBe('an adapter that does not name itself');
  });
});

describe('the first-visit panel', () => {
  it('shows only once the kept runs are read, none is kept, and it was not dismissed', () => {
    for (const runsLoaded of [false, true])
      for (const runs of [[], [{}]])
        for (const dismissed of [false, true]) expect(showFirstVisit({ runsLoaded, runs, dismissed })).toBe(runsLoaded && runs.length === 0 && !dismissed);
  });

  it('remembers a dismissal, and a storage that refuses leaves it shown without an error', () => {
    const kept = new Map<string, string>();
    const storage = { getItem: (k: string) => kept.get(k) ?? null, setItem: (k: string, v: string) => void kept.set(k, v) };
    expect(firstVisitDismissed(storage)).toBe(false);
    dismissFirstVisit(storage);
    expect(firstVisitDismissed(storage)).toBe(true);
    const refusing = {
      getItem: (): string | null => {
        throw new Error('denied');
      },
      setItem: () => {
        throw new Error('denied');
      },
    };
    expect(() => dismissFirstVisit(refusing)).not.toThrow();
    expect(firstVisitDismissed(refusing)).toBe(false);
  });
});
