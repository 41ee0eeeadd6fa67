// AdamW over a flat parameter buffer in one dispatch, with the global gradient-norm clip
// computed on the GPU: no host round trip between the backward pass and the update. Which
// elements take weight decay comes from a table of parameter ranges.

struct Params {
  n: u32, offP: u32, offG: u32, offM: u32,
  offV: u32, _pad0: u32, _pad1: u32, _pad2: u32,
  lr: f32, beta1: f32, beta2: f32, eps: f32,
  weightDecay: f32, bc1: f32, bc2: f32, maxNorm: f32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> P: array<f32>;
@group(0) @binding(2) var<storage, read> G: array<f32>;
@group(0) @binding(3) var<storage, read_write> M: array<f32>;
@group(0) @binding(4) var<storage, read_write> V: array<f32>;
// [Σ g², ‖g‖, clip scale, finite (1/0)]
@group(0) @binding(5) var<storage, read_write> stats: array<f32>;
// 16 elements per word, 2 bits each: bit 0 = inside a parameter, bit 1 = weight decay.
// (A binary search over parameter ranges per element measured 3x slower on SwiftShader.)
@group(0) @binding(6) var<storage, read> codes: array<u32>;
#include grid


// From Σ g² (stats[0], written by reduce.wgsl's sum of squares): the norm, the clip scale
// min(1, maxNorm / ‖g‖) (no clipping when maxNorm ≤ 0), and whether every gradient is finite.
@compute @workgroup_size(1)
fn clip_scale() {
  let ss = stats[0];
  let norm = sqrt(ss);
  // NaN fails every comparison; overflow to inf fails the bound.
  let finite = ss == ss && ss <= 3.0e38;
  stats[1] = norm;
  var scale = 1.0;
  if (p.maxNorm > 0.0 && norm > p.maxNorm) { scale = p.maxNorm / (norm + 1e-6); }
  stats[2] = select(0.0, scale, finite);
  stats[3] = select(0.0, 1.0, finite);
}

// Decoupled weight decay (Loshchilov & Hutter): p -= lr·(m̂ / (√v̂ + eps) + wd·p).
// A step with a non-finite gradient changes nothing (stats[3] = 0).
@compute @workgroup_size(256)
fn adamw(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
         @builtin(local_invocation_id) lid: vec3<u32>) {
  let i = gridIndex(wid, nwg, lid, 256u);
  if (i >= p.n || stats[3] == 0.0) { return; }
  let code = (codes[i >> 4u] >> ((i & 15u) * 2u)) & 3u;
  if ((code & 1u) == 0u) { return; } // outside every parameter
  let g = G[p.offG + i] * stats[2];
  let m = p.beta1 * M[p.offM + i] + (1.0 - p.beta1) * g;
  let v = p.beta2 * V[p.offV + i] + (1.0 - p.beta2) * g * g;
  M[p.offM + i] = m;
  V[p.offV + i] = v;
  let mhat = m / p.bc1;
  let vhat = v / p.bc2;
  var w = P[p.offP + i];
  var update = mhat / (sqrt(vhat) + p.eps);
  if ((code & 2u) != 0u) { update += p.weightDecay * w; }
  P[p.offP + i] = w - p.lr * update;
}
