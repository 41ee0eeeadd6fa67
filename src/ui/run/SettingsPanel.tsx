import type { ReactNode } from 'react';
import { METHODS, type MethodName } from '../../sage/config';
import { runDefaults } from '../../sage/runSpec';
import { describeDefaults, modelDefaults } from '../../sage/settings';
import { CHALLENGER_WARMUP_NAMES, SOLVER_TARGET_NAMES } from '../../sage/warmup';
import { ADVANTAGE_NAMES } from '../../sage/advantages';
import { TRANSCRIPT_MODES } from '../../sage/loopContract';
import { DIFFICULTY_NAMES } from '../../sage/rewards';
import { DEFAULT_CHOICES, modelChoices, settingDefault, type ChoiceSetting, type NumericSetting } from '../runSlices';
import { isActive } from '../runView';
import { useShallow } from 'zustand/react/shallow';
import { useLab, type LabState } from '../store';
import { groupSettings, SETTING_ENTRIES, SETTING_GROUPS, settingHelp, type GroupName, type ShownSetting } from './settingGroups';

/** The choices picked from a list, with their options; the other choices are on or off. */
const LISTS = {
  advantage: ADVANTAGE_NAMES,
  transcripts: TRANSCRIPT_MODES,
  difficulty: DIFFICULTY_NAMES,
  challengerWarmup: CHALLENGER_WARMUP_NAMES,
  warmupSolverTarget: SOLVER_TARGET_NAMES,
} as const satisfies Partial<Record<ChoiceSetting, readonly string[]>>;
type ListSetting = keyof typeof LISTS;
type FlagSetting = Exclude<ChoiceSetting, ListSetting>;

const isChoice = (name: ShownSetting): name is ChoiceSetting => name in DEFAULT_CHOICES || name === 'challengerWarmup' || name === 'warmupSolverTarget';

interface SettingState {
  value: string | boolean;
  fallback: string | boolean;
  error: string | undefined;
}

/** A setting's value as the panel shows it, its default, and its refusal. */
function settingState(s: LabState, name: ShownSetting): SettingState {
  if (isChoice(name)) {
    // The warm-up's choices default by where the model starts (runDefaults); the engine applies it until one is picked.
    const fallback = name === 'challengerWarmup' || name === 'warmupSolverTarget' ? runDefaults(modelChoices(s.model, s.templates))[name] : DEFAULT_CHOICES[name];
    return { value: s.choices[name] ?? fallback, fallback, error: undefined };
  }
  const fallback = String(settingDefault(name, modelChoices(s.model, s.templates)));
  return { value: s.typed[name] ?? fallback, fallback, error: s.settingErrors[name] };
}

/** Whether a setting differs from its default (a typed number compared as a number: 1e-4 is 0.0001). */
const isChanged = ({ value, fallback, error }: SettingState): boolean =>
  !error && value !== fallback && !(typeof value === 'string' && value.trim() !== '' && Number(value) === Number(fallback));

/** The input of one setting: a number typed, a list picked, or a box ticked. */
function Control({ name, value, error, locked }: { name: ShownSetting; value: string | boolean; error: string | undefined; locked: boolean }): ReactNode {
  const { setSetting, setChoice } = useLab.getState();
  if (name in LISTS) {
    const list = name as ListSetting;
    return (
      <select value={String(value)} disabled={locked} onChange={(e) => setChoice(list, e.target.value as never)} data-testid={`setting-${name}`}>
        {LISTS[list].map((o) => (
          <option key={o} value={o}>
            {o}
          </option>
        ))}
      </select>
    );
  }
  if (isChoice(name)) {
    const flag = name as FlagSetting;
    return <input type="checkbox" checked={Boolean(value)} disabled={locked} onChange={(e) => setChoice(flag, e.target.checked)} data-testid={`setting-${name}`} />;
  }
  return (
    <input
      type="text"
      inputMode="decimal"
      value={String(value)}
      disabled={locked}
      aria-invalid={Boolean(error)}
      onChange={(e) => setSetting(name as NumericSetting, e.target.value)}
      data-testid={`setting-${name}`}
    />
  );
}

/** One setting: its label in words and its input, then its identifier and explanation (or its refusal) at reading width. */
function Setting({ name, locked }: { name: ShownSetting; locked: boolean }): ReactNode {
  const state = useLab(useShallow((s) => settingState(s, name)));
  const { value, fallback, error } = state;
  const changed = isChanged(state);
  return (
    <div className={`setting${error ? ' invalid' : ''}${changed ? ' changed' : ''}`}>
      <label className="setting-head">
        <span className="setting-label">{SETTING_ENTRIES[name].label}</span>
        <Control name={name} value={value} error={error} locked={locked} />
      </label>
      <p className="setting-help">
        <code>{name}</code> {error ? <span className="error-text">{error}</span> : settingHelp(name)}
        {changed && <span className="setting-default"> (default {String(fallback)})</span>}
      </p>
    </div>
  );
}

/** How many of the folded settings differ from their defaults, for the fold's summary. */
function ChangedCount({ names }: { names: ShownSetting[] }): ReactNode {
  const changed = useLab((s) => names.filter((n) => isChanged(settingState(s, n))).length);
  return changed ? <span className="setting-default"> · {changed} changed</span> : null;
}

function Group({ name, title, about, locked }: { name: GroupName; title: string; about: string; locked: boolean }): ReactNode {
  const { shown, folded } = groupSettings(name);
  return (
    <div className="setting-group" data-testid={`settings-group-${name}`}>
      <h3>{title}</h3>
      <p className="muted small group-about">{about}</p>
      {shown.map((n) => (
        <Setting key={n} name={n} locked={locked} />
      ))}
      {folded.length > 0 && (
        <details className="more-settings">
          <summary>
            {folded.length} more: {folded.map((n) => SETTING_ENTRIES[n].label).join(', ')}
            <ChangedCount names={folded} />
          </summary>
          {folded.map((n) => (
            <Setting key={n} name={n} locked={locked} />
          ))}
        </details>
      )}
    </div>
  );
}

/** The method, the prompts, and every loop setting grouped, each with its default and one line of explanation; refused values are named inline. */
export function SettingsPanel() {
  const method = useLab((s) => s.method);
  const templates = useLab((s) => s.templates);
  const untouched = useLab((s) => Object.keys(s.typed).length === 0 && JSON.stringify(s.choices) === JSON.stringify(DEFAULT_CHOICES));
  const { setMethod, setTemplates, resetSettings } = useLab.getState();
  const locked = useLab((s) => isActive(s.run.status));
  const lora = useLab((s) => Boolean(s.model?.lora));
  return (
    <section className="panel wide settings" data-testid="settings-panel">
      <h2>Method and settings {locked && <span className="chip off">read-only while the run lasts</span>}</h2>
      <div className="row-controls">
        <label>
          method{' '}
          <select value={method} disabled={locked} onChange={(e) => setMethod(e.target.value as MethodName)} data-testid="method">
            {(Object.keys(METHODS) as MethodName[]).map((m) => (
              <option key={m} value={m}>
                {m}
              </option>
            ))}
          </select>
        </label>
        <span className="muted small" data-testid="method-summary">{METHODS[method].summary}</span>
        <span className="spacer" />
        <label>
          prompts{' '}
          <select value={templates} disabled={locked} onChange={(e) => setTemplates(e.target.value as 'compact' | 'instruct')}>
            <option value="compact">compact (model from scratch)</option>
            <option value="instruct">instruct (instruction-tuned model)</option>
          </select>
        </label>
        <button className="secondary" disabled={locked || untouched} onClick={resetSettings}>
          defaults
        </button>
      </div>
      <p className="muted small" data-testid="model-defaults">
        {describeDefaults(modelDefaults(templates, lora))}
      </p>
      <div className="setting-groups">
        {SETTING_GROUPS.map((g) => (
          <Group key={g.name} {...g} locked={locked} />
        ))}
      </div>
    </section>
  );
}
