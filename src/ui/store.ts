import { create, type StateCreator } from 'zustand';
import { proxy } from 'comlink';
import type { DeviceReport, SelfCheckResult, TrainCheckResult, TrainStepReport } from '../worker/api';
import { callEngine } from './engineClient';

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

export type LabState = DeviceSlice & SelfCheckSlice & TrainCheckSlice;

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

const deviceSlice: StateCreator<LabState, [], [], DeviceSlice> = (set) => ({
  deviceStatus: 'idle',
  device: null,
  deviceError: null,
  async connect() {
    set({ deviceStatus: 'running', deviceError: null });
    try {
      set({ device: await callEngine((e) => e.init()), deviceStatus: 'done' });
    } catch (e) {
      set({ deviceStatus: 'error', deviceError: message(e) });
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
      set({ checkStatus: 'error', checkError: message(e) });
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
      set({ trainStatus: 'error', trainError: message(e) });
    }
  },
});

export const useLab = create<LabState>()((...a) => ({ ...deviceSlice(...a), ...selfCheckSlice(...a), ...trainCheckSlice(...a) }));
