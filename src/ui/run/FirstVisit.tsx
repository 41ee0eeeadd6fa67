import { useState } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { dismissFirstVisit, firstVisitDismissed, showFirstVisit, startPlan } from '../firstVisit';
import { modelChoices, settingDefault, type NumericSetting } from '../runSlices';
import { pick, useLab, type LabState } from '../store';

/** A setting as Start will use it: typed (when it parses), else its default for the model held. */
function resolved(s: LabState, name: NumericSetting): number {
  const typed = Number(s.typed[name]);
  return s.typed[name] !== undefined && !s.settingErrors[name] && Number.isFinite(typed) ? typed : settingDefault(name, modelChoices(s.model, s.templates));
}

/** What the lab does and what Start will do with the settings as they are, until dismissed or a run is kept. */
export function FirstVisit() {
  const [dismissed, setDismissed] = useState(firstVisitDismissed);
  const { runsLoaded, runs } = useLab(useShallow((s) => pick(s, ['runsLoaded', 'runs'])));
  const plan = useLab(
    useShallow((s) =>
      startPlan({
        method: s.method,
        model: s.model,
        seeds: s.seedReport,
        validation: s.validationReport,
        steps: resolved(s, 'steps'),
        evalEvery: resolved(s, 'evalEvery'),
        patience: resolved(s, 'patience'),
        validationLimit: resolved(s, 'validationLimit'),
        // Start gives a model held from scratch its warm-up; the shipped checkpoint has had it.
        warmupSteps: s.model ? resolved(s, 'warmupSteps') : 0,
        adapter: s.device?.adapter ?? null,
      }),
    ),
  );
  if (!showFirstVisit({ runsLoaded, runs, dismissed })) return null;
  const close = () => {
    dismissFirstVisit();
    setDismissed(true);
  };
  return (
    <section className="panel wide first-visit" data-testid="first-visit">
      <h2>What this lab does</h2>
      <p>
        It trains one small language model with reinforcement learning, in this tab on this machine’s GPU (WebGPU): the model
        plays a <b>Challenger</b> that writes new problems, a <b>Planner</b> that outlines a solution, a <b>Solver</b> that answers
        and a <b>Critic</b> that judges problems and plans. A checker verifies the answers; each role’s reward comes from it and from
        the other roles. Held-out problems, never trained on, show whether the model gets better.
      </p>
      <h3>What Start does with the defaults</h3>
      <dl className="facts">
        <div className="row"><dt>model</dt><dd data-testid="first-visit-model">{plan.model}</dd></div>
        <div className="row"><dt>problems</dt><dd data-testid="first-visit-problems">{plan.problems}</dd></div>
        <div className="row"><dt>method</dt><dd data-testid="first-visit-method">{plan.method}</dd></div>
        <div className="row"><dt>time</dt><dd data-testid="first-visit-time">{plan.time}</dd></div>
      </dl>
      <div className="row-controls">
        <button onClick={close} data-testid="first-visit-dismiss">Got it</button>
        <span className="muted small">
          Start is just below; the problems, the model and every setting follow it, before the charts, which fill as steps end.
        </span>
      </div>
    </section>
  );
}
