/**
 * The first visit: what the lab says to someone who has never run it (no runs kept in this
 * browser), and whether they have dismissed that. Pure but for the remembered dismissal, so
 * the text is tested without a browser.
 */
import { DEFAULT_METHOD, METHODS, type MethodName } from '../sage/config';
import type { DeviceReport } from '../worker/api';
import { DEFAULT_MODEL, SHIPPED_MODEL_CATALOGUE } from '../sage/shippedModels';

/**
 * A measured step of a default run (the default checkpoint and the settings it records) on the demo
 * curriculum, in Chromium (the browser rows of the record; its test reads them back). It is
 * the only figure before a step has run on this adapter: the lab estimates nothing before.
 */
export const REFERENCE_STEP = {
  record: 'bench/results/loop-2026-11-29.json',
  where: 'Chromium on a 2-core CPU without a GPU (SwiftShader)',
  /** Kernel tuning before the first step, from an empty cache. */
  tuningSeconds: 141,
  /** Median seconds a step, per method measured. */
  secondsPerStep: { sage: 23.2, mae: 36.6, rlvr: 8.1 } as Readonly<Partial<Record<MethodName, number>>>,
};

/** What Start will use, as the page resolves it now (a typed setting, else its default). */
export interface PlanInput {
  method: MethodName;
  /** The model held, or null: Start loads the shipped checkpoint. */
  model: { origin: string; parameters: number } | null;
  seeds: { name: string; problems: number } | null;
  validation: { name: string; problems: number } | null;
  steps: number;
  evalEvery: number;
  patience: number;
  validationLimit: number;
  warmupSteps: number;
  adapter: DeviceReport['adapter'] | null;
}

/** The four things a first visitor is told, one sentence each. */
export interface StartPlan {
  model: string;
  problems: string;
  method: string;
  time: string;
}

/** The adapter as the device report names it. */
export function adapterName(adapter: DeviceReport['adapter'] | null): string {
  if (!adapter) return 'this adapter';
  const name = [adapter.vendor, adapter.architecture].filter(Boolean).join(' ');
  return adapter.description ? `${name || 'adapter'} (${adapter.description})` : name || 'an adapter that does not name itself';
}

export function startPlan(p: PlanInput): StartPlan {
  const model = p.model
    ? `${p.model.origin} (${(p.model.parameters / 1e6).toFixed(2)} M parameters), the model held now`
    : `${DEFAULT_MODEL}, shipped with the lab: ${SHIPPED_MODEL_CATALOGUE[DEFAULT_MODEL]} (about 1 M parameters)`;
  const warmup = p.warmupSteps > 0 ? `; first ${p.warmupSteps} warm-up steps of supervised training on the seeds` : '';
  const held = p.validation ? `${Math.min(p.validationLimit, p.validation.problems)} held-out problems of ${p.validation.name}` : 'held-out problems (none loaded yet)';
  const problems = p.seeds
    ? `${p.seeds.problems} seed problems from ${p.seeds.name}; accuracy measured on ${held} before the first step and every ${p.evalEvery} steps`
    : 'the demo curriculum, still loading';
  const method = `${METHODS[p.method].summary}, for ${p.steps} steps (fewer if ${p.patience} validations in a row bring no new best)`;
  const [measured, seconds] = p.method in REFERENCE_STEP.secondsPerStep ? [p.method, REFERENCE_STEP.secondsPerStep[p.method]!] : [DEFAULT_METHOD, REFERENCE_STEP.secondsPerStep[DEFAULT_METHOD]!];
  const time =
    `No step has run on ${adapterName(p.adapter)} yet, so there is no estimate for it: the first step's seconds appear under s / step and the ETA follows. ` +
    `For scale, ${measured} took ${seconds} s a step in ${REFERENCE_STEP.where}, after ${REFERENCE_STEP.tuningSeconds} s tuning kernels before the first step; ` +
    `the tuning is kept for later runs.`;
  return { model: model + warmup, problems, method, time };
}

const DISMISSED_KEY = 'sage-lab.first-visit-dismissed';

/** Whether this browser dismissed the first-visit panel. */
export function firstVisitDismissed(storage: Pick<Storage, 'getItem'> | undefined = globalThis.localStorage): boolean {
  // Storage refused (a locked-down profile): the panel shows again, which is harmless.
  try {
    return storage?.getItem(DISMISSED_KEY) === '1';
  } catch {
    return false;
  }
}

export function dismissFirstVisit(storage: Pick<Storage, 'setItem'> | undefined = globalThis.localStorage): void {
  try {
    storage?.setItem(DISMISSED_KEY, '1');
  } catch {
    // As above: not remembered, shown again next time.
  }
}

/** The panel shows once the kept runs are read, none is kept, and it was not dismissed. */
export const showFirstVisit = (s: { runsLoaded: boolean; runs: readonly unknown[]; dismissed: boolean }): boolean => s.runsLoaded && s.runs.length === 0 && !s.dismissed;
