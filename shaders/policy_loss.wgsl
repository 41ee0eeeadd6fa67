// Fused PPO clipped-surrogate loss over the vocabulary (Task-Relative REINFORCE++), per
// token row t with target y, logits z at inverse temperature τ (s = τ·z: the distribution
// the tokens were sampled from, as verl and TRL compute it; τ = 1 untempered), advantage A,
// old log-prob o (under the same τ), reference log-prob q and token weight w (the token
// mean's 1/count; 0 off the response):
//   logp   = s_y − logsumexp(s),  r = exp(logp − o)
//   loss   = w · (−min(r·A, clip(r, 1 − εlow, 1 + εhigh)·A) + β·k3(q − logp) − c·H)
//   z     <- d loss / d z   (in place; 0 where y = −1)
// with k3(d) = exp(d) − d − 1 (the low-variance KL estimator, off when β = 0) and H the
// entropy of softmax(s) (its bonus off when c = 0; H is reported either way); d/dz = τ·d/ds.
// SERIAL: one invocation per row and no barriers, for CPU adapters (see norm.wgsl).
// ROWS: logits row r belongs to token rows[r] (an LM head run on the loss's rows alone): the
// targets, inputs and outputs are per token and read or written at it, the others untouched.

struct Params {
  rows: u32, vocab: u32, offZ: u32, offTargets: u32,
  offIn: u32, offOut: u32, invTemp: f32, offRows: u32,
  clipLow: f32, clipHigh: f32, klCoef: f32, entCoef: f32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> Z: array<f32>;
@group(0) @binding(2) var<storage, read> targets: array<i32>;
// Per token: w, A, o, q.
@group(0) @binding(3) var<storage, read> tokIn: array<f32>;
// Per token: loss, logp, entropy.
@group(0) @binding(4) var<storage, read_write> tokOut: array<f32>;
#include token_rows

const WG = 64u;
const SCRATCH = WG;
#include workgroup_reduce
#include grid

#if SERIAL
const LANES = 1u;
#else
const LANES = WG;
#endif

fn combine(lid: u32, v: f32, isMax: bool) -> f32 {
#if SERIAL
  return v;
#else
  return workgroupReduce(lid, LANES, v, isMax);
#endif
}

@compute @workgroup_size(WG)
fn policy_loss(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_id) lid3: vec3<u32>) {
#if SERIAL
  let row = gridIndex(wid, nwg, lid3, WG);
  let lid = 0u;
#else
  let row = gridIndex(wid, nwg, vec3<u32>(0u), 1u);
  let lid = lid3.x;
#endif
  if (row >= p.rows) { return; }
  let base = p.offZ + row * p.vocab;
  let tok = tokenOf(row);
  let tgt = targets[p.offTargets + tok];
  let o = p.offOut + tok * 3u;
  if (tgt < 0) {
    for (var c = lid; c < p.vocab; c += LANES) { Z[base + c] = 0.0; }
    if (lid == 0u) {
      tokOut[o] = 0.0;
      tokOut[o + 1u] = 0.0;
      tokOut[o + 2u] = 0.0;
    }
    return;
  }
  let tau = p.invTemp;
  var m = LOWEST;
  for (var c = lid; c < p.vocab; c += LANES) { m = max(m, tau * Z[base + c]); }
  m = combine(lid, m, true);
  // Σ e^(z−m) and Σ e^(z−m)·(z−m): H = log s − Σ p·(z − m), with no cancellation against m.
  var s = 0.0;
  var sz = 0.0;
  for (var c = lid; c < p.vocab; c += LANES) {
    let d = tau * Z[base + c] - m;
    let e = exp(d);
    s += e;
    sz += e * d;
  }
  s = combine(lid, s, false);
  sz = combine(lid, sz, false);
  let lse = m + log(s);
  let entropy = log(s) - sz / s;
  let i = p.offIn + tok * 4u;
  let w = tokIn[i];
  let A = tokIn[i + 1u];
  let logp = tau * Z[base + u32(tgt)] - lse;
  let ratio = exp(logp - tokIn[i + 2u]);
  let unclipped = ratio * A;
  let clipped = clamp(ratio, 1.0 - p.clipLow, 1.0 + p.clipHigh) * A;
  // The min picks the unclipped term (ties included): only then does the gradient flow.
  var g = select(0.0, -unclipped, unclipped <= clipped);
  var kl = 0.0;
  if (p.klCoef != 0.0) {
    let d = tokIn[i + 3u] - logp;
    kl = exp(d) - d - 1.0;
    g += p.klCoef * (1.0 - exp(d));
  }
  // Weighted, and through s = τ·z.
  g *= w * tau;
  let ent = w * p.entCoef * tau;
#if !SERIAL
  // Every invocation read z_y above; wait before any of them overwrites the row.
  workgroupBarrier();
#endif
  for (var c = lid; c < p.vocab; c += LANES) {
    let lp = tau * Z[base + c] - lse;
    let pc = exp(lp);
    Z[base + c] = g * (select(0.0, 1.0, c == u32(tgt)) - pc) + ent * pc * (lp + entropy);
  }
  if (lid == 0u) {
    tokOut[o] = w * (-min(unclipped, clipped) + p.klCoef * kl - p.entCoef * entropy);
    tokOut[o + 1u] = logp;
    tokOut[o + 2u] = entropy;
  }
}
