/** Colours shared by the charts and the transcripts, so a role reads the same everywhere. */
import type { RoleName } from '../../sage/config';
import type { RejectReason } from '../../sage/bank';

export const ROLE_COLORS: Record<RoleName, string> = {
  challenger: '#f59e0b',
  planner: '#a78bfa',
  solver: '#34d399',
  critic: '#60a5fa',
};

export const REJECT_COLORS: Record<RejectReason, string> = {
  unparsable: '#6b7280',
  quality: '#f87171',
  validator: '#fb923c',
  duplicate: '#facc15',
  'near-duplicate': '#c084fc',
};

/** Overall accuracy, then one colour per source or level in turn. */
export const SERIES_COLORS = ['#e6edf3', '#34d399', '#60a5fa', '#f59e0b', '#f472b6', '#a78bfa', '#22d3ee', '#facc15'];

/** Kept runs drawn over the live charts, by their place among the overlaid ones (the Runs panel shows the same). */
const OVERLAY_COLORS = ['#fb7185', '#38bdf8', '#fbbf24', '#4ade80', '#c084fc', '#f97316', '#2dd4bf', '#e879f9'];
export const overlayColor = (index: number): string => OVERLAY_COLORS[index % OVERLAY_COLORS.length]!;

export const AXIS = '#8b98a5';
export const GRID = '#2a3642';

export const percent = (x: number) => `${(100 * x).toFixed(1)}%`;
export function duration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '—';
  const s = Math.round(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return h ? `${h} h ${m} min` : m ? `${m} min ${s % 60} s` : `${s % 60} s`;
}
