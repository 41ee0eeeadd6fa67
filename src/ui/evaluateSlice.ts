/**
 * The lab's Evaluate: the held model validated outside any run, in the engine (the same
 * validation a run makes), with the method, prompts and validation limit chosen for runs; its
 * per-problem outcomes offered as a download.
 */
import type { StateCreator } from 'zustand';
import { DEFAULT_RUN } from '../sage/settings';
import { errorText } from '../util/errorText';
import type { EvaluateResult } from '../worker/api';
import { downloadBytes } from './checkpointFiles';
import { callEngine } from './engineClient';
import { DEFAULT_MODEL } from '../sage/shippedModels';
import type { LabState } from './store';

export interface EvaluateSlice {
  evaluating: boolean;
  evaluation: EvaluateResult | null;
  evaluateError: string | null;
  /**
   * Validates the held model (none held: the shipped checkpoint, as a run would start from) on
   * the validation problems loaded, with the method, prompts and validation limit chosen.
   */
  evaluate(): Promise<void>;
  /** Every problem's outcome of the last evaluation, one JSON line per mode (a run's outcomes.jsonl). */
  downloadOutcomes(): void;
}

/** The outcomes as a run's outcomes.jsonl holds them. */
export const outcomesJsonl = (r: Pick<EvaluateResult, 'outcomes'>): string => r.outcomes.map((o) => JSON.stringify(o) + '\n').join('');

export const evaluateSlice: StateCreator<LabState, [], [], EvaluateSlice> = (set, get) => ({
  evaluating: false,
  evaluation: null,
  evaluateError: null,
  async evaluate() {
    const s = get();
    const refused = s.settingErrors.validationLimit ?? (s.validationReport ? null : 'load held-out validation problems first');
    if (refused) {
      set({ evaluateError: refused });
      return;
    }
    set({ evaluating: true, evaluateError: null });
    try {
      if (!get().model) {
        await get().loadShippedModel(DEFAULT_MODEL);
        if (!get().model) throw new Error(get().modelError ?? `could not load ${DEFAULT_MODEL}`);
      }
      const request = { method: get().method, templates: get().templates, limit: Number(get().typed.validationLimit ?? DEFAULT_RUN.validationLimit) };
      set({ evaluation: await callEngine((e) => e.evaluate(request)) });
    } catch (e) {
      set({ evaluateError: errorText(e) });
    } finally {
      set({ evaluating: false });
    }
  },
  downloadOutcomes() {
    const r = get().evaluation;
    if (!r) return;
    const name = `${r.model}-${r.method}-outcomes.jsonl`.replace(/[^\w.-]+/g, '_');
    downloadBytes(name, new TextEncoder().encode(outcomesJsonl(r)), 'application/jsonl');
  },
});
