/**
 * A comparison in the lab: several methods × several seeds, each run from the same start, one
 * after another, as `npm run compare` runs them headless. Its runs are kept like any other, each
 * with the comparison's key, so the Runs panel reports them together and starting the same
 * comparison again goes on with the runs it has not finished.
 */
import type { StateCreator } from 'zustand';
import type { MethodName } from '../sage/config';
import { DEFAULT_MODEL } from '../sage/shippedModels';
import { DEFAULT_RUN } from '../sage/settings';
import type { EvolveSettings } from '../worker/api';
import { callEngine } from './engineClient';
import { comparisonKey, comparisonPlan } from './runHistory';
import { requestSettings } from './runSlices';
import { isActive } from './runView';
import type { LabState } from './store';
import { errorText } from '../util/errorText';

export interface CompareSlice {
  /** The comparison in flight: its runs still to make when it started, and which one runs. */
  comparing: { key: string; plan: { method: MethodName; seed: number }[]; at: number; stopping: boolean } | null;
  compareError: string | null;
  /** Runs each method at seeds 0…seeds−1 with the typed settings, every run from the model held now (none: the shipped one). */
  startComparison(methods: MethodName[], seeds: number): Promise<void>;
  /** Stops the run in flight (saved at its next phase boundary) and the comparison with it. */
  stopComparison(): void;
}

export const compareSlice: StateCreator<LabState, [], [], CompareSlice> = (set, get, api) => ({
  comparing: null,
  compareError: null,
  async startComparison(methods, seeds) {
    const s = get();
    if (s.comparing || isActive(s.run.status)) return;
    let settings: EvolveSettings;
    try {
      if (!methods.length) throw new Error('pick at least one method');
      if (!s.seedReport || !s.validationReport) throw new Error('load seed problems and held-out validation problems first');
      settings = requestSettings(s);
    } catch (e) {
      set({ compareError: errorText(e) });
      return;
    }
    // Every run makes the same number of steps: no early stopping.
    settings = { ...settings, patience: (settings.steps ?? DEFAULT_RUN.steps) + 1 };
    // The start every run begins from: the shipped checkpoint, or the held model as it is now
    // (its weights kept in the page; with a LoRA adapter, the merged weights and a fresh adapter of the same shape).
    let restore: () => Promise<void>;
    const model = s.model;
    const origin = model?.origin ?? DEFAULT_MODEL;
    const templates = model ? s.templates : 'compact';
    if (!model) restore = () => get().loadShippedModel(origin);
    else {
      let files: File[];
      try {
        files = (await callEngine((e) => e.exportCheckpoint())).filter((f) => !f.name.startsWith('adapter/')).map((f) => new File([f.bytes as Uint8Array<ArrayBuffer>], f.name));
      } catch (e) {
        set({ compareError: `could not keep the starting model: ${errorText(e)}` });
        return;
      }
      const lora = model.lora && { rank: model.lora.rank, alpha: model.lora.alpha, targets: model.lora.targets, rslora: model.lora.rslora };
      restore = async () => {
        await get().importModel(files, origin, model.baseDtype);
        if (lora && get().model) await get().setLora(lora);
        if (model.kvCache === 'f16' && get().model) await get().setKvCache('f16');
      };
    }
    const key = comparisonKey(origin, templates, s.seedReport.name, s.validationReport.name, settings);
    const plan = comparisonPlan(key, methods, seeds, get().runs);
    set({ comparing: { key, plan, at: 0, stopping: false }, compareError: null });
    for (let at = 0; at < plan.length; at++) {
      if (get().comparing?.stopping) break;
      set({ comparing: { ...get().comparing!, at } });
      const { method, seed } = plan[at]!;
      // The held model is the start until the first run trains it: nothing to restore before that.
      if (at > 0 || !model) {
        await restore();
        if (get().comparing?.stopping) break;
        if (!get().model || get().modelError) {
          set({ compareError: `could not load the starting model: ${get().modelError ?? 'none held'}` });
          break;
        }
      }
      if (templates !== get().templates) get().setTemplates(templates);
      await get().startRun({ method, settings: { ...settings, seed }, comparison: key });
      const run = get().run;
      if (run.endReason !== 'steps') {
        if (!get().comparing?.stopping) set({ compareError: `${method} seed ${seed} ended (${run.endReason ?? run.status}) before its last step: the comparison stops here` });
        break;
      }
    }
    set({ comparing: null });
  },
  stopComparison() {
    const c = get().comparing;
    if (!c) return;
    set({ comparing: { ...c, stopping: true } });
    // A run still starting has no loop to stop yet: stop it as soon as it has one.
    if (get().run.status !== 'starting') {
      if (isActive(get().run.status)) get().stopRun();
      return;
    }
    const unsubscribe = api.subscribe((state) => {
      if (state.run.status === 'starting') return;
      unsubscribe();
      if (isActive(state.run.status)) state.stopRun();
    });
  },
});
