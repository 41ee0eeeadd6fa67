/**
 * The checkpoints the lab ships (data/models/<name>/, made and measured in its README), each
 * declared once with what it is: the CLIs' help and lines, the page's model buttons and the
 * default model all read them from here. A new shipped model is a folder and an entry here (a
 * test refuses a folder without one).
 */

/** Where the repository keeps the checkpoints the lab ships, one folder each. */
export const SHIPPED_MODELS_DIR = 'data/models';

/** Each shipped checkpoint by its folder's name: what it is, in a line. */
export const SHIPPED_MODEL_CATALOGUE = {
  'tiny-arith': 'the tiny preset pretrained on an arithmetic corpus, its roles warmed up on the demo curriculum\'s seeds',
  'tiny-arith-base': 'the tiny preset pretrained on an arithmetic corpus, no role taught yet (a run warms it up first)',
  'tiny-arith-format': 'tiny-arith with its Solver also taught corpus problems of every level in the task\'s format',
  'tiny-arith-steps': 'tiny-arith-format whose Solver works some multi-step problems one operation at a time; its pilot separates the ceiling from RLVR, but its Challenger writes nothing the loop reads',
  'tiny-arith-steps-own': 'tiny-arith-steps remade with its Challenger taught the problems its base wrote, so that it poses problems the loop reads: the testbed whose pilot separates the ceiling from RLVR, with the run settings it is meant for',
  'tiny-curriculum': 'the tiny preset trained from scratch on the demo curriculum\'s seeds alone',
} as const satisfies Record<string, string>;

export type ShippedModelName = keyof typeof SHIPPED_MODEL_CATALOGUE;

/**
 * The checkpoint a run starts from when none is chosen: the testbed whose pilot separated the
 * ceiling from RLVR and whose Challenger poses problems the loop reads
 * (docs/runs/2026-11-29-steps-own/), with the run settings its sage_lab.json records. Chosen over
 * tiny-arith-steps, whose Challenger writes nothing the loop reads (SAGE from it poses nothing);
 * over tiny-arith, whose Solver knows the hard levels but seldom says so in the task's format, so
 * that no method could gain there; and over tiny-curriculum (the seeds alone), which knows nothing
 * beyond them (data/models/README.md).
 */
export const DEFAULT_MODEL: ShippedModelName = 'tiny-arith-steps-own';

/** Whether a name is a shipped checkpoint's (own keys only: `toString` is not one). */
export function isShippedModel(name: string): name is ShippedModelName {
  return Object.hasOwn(SHIPPED_MODEL_CATALOGUE, name);
}

/** What a shipped checkpoint is, by name (undefined: not one the lab ships). */
export function shippedModelAbout(name: string): string | undefined {
  return isShippedModel(name) ? SHIPPED_MODEL_CATALOGUE[name] : undefined;
}
