/**
 * The Runs slice: the runs kept in this browser, which of them are overlaid on the charts, and
 * the record of the run in flight, written as its steps and validations arrive.
 */
import type { StateCreator } from 'zustand';
import { deleteRun, listRuns, runRecord, saveRun, type RunConfig, type RunRecord } from './runHistory';
import type { LabState } from './store';
import { errorText } from '../util/errorText';

export interface RunsSlice {
  /** Kept runs, newest first, the one in flight included. */
  runs: RunRecord[];
  /** Ids of the runs drawn over the live charts. */
  overlay: string[];
  /** The record of the run in flight (or the last one), null before any. */
  currentRunId: string | null;
  runsError: string | null;
  /** Whether the kept runs have been read (an empty list before is not "none kept"). */
  runsLoaded: boolean;
  loadRuns(): Promise<void>;
  toggleOverlay(id: string): void;
  removeRun(id: string): Promise<void>;
  /** Starts the record of a new run. */
  beginRecord(config: RunConfig): void;
  /** Writes the record of the run in flight as the page shows it now. */
  recordRun(): void;
}

export const runsSlice: StateCreator<LabState, [], [], RunsSlice> = (set, get) => {
  let current: { id: string; startedAt: number; config: RunConfig } | null = null;
  /** One write at a time; a record made meanwhile is written when it ends (the latest wins). */
  let writing = false;
  let pending: RunRecord | null = null;
  const write = async (r: RunRecord) => {
    if (writing) {
      pending = r;
      return;
    }
    writing = true;
    try {
      await saveRun(r);
    } catch (e) {
      set({ runsError: `could not keep the run in this browser: ${errorText(e)}` });
    } finally {
      writing = false;
    }
    const next = pending;
    pending = null;
    if (next) await write(next);
  };
  return {
    runs: [],
    overlay: [],
    currentRunId: null,
    runsError: null,
    runsLoaded: false,
    async loadRuns() {
      try {
        const stored = await listRuns();
        // The run in flight is the page's own version, newer than what was last written.
        const live = get().runs.find((r) => r.id === current?.id);
        set({ runs: live ? [live, ...stored.filter((r) => r.id !== live.id)] : stored, runsLoaded: true });
      } catch (e) {
        set({ runsError: `could not read the runs kept in this browser: ${errorText(e)}`, runsLoaded: true });
      }
    },
    toggleOverlay(id) {
      const o = get().overlay;
      set({ overlay: o.includes(id) ? o.filter((x) => x !== id) : [...o, id] });
    },
    async removeRun(id) {
      if (id === current?.id) return;
      try {
        await deleteRun(id);
        set({ runs: get().runs.filter((r) => r.id !== id), overlay: get().overlay.filter((x) => x !== id) });
      } catch (e) {
        set({ runsError: `could not delete the run: ${errorText(e)}` });
      }
    },
    beginRecord(config) {
      const startedAt = Date.now();
      current = { id: `run-${startedAt.toString(36)}-${config.method}`, startedAt, config };
      set({ currentRunId: current.id, overlay: get().overlay.filter((x) => x !== current!.id) });
    },
    recordRun() {
      if (!current) return;
      const r = runRecord(current.id, current.startedAt, current.config, get().run);
      set({ runs: [r, ...get().runs.filter((x) => x.id !== r.id)] });
      void write(r);
    },
  };
};
