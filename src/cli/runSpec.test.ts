/**
 * The same choices make the same run from the CLI and from the page: `npm run evolve`'s
 * resolution (its command line parsed as main parses it) and the engine job's (a held model
 * loaded as the page loads it) give equal settings over a table of choices.
 */
import { cpSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { importCheckpoint, LAB_RECORD } from '../model/checkpoint';
import { DEFAULT_METHOD, type MethodName } from '../sage/config';
import { DEFAULT_RUN, type RunSettings, warmupRecipe } from '../sage/settings';
import { modelStart, type SettingValues } from '../sage/runSpec';
import { DEFAULT_MODEL, SHIPPED_MODELS_DIR } from '../sage/shippedModels';
import { chooseTemplates } from '../sage/templates';
import { modelChoices, settingDefault } from '../ui/runSlices';
import type { EvolveSettings, ModelSummary } from '../worker/api';
import { resumeSettings, startSettings, type HeldModel } from '../worker/evolveJob';
import { cliMethod, cliRunSettings, evolveCli, type Began } from './evolve';
import { parseCommandLine } from './options';
import { readCheckpointFolder } from './runFiles';

const LORA = { rank: 8, alpha: 16, targets: ['q_proj', 'v_proj'] } as HeldModel['lora'];

/** `npm run evolve -- ARGS`'s settings, resolved as main resolves them (`began`: a resumed run's config.json). */
function cliSettings(argv: string[], began: Began | null = null): RunSettings {
  const line = parseCommandLine(evolveCli, argv)!;
  const settings = cliRunSettings(line.values, line.given, began).settings;
  expect(settings.method).toBe(cliMethod(line.values, began ?? {}));
  return settings;
}

/** A checkpoint folder held as the page holds it: its name, its record's roles, and the prompts the page then picks. */
function held(dir: string, name: string, lora: HeldModel['lora'] = null): { model: HeldModel; templates: 'compact' | 'instruct' } {
  const checkpoint = importCheckpoint(readCheckpointFolder(dir));
  return { model: { origin: name, lora, rolesTaught: checkpoint.rolesTaught, labSettings: checkpoint.labSettings ?? null }, templates: chooseTemplates({ recorded: checkpoint.templates, fromScratch: false }) };
}

/** The engine job's settings for a new run on the held model, and the page's default warm-up for it. */
function pageSettings(h: { model: HeldModel; templates: 'compact' | 'instruct' }, settings: EvolveSettings = {}, method: MethodName = DEFAULT_METHOD): { settings: RunSettings; pageWarmup: number } {
  const resolved = startSettings({ method, templates: h.templates, settings }, h.model);
  const pageWarmup = settingDefault('warmupSteps', modelChoices({ ...h.model, lora: h.model.lora && { ...h.model.lora, trainable: 0 } } as ModelSummary, h.templates));
  return { settings: resolved, pageWarmup };
}

/** A copy of the shipped default whose record names the instruct prompts (an instruction-tuned checkpoint's). */
function instructCheckpoint(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sage-instruct-'));
  cpSync(join(SHIPPED_MODELS_DIR, DEFAULT_MODEL), dir, { recursive: true });
  writeFileSync(join(dir, LAB_RECORD), JSON.stringify({ templates: 'instruct' }));
  return dir;
}

const recordOf = ({ method: _m, templates: _t, ...settings }: RunSettings): SettingValues => settings;
/** A config.json as the engine reads it from an export: JSON, whatever its strings say. */
const asExported = (config: Began) => config as unknown as Parameters<typeof resumeSettings>[0];

afterEach(() => {
  vi.restoreAllMocks();
});

describe('a run resolved by the CLI and by the page', () => {
  const shipped = readdirSync(SHIPPED_MODELS_DIR, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name);

  it.each(shipped)('starts from the shipped %s with the same settings, warming it up only if its record says its roles were never taught', (name) => {
    const dir = join(SHIPPED_MODELS_DIR, name);
    const h = held(dir, name);
    const cli = cliSettings(['--model', dir]);
    const page = pageSettings(h);
    expect(page.settings).toEqual(cli);
    expect(page.pageWarmup).toBe(cli.warmupSteps);
    expect(cli.warmupSteps).toBe(h.model.rolesTaught ? 0 : DEFAULT_RUN.warmupSteps);
    // A checkpoint warms up as a pretrained model does, whether or not it must.
    expect(cli).toMatchObject(warmupRecipe(false));
  });

  it('warms the shipped base up in both, and starts the shipped default without a warm-up in both', () => {
    expect(shipped).toEqual(expect.arrayContaining([DEFAULT_MODEL, 'tiny-arith-base']));
    const base = join(SHIPPED_MODELS_DIR, 'tiny-arith-base');
    expect(cliSettings(['--model', base]).warmupSteps).toBe(DEFAULT_RUN.warmupSteps);
    expect(pageSettings(held(base, 'tiny-arith-base')).settings.warmupSteps).toBe(DEFAULT_RUN.warmupSteps);
    // No model chosen: the CLI's shipped folder, the page's shipped default (none held).
    const cli = cliSettings([]);
    expect(cli.warmupSteps).toBe(0);
    expect(pageSettings(held(join(SHIPPED_MODELS_DIR, DEFAULT_MODEL), DEFAULT_MODEL)).settings).toEqual(cli);
    expect(settingDefault('warmupSteps', modelChoices(null, 'compact'))).toBe(0);
  });

  it('gives a checkpoint the settings its record says it is meant for, in both, below what the user gives', () => {
    const dir = join(SHIPPED_MODELS_DIR, 'tiny-arith-steps');
    const cli = cliSettings(['--model', dir]);
    expect(pageSettings(held(dir, 'tiny-arith-steps')).settings).toEqual(cli);
    expect(cli).toMatchObject({ lr: 3e-5, advantage: 'grpo', solverSamples: 8, trainProblems: 8 });
    expect(cli.maxNewTokens.solver).toBe(96);
    // What the user gives still wins.
    expect(cliSettings(['--model', dir, '--lr', '1e-4']).lr).toBe(1e-4);
    expect(pageSettings(held(dir, 'tiny-arith-steps'), { lr: 1e-4 }).settings.lr).toBe(1e-4);
    // A record's bad setting is refused as --config's would be, naming the record; a preset has no record.
    expect(() => modelStart('some/checkpoint', true, { solverSamples: 0 })).toThrow(/^sage_lab\.json settings: solverSamples/);
    expect(() => modelStart('some/checkpoint', true, { temperatures: 1 })).toThrow(/^sage_lab\.json settings: unknown setting "temperatures"/);
    expect(modelStart('tiny', false, { lr: 1 })).toEqual({ kind: 'preset' });
  });

  it('warms a preset from scratch up with the seeds-alone recipe in both', () => {
    const cli = cliSettings(['--preset', 'tiny']);
    const page = pageSettings({ model: { origin: 'tiny', lora: null, rolesTaught: false, labSettings: null }, templates: 'compact' });
    expect(page.settings).toEqual(cli);
    expect(page.pageWarmup).toBe(DEFAULT_RUN.warmupSteps);
    expect(cli).toMatchObject({ ...warmupRecipe(true), warmupSteps: DEFAULT_RUN.warmupSteps });
  });

  it('gives an instruct checkpoint, in full and with LoRA, the pretrained defaults in both', () => {
    const dir = instructCheckpoint();
    const full = cliSettings(['--model', dir]);
    expect(pageSettings(held(dir, 'instruct-model')).settings).toEqual(full);
    expect(full).toMatchObject({ lr: 1e-6, warmupSteps: 0, maxNewTokens: { solver: 512 } });
    const lora = cliSettings(['--model', dir, '--lora-rank', '8']);
    expect(pageSettings(held(dir, 'instruct-model', LORA)).settings).toEqual(lora);
    expect(lora.lr).toBe(1e-5);
  });

  it('takes the same method and overrides in both, a warm-up asked for a checkpoint included', () => {
    const dir = join(SHIPPED_MODELS_DIR, DEFAULT_MODEL);
    const cli = cliSettings(['--model', dir, '--method', 'rlvr', '--lr', '0.001', '--seed', '3', '--warmup-steps', '50', '--steps', '7', '--challenger-warmup', 'none']);
    const page = pageSettings(held(dir, DEFAULT_MODEL), { lr: 0.001, seed: 3, warmupSteps: 50, steps: 7, challengerWarmup: 'none' }, 'rlvr');
    expect(page.settings).toEqual(cli);
    expect(cli).toMatchObject({ lr: 0.001, seed: 3, warmupSteps: 50, steps: 7, challengerWarmup: 'none', method: { name: 'rlvr' } });
  });

  it('resumes a run with its recorded settings in both, an option given replacing one with a line', () => {
    const base = join(SHIPPED_MODELS_DIR, 'tiny-arith-base');
    const recorded = recordOf({ ...cliSettings(['--model', base, '--seed', '4']), warmupLr: 5e-4 });
    // As the CLI records a run's start, and as the page does: the same settings either way.
    const began: Began = { method: 'rlvr', templates: 'compact', preset: null, model: base, lora: null, settings: recorded };
    const folder = mkdtempSync(join(tmpdir(), 'sage-resume-'));
    const said = vi.spyOn(console, 'log').mockImplementation(() => {});
    const cli = cliSettings(['--resume', folder, '--lr', '0.002', '--steps', '5'], began);
    expect(said.mock.calls.map((c) => c[0])).toEqual([`--lr 0.002 replaces the recorded ${recorded.lr}`]);
    const page = resumeSettings(asExported({ ...began, model: 'tiny-arith-base' }), { lr: 0.002, steps: 5 }).settings;
    expect(page).toEqual(cli);
    // The run goes on as it began: its warm-up (done), its seed, its method; the override and the steps replaced.
    expect(cli).toMatchObject({ warmupSteps: DEFAULT_RUN.warmupSteps, warmupLr: 5e-4, seed: 4, lr: 0.002, steps: 5, method: { name: 'rlvr' } });
    // A record the page cannot run is refused by name, not run with some other prompts or method.
    expect(() => resumeSettings(asExported({ ...began, templates: 'chat' }), {})).toThrow('unknown prompts "chat" (compact, instruct)');
    expect(() => resumeSettings(asExported({ ...began, method: 'sage2' }), {})).toThrow(/^unknown method "sage2" \(methods: sage, /);
  });
});
