/**
 * The lab's Evaluate: the held model validated on the validation problems held, outside any
 * run, through the loop's own validation (validateHeldOut: the same call, problems and Critic
 * probe as a run with this validation limit) — what `npm run eval` does in Node.
 */
import type { Problem } from '../data/problem';
import { METHODS } from '../sage/config';
import { validateHeldOut } from '../sage/run';
import { checkSetting, modelDefaults } from '../sage/settings';
import { TEMPLATE_SETS } from '../sage/templates';
import { createValidators } from '../sage/validators';
import { sessionGenerate } from '../sage/runModel';
import type { ModelSession } from '../train/session';
import { CodeVerifier } from '../verify/python/codeVerifier';
import type { EvaluateRequest, EvaluateResult } from './api';
import type { SandboxFactory } from './evolveJob';

export async function evaluateHeld(session: ModelSession, validation: readonly Problem[], request: EvaluateRequest, openSandbox: SandboxFactory): Promise<EvaluateResult> {
  if (!(request.method in METHODS)) throw new Error(`unknown method "${request.method}" (methods: ${Object.keys(METHODS).join(', ')})`);
  if (!(request.templates in TEMPLATE_SETS)) throw new Error(`unknown prompts "${request.templates}" (${Object.keys(TEMPLATE_SETS).join(', ')})`);
  const bad = checkSetting('validationLimit', request.limit);
  if (bad) throw new Error(bad);
  // The token limits a run on this model uses (the lab's runs take them from the prompts too).
  const maxNewTokens = modelDefaults(request.templates, false).maxNewTokens;
  const sandbox = validation.some((p) => p.kind === 'code') ? openSandbox() : null;
  try {
    const validators = createValidators(sandbox ? new CodeVerifier(sandbox) : undefined);
    const settings = { method: METHODS[request.method], templates: TEMPLATE_SETS[request.templates], maxNewTokens, validationLimit: request.limit };
    const { result, outcomes } = await validateHeldOut({ generate: sessionGenerate(session) }, validators, validation, settings);
    return { ...request, model: session.origin, problems: outcomes[0]!.problems.length, of: validation.length, maxNewTokens, result, outcomes };
  } finally {
    sandbox?.close();
  }
}
