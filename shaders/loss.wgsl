// Fused cross-entropy over the vocabulary, one 64-wide workgroup per token row:
//   loss[t]   = w[t] · (logsumexp(z_t) − z_t[y_t])      (0 where y_t = −1)
//   logp[t]   = z_t[y_t] − logsumexp(z_t)                 (unweighted, for policy ratios)
//   z_t      <- w[t] · (softmax(z_t) − onehot(y_t))       (d loss / d logits, in place)
// The weights carry masks, 1/count normalisation and per-token advantages alike.
// ROWS: logits row r belongs to token rows[r] (an LM head run on the loss's rows alone): the
// targets, weights and outputs are per token and read or written at it, the others untouched.

struct Params {
  rows: u32, vocab: u32, offZ: u32, offTargets: u32,
  offWeights: u32, offLoss: u32, offLogp: u32, offRows: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> Z: array<f32>;
@group(0) @binding(2) var<storage, read> targets: array<i32>;
@group(0) @binding(3) var<storage, read> weights: array<f32>;
@group(0) @binding(4) var<storage, read_write> lossOut: array<f32>;
@group(0) @binding(5) var<storage, read_write> logpOut: array<f32>;
#include token_rows

const WG = 64u;
const SCRATCH = WG;
#include workgroup_reduce
#include grid


@compute @workgroup_size(WG)
fn cross_entropy(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                 @builtin(local_invocation_id) lid3: vec3<u32>) {
  let row = gridIndex(wid, nwg, vec3<u32>(0u), 1u);
  if (row >= p.rows) { return; }
  let lid = lid3.x;
  let base = p.offZ + row * p.vocab;
  let tok = tokenOf(row);
  let tgt = targets[p.offTargets + tok];
  let w = weights[p.offWeights + tok];
  var m = LOWEST;
  for (var c = lid; c < p.vocab; c += WG) { m = max(m, Z[base + c]); }
  m = workgroupReduce(lid, WG, m, true);
  var s = 0.0;
  for (var c = lid; c < p.vocab; c += WG) { s += exp(Z[base + c] - m); }
  s = workgroupReduce(lid, WG, s, false);
  let lse = m + log(s);
  if (tgt < 0) {
    for (var c = lid; c < p.vocab; c += WG) { Z[base + c] = 0.0; }
    if (lid == 0u) {
      lossOut[p.offLoss + tok] = 0.0;
      logpOut[p.offLogp + tok] = 0.0;
    }
    return;
  }
  let zt = Z[base + u32(tgt)];
  // Every invocation read zt above; wait before any of them overwrites the row.
  workgroupBarrier();
  for (var c = lid; c < p.vocab; c += WG) {
    let prob = exp(Z[base + c] - lse);
    Z[base + c] = w * (prob - select(0.0, 1.0, c == u32(tgt)));
  }
  if (lid == 0u) {
    lossOut[p.offLoss + tok] = w * (lse - zt);
    logpOut[p.offLogp + tok] = zt - lse;
  }
}

// One invocation per row, no barriers: for CPU adapters (see norm.wgsl).
@compute @workgroup_size(64)
fn cross_entropy_serial(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                        @builtin(local_invocation_id) lid: vec3<u32>) {
  let row = gridIndex(wid, nwg, lid, 64u);
  if (row >= p.rows) { return; }
  let base = p.offZ + row * p.vocab;
  let tok = tokenOf(row);
  let tgt = targets[p.offTargets + tok];
  let w = weights[p.offWeights + tok];
  if (tgt < 0) {
    for (var c = 0u; c < p.vocab; c++) { Z[base + c] = 0.0; }
    lossOut[p.offLoss + tok] = 0.0;
    logpOut[p.offLogp + tok] = 0.0;
    return;
  }
  var m = LOWEST;
  for (var c = 0u; c < p.vocab; c++) { m = max(m, Z[base + c]); }
  var s = 0.0;
  for (var c = 0u; c < p.vocab; c++) { s += exp(Z[base + c] - m); }
  let lse = m + log(s);
  let zt = Z[base + u32(tgt)];
  for (var c = 0u; c < p.vocab; c++) {
    Z[base + c] = w * (exp(Z[base + c] - lse) - select(0.0, 1.0, c == u32(tgt)));
  }
  lossOut[p.offLoss + tok] = w * (lse - zt);
  logpOut[p.offLogp + tok] = zt - lse;
}
