// Fused causal self-attention with grouped-query heads and a key padding mask.
// Rows are tokens (row = b·T + t). Q/dQ/O/dO are [rows, heads·hd]; K/V/dK/dV are
// [rows, kvHeads·hd]; query head h reads kv head h / (heads / kvHeads).
// Query i of sequence b attends key j iff j ≤ i and mask[b·T + j] ≠ 0.
//
// Forward: one invocation per (row, head), online softmax over the keys: never more than
// one score at a time, so memory is O(T) whatever the sequence length. It saves the
// log-sum-exp per (row, head). Backward recomputes the probabilities from it:
//   attention_backward_dq:  D_i = dO_i·O_i, dQ_i = scale Σ_j P_ij (dO_i·V_j − D_i) K_j
//   attention_backward_dkv: dV_j = Σ_i P_ij dO_i,  dK_j = scale Σ_i P_ij (dO_i·V_j − D_i) Q_i
// each summed by the one invocation that owns the output: deterministic, no atomics.

const MAX_HD = 128u;

struct Params {
  B: u32, T: u32, heads: u32, kvHeads: u32,
  hd: u32, offQ: u32, offK: u32, offV: u32,
  offO: u32, offLse: u32, offMask: u32, offDO: u32,
  offD: u32, offDQ: u32, offDK: u32, offDV: u32,
  scale: f32, _pad0: u32, _pad1: u32, _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> Q: array<f32>;
@group(0) @binding(2) var<storage, read> K: array<f32>;
@group(0) @binding(3) var<storage, read> V: array<f32>;
@group(0) @binding(4) var<storage, read> mask: array<u32>;
// Forward writes O and Lse; backward reads them.
@group(0) @binding(5) var<storage, read_write> O: array<f32>;
@group(0) @binding(6) var<storage, read_write> Lse: array<f32>;
@group(0) @binding(7) var<storage, read> dO: array<f32>;
// D = rowwise dO·O, written by the dq pass and read by the dkv pass.
@group(0) @binding(8) var<storage, read_write> Dbuf: array<f32>;
@group(0) @binding(9) var<storage, read_write> dQ: array<f32>;
@group(0) @binding(10) var<storage, read_write> dK: array<f32>;
@group(0) @binding(11) var<storage, read_write> dV: array<f32>;

fn qIndex(row: u32, h: u32) -> u32 { return row * p.heads * p.hd + h * p.hd; }
fn kvIndex(row: u32, g: u32) -> u32 { return row * p.kvHeads * p.hd + g * p.hd; }

fn dotQK(qi: u32, kj: u32) -> f32 {
  var s = 0.0;
  for (var d = 0u; d < p.hd; d++) { s += Q[p.offQ + qi + d] * K[p.offK + kj + d]; }
  return s * p.scale;
}

fn dotDOV(oi: u32, vj: u32) -> f32 {
  var s = 0.0;
  for (var d = 0u; d < p.hd; d++) { s += dO[p.offDO + oi + d] * V[p.offV + vj + d]; }
  return s;
}

@compute @workgroup_size(64)
fn attention_forward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
  let idx = (wid.y * nwg.x + wid.x) * 64u + lid.x;
  if (idx >= p.B * p.T * p.heads) { return; }
  let h = idx % p.heads;
  let row = idx / p.heads;
  let b = row / p.T;
  let i = row - b * p.T;
  let g = h / (p.heads / p.kvHeads);
  let qi = qIndex(row, h);
  var acc: array<f32, MAX_HD>;
  var m = bitcast<f32>(0xff7fffffu);
  var l = 0.0;
  for (var j = 0u; j <= i; j++) {
    let key = b * p.T + j;
    if (mask[p.offMask + key] == 0u) { continue; }
    let kj = kvIndex(key, g);
    let s = dotQK(qi, kj);
    let mNew = max(m, s);
    let corr = exp(m - mNew);
    let e = exp(s - mNew);
    l = l * corr + e;
    for (var d = 0u; d < p.hd; d++) { acc[d] = acc[d] * corr + e * V[p.offV + kj + d]; }
    m = mNew;
  }
  let inv = select(0.0, 1.0 / l, l > 0.0);
  for (var d = 0u; d < p.hd; d++) { O[p.offO + qi + d] = acc[d] * inv; }
  Lse[p.offLse + row * p.heads + h] = select(0.0, m + log(l), l > 0.0);
}

@compute @workgroup_size(64)
fn attention_backward_dq(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
  let idx = (wid.y * nwg.x + wid.x) * 64u + lid.x;
  if (idx >= p.B * p.T * p.heads) { return; }
  let h = idx % p.heads;
  let row = idx / p.heads;
  let b = row / p.T;
  let i = row - b * p.T;
  let g = h / (p.heads / p.kvHeads);
  let qi = qIndex(row, h);
  var D = 0.0;
  for (var d = 0u; d < p.hd; d++) { D += dO[p.offDO + qi + d] * O[p.offO + qi + d]; }
  Dbuf[p.offD + row * p.heads + h] = D;
  let lse = Lse[p.offLse + row * p.heads + h];
  var acc: array<f32, MAX_HD>;
  for (var j = 0u; j <= i; j++) {
    let key = b * p.T + j;
    if (mask[p.offMask + key] == 0u) { continue; }
    let kj = kvIndex(key, g);
    let prob = exp(dotQK(qi, kj) - lse);
    let ds = prob * (dotDOV(qi, kj) - D);
    for (var d = 0u; d < p.hd; d++) { acc[d] += ds * K[p.offK + kj + d]; }
  }
  for (var d = 0u; d < p.hd; d++) { dQ[p.offDQ + qi + d] = acc[d] * p.scale; }
}

@compute @workgroup_size(64)
fn attention_backward_dkv(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
  let idx = (wid.y * nwg.x + wid.x) * 64u + lid.x;
  if (idx >= p.B * p.T * p.kvHeads) { return; }
  let g = idx % p.kvHeads;
  let key = idx / p.kvHeads;
  let b = key / p.T;
  let j = key - b * p.T;
  let kj = kvIndex(key, g);
  var accK: array<f32, MAX_HD>;
  var accV: array<f32, MAX_HD>;
  if (mask[p.offMask + key] != 0u) {
    let group = p.heads / p.kvHeads;
    for (var h = g * group; h < (g + 1u) * group; h++) {
      for (var i = j; i < p.T; i++) {
        let row = b * p.T + i;
        let qi = qIndex(row, h);
        let prob = exp(dotQK(qi, kj) - Lse[p.offLse + row * p.heads + h]);
        let ds = prob * (dotDOV(qi, kj) - Dbuf[p.offD + row * p.heads + h]);
        for (var d = 0u; d < p.hd; d++) {
          accV[d] += prob * dO[p.offDO + qi + d];
          accK[d] += ds * Q[p.offQ + qi + d];
        }
      }
    }
  }
  for (var d = 0u; d < p.hd; d++) {
    dK[p.offDK + kj + d] = accK[d] * p.scale;
    dV[p.offDV + kj + d] = accV[d];
  }
}
