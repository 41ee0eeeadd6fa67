/**
 * Our training throughput in Node on Dawn (the `webgpu` package), with the workloads, batches
 * and step of the page's train suite. scripts/bench.mjs runs this before opening the page
 * and hands the result to the suite, which prints it beside the browser figures.
 *
 *   node --import tsx bench/node/train.ts [--quick] [--out FILE]
 *
 * Needs the environment of scripts/gpu-env.mjs (SwiftShader's Vulkan driver without a GPU).
 * Progress goes to stderr; the JSON result (NodeTrainResult[]) to FILE or stdout.
 */
import { loadavg } from 'node:os';
import { Runtime } from '../../src/gpu/runtime';
import { nodePlatform } from '../../src/platform/node';
import {
  initialWeights,
  isolatedCache,
  makeBatches,
  measure,
  oursTrainer,
  profileOurs,
  workloadLabel,
  workloads,
  type NodeTrainResult,
} from '../trainCore';
import { runNodeHalf } from '../nodeHalf';

runNodeHalf(async ({ quick, log }): Promise<NodeTrainResult[]> => {
  const platform = isolatedCache(nodePlatform());
  const out: NodeTrainResult[] = [];
  for (const w of workloads(quick)) {
    const rt = await Runtime.create(platform);
    const a = rt.ctx.adapter;
    const dawn = [a.vendor, a.architecture, a.description].filter(Boolean).join(' / ');
    const before = loadavg();
    try {
      log(`train ${workloadLabel(w)}: ours (node) on ${dawn}`);
      const batches = makeBatches(w.B, w.T);
      const { results, errors } = await measure(
        w,
        [{ name: 'ours (node)', trainer: oursTrainer(rt, w, initialWeights(w)) }],
        batches,
        log,
      );
      const loadAvg = { before, after: loadavg() };
      log(`train ${workloadLabel(w)}: ours (node) per-kernel profile`);
      const profile = await profileOurs((options) => Runtime.create(platform, options), w, initialWeights(w), batches);
      out.push({ workload: w, dawn, loadAvg, result: results['ours (node)'], profile, error: errors['ours (node)'] });
    } catch (e) {
      const loadAvg = { before, after: loadavg() };
      out.push({ workload: w, dawn, loadAvg, error: e instanceof Error ? (e.stack ?? e.message) : String(e) });
    } finally {
      rt.destroy();
    }
  }
  return out;
});
