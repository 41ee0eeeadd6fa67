import { METHODS, type MethodName } from '../../sage/config';
import { CHALLENGER_WARMUP_HELP, SOLVER_TARGET_HELP, describeDefaults, modelDefaults, RUN_SPECS, SETTING_SPECS, warmupRecipe } from '../../sage/settings';
import { CHALLENGER_WARMUP_NAMES, SOLVER_TARGET_NAMES } from '../../sage/warmup';
import { DEFAULT_CHOICES, fromScratch, NUMERIC_SETTINGS, settingDefault, type NumericSetting } from '../runSlices';
import { ADVANTAGE_NAMES } from '../../sage/advantages';
import { TRANSCRIPT_MODES } from '../../sage/loop';
import { DIFFICULTY_NAMES } from '../../sage/rewards';
import { isActive } from '../runView';
import { useLab } from '../store';

const HELP: Record<NumericSetting, string> = Object.fromEntries(
  Object.entries({ ...SETTING_SPECS, ...RUN_SPECS }).map(([k, v]) => [k, v.help]),
) as Record<NumericSetting, string>;

/** Groups of the settings table, in the order a researcher reads them. */
const GROUPS: { title: string; names: NumericSetting[] }[] = [
  { title: 'Run', names: ['steps', 'warmupSteps', 'warmupSolverShare', 'warmupLr', 'evalEvery', 'patience', 'validationLimit', 'seed'] },
  { title: 'Roles and batches', names: ['proposals', 'references', 'difficultySamples', 'trainProblems', 'solverSamples', 'nearDuplicate'] },
  { title: 'Sampling and update', names: ['temperature', 'topK', 'topP', 'lr'] },
];

/** A labelled drop-down over a list of names. */
function ListSelect<T extends string>(p: { label: string; title?: string; value: T; options: readonly T[]; disabled: boolean; onChange: (v: T) => void; testId: string }) {
  return (
    <label title={p.title}>
      {p.label}{' '}
      <select value={p.value} disabled={p.disabled} onChange={(e) => p.onChange(e.target.value as T)} data-testid={p.testId}>
        {p.options.map((o) => (
          <option key={o} value={o}>
            {o}
          </option>
        ))}
      </select>
    </label>
  );
}

/** Every loop setting with its default and one line of explanation; refused values are named inline. */
export function SettingsPanel() {
  const method = useLab((s) => s.method);
  const templates = useLab((s) => s.templates);
  const typed = useLab((s) => s.typed);
  const errors = useLab((s) => s.settingErrors);
  const choices = useLab((s) => s.choices);
  const { setMethod, setTemplates, setSetting, setChoice, resetSettings } = useLab.getState();
  const locked = useLab((s) => isActive(s.run.status));
  const lora = useLab((s) => Boolean(s.model?.lora));
  const defaults = modelDefaults(templates, lora);
  const scratch = useLab((s) => fromScratch(s.model));
  const fallback = (name: NumericSetting) => settingDefault(name, templates, lora, scratch);
  const missing = NUMERIC_SETTINGS.filter((n) => !GROUPS.some((g) => g.names.includes(n)));
  const groups = missing.length ? [...GROUPS, { title: 'Other', names: missing }] : GROUPS;
  return (
    <section className="panel settings" data-testid="settings-panel">
      <h2>Method and settings {locked && <span className="chip off">read-only while the run lasts</span>}</h2>
      <div className="row-controls">
        <ListSelect label="method" value={method} options={Object.keys(METHODS) as MethodName[]} disabled={locked} onChange={setMethod} testId="method" />
        <label>
          prompts{' '}
          <select value={templates} disabled={locked} onChange={(e) => setTemplates(e.target.value as 'compact' | 'instruct')}>
            <option value="compact">compact (model from scratch)</option>
            <option value="instruct">instruct (instruction-tuned model)</option>
          </select>
        </label>
        <ListSelect
          label="advantage"
          title="how rewards become advantages: task-whiten is SAGE's (Task-Relative REINFORCE++); the others baseline each problem's samples"
          value={choices.advantage}
          options={ADVANTAGE_NAMES}
          disabled={locked}
          onChange={(v) => setChoice('advantage', v)}
          testId="setting-advantage"
        />
        <label title="leave groups whose rewards are all equal out of the update (DAPO's dynamic sampling)">
          <input type="checkbox" checked={choices.dropZeroSpread} disabled={locked} onChange={(e) => setChoice('dropZeroSpread', e.target.checked)} data-testid="setting-dropZeroSpread" /> drop zero-spread groups
        </label>
        <ListSelect
          label="transcripts"
          title="transcripts kept per step: one of each role and template drawn at random, or every rollout with its reward and advantage"
          value={choices.transcripts}
          options={TRANSCRIPT_MODES}
          disabled={locked}
          onChange={(v) => setChoice('transcripts', v)}
          testId="setting-transcripts"
        />
        <ListSelect
          label="difficulty"
          title="the Challenger's difficulty term: paper, 1 − the Solver's pass rate (a problem nobody solves pays the most); band, AZR's: 0 when every attempt or none passes"
          value={choices.difficulty}
          options={DIFFICULTY_NAMES}
          disabled={locked}
          onChange={(v) => setChoice('difficulty', v)}
          testId="setting-difficulty"
        />
        <ListSelect
          label="Challenger warm-up"
          title={CHALLENGER_WARMUP_HELP}
          value={choices.challengerWarmup ?? warmupRecipe(scratch).challengerWarmup}
          options={CHALLENGER_WARMUP_NAMES}
          disabled={locked}
          onChange={(v) => setChoice('challengerWarmup', v)}
          testId="setting-challengerWarmup"
        />
        <ListSelect
          label="Solver warm-up"
          title={SOLVER_TARGET_HELP}
          value={choices.warmupSolverTarget ?? warmupRecipe(scratch).warmupSolverTarget}
          options={SOLVER_TARGET_NAMES}
          disabled={locked}
          onChange={(v) => setChoice('warmupSolverTarget', v)}
          testId="setting-warmupSolverTarget"
        />
        <label title="train the Solver on as many seeds a step as RLVR, the generated problems added on top rather than taking seeds' places">
          <input type="checkbox" checked={choices.seedParity} disabled={locked} onChange={(e) => setChoice('seedParity', e.target.checked)} data-testid="setting-seedParity" /> seed parity with RLVR
        </label>
        <button className="secondary" disabled={locked || (Object.keys(typed).length === 0 && JSON.stringify(choices) === JSON.stringify(DEFAULT_CHOICES))} onClick={resetSettings}>
          defaults
        </button>
      </div>
      <p className="muted small">{METHODS[method].summary}</p>
      <p className="muted small" data-testid="model-defaults">
        {describeDefaults(defaults)}
      </p>
      {groups.map((g) => (
        <div key={g.title}>
          <h3>{g.title}</h3>
          <table className="settings-table">
            <tbody>
              {g.names.map((name) => (
                <tr key={name} className={errors[name] ? 'invalid' : ''}>
                  <td className="name">{name}</td>
                  <td>
                    <input
                      type="text"
                      inputMode="decimal"
                      value={typed[name] ?? String(fallback(name))}
                      disabled={locked}
                      aria-invalid={Boolean(errors[name])}
                      onChange={(e) => setSetting(name, e.target.value)}
                      data-testid={`setting-${name}`}
                    />
                  </td>
                  <td className="help">
                    {errors[name] ? <span className="error-text">{errors[name]}</span> : HELP[name]}
                    {typed[name] !== undefined && !errors[name] && Number(typed[name]) !== fallback(name) && (
                      <span className="muted"> (default {fallback(name)})</span>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ))}
    </section>
  );
}
