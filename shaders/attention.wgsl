// Fused causal self-attention with grouped-query heads and a key padding mask.
// Rows are tokens (row = b·T + t). Q/dQ rows hold heads·hd values and K/V/dK/dV rows
// kvHeads·hd, each at a row stride (sQ, sKV) so that they can sit inside a fused q|k|v row;
// O/dO are dense [rows, heads·hd]. Query head h reads kv head h / (heads / kvHeads).
// Query i of row b attends key j ≤ i iff both are real (mask ≠ 0) and j lies in i's own
// sequence or in the prefix i's sequence continues. A real token's mask holds, in its low 16
// bits, 1 + the column where its sequence begins in the row, and in its high 16 bits 1 + the
// column where its prefix begins (0: none). One sequence per row: mask 1. Several sequences
// packed into a row (positions restarting at each): a token never attends another's.
// Completions of one prompt packed after a single copy of it (all but its last token, the
// prefix, which each completion's sequence continues from that last token on): every
// completion attends the shared prefix as if it were its own. A prefix is a sequence of its
// own, and a family (a prefix and its continuations) lies contiguous in its row, so each
// loop below starts at the earliest key a query can see and the dK/dV loop ends where the
// next family begins. A padding query (mask 0) attends every real key before it, as
// transformers' eager attention does for right padding; rows of packed sequences hold no
// padding (their remainder is a sequence of its own), or the dK/dV loop would end early.
//
// Forward: one invocation per (row, head), online softmax over the keys: never more than
// one score at a time, so memory is O(T) whatever the sequence length. It saves the
// log-sum-exp per (row, head). Backward recomputes the probabilities from it:
//   attention_backward_d:   D_i = dO_i·O_i
//   attention_backward_dq:  dQ_i = scale Σ_j P_ij (dO_i·V_j − D_i) K_j
//   attention_backward_dkv: dV_j = Σ_i P_ij dO_i,  dK_j = scale Σ_i P_ij (dO_i·V_j − D_i) Q_i
// each summed by the one invocation that owns the output: deterministic, no atomics.
//
// With HD4 defined (head_dim = 4·HD4) the head vectors are unrolled into vec4 registers
// and each invocation owns a block of RB consecutive rows (queries in the forward and dQ
// passes, keys in the dK/dV pass) of one sequence and head: every K/V (or Q/dO) row it loads
// serves RB rows, 1.5× faster on SwiftShader for RB = 4 at head_dim 32. Otherwise
// (head_dim not a multiple of 4) one row per invocation and loops over arrays, which
// SwiftShader keeps in memory, several times slower.

const MAX_HD = 128u;

struct Params {
  B: u32, T: u32, heads: u32, kvHeads: u32,
  hd: u32, offQ: u32, offK: u32, offV: u32,
  offO: u32, offLse: u32, offMask: u32, offDO: u32,
  offD: u32, offDQ: u32, offDK: u32, offDV: u32,
  scale: f32, sQ: u32, sKV: u32, _pad: u32,
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
// dK and dV share one binding (at offDK and offDV): WebGPU forbids two writable bindings
// of one buffer, and in a fused q|k|v gradient they are one buffer.
@group(0) @binding(10) var<storage, read_write> dKV: array<f32>;
#include grid


// Whether a query with mask qm sees a key with mask km (j ≤ i checked by the caller).
fn sees(qm: u32, km: u32) -> bool {
  let ks = km & 0xffffu;
  return km != 0u && (qm == 0u || ks == (qm & 0xffffu) || ks == (qm >> 16u));
}

// The earliest column a query with mask qm sees: its prefix's, else its sequence's; the
// row's first for padding.
fn firstKey(qm: u32) -> u32 {
  let pp = qm >> 16u;
  return select(select(0u, (qm & 0xffffu) - 1u, qm != 0u), pp - 1u, pp != 0u);
}

fn qIndex(row: u32, h: u32) -> u32 { return row * p.sQ + h * p.hd; }
fn kvIndex(row: u32, g: u32) -> u32 { return row * p.sKV + g * p.hd; }
fn oIndex(row: u32, h: u32) -> u32 { return row * p.heads * p.hd + h * p.hd; }

fn ldQ(i: u32) -> vec4<f32> { let b = p.offQ + i; return vec4<f32>(Q[b], Q[b + 1u], Q[b + 2u], Q[b + 3u]); }
fn ldK(i: u32) -> vec4<f32> { let b = p.offK + i; return vec4<f32>(K[b], K[b + 1u], K[b + 2u], K[b + 3u]); }
fn ldV(i: u32) -> vec4<f32> { let b = p.offV + i; return vec4<f32>(V[b], V[b + 1u], V[b + 2u], V[b + 3u]); }
fn ldDO(i: u32) -> vec4<f32> { let b = p.offDO + i; return vec4<f32>(dO[b], dO[b + 1u], dO[b + 2u], dO[b + 3u]); }

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

struct Where { row: u32, b: u32, i: u32, head: u32 }

// Invocation index → (token row, sequence, position, head) for `heads` heads per row.
fn locate(wid: vec3<u32>, nwg: vec3<u32>, lid: vec3<u32>, heads: u32) -> Where {
  let idx = gridIndex(wid, nwg, lid, 64u);
  let row = idx / heads;
  let b = row / p.T;
  return Where(row, b, row - b * p.T, idx - row * heads);
}

// Rows per invocation with HD4. Also a preprocessor define: the #for loops over the block
// unroll with it; the two always agree (src/model/kernels/attention.ts).
override RB: u32 = 1u;

struct Block { b: u32, i0: u32, head: u32, valid: bool }

fn locateBlock(wid: vec3<u32>, nwg: vec3<u32>, lid: vec3<u32>, heads: u32, span: u32) -> Block {
  let idx = gridIndex(wid, nwg, lid, 64u);
  let perSeq = (p.T + span - 1u) / span;
  let blk = idx / heads;
  let b = blk / perSeq;
  return Block(b, (blk - b * perSeq) * span, idx - blk * heads, b < p.B);
}

@compute @workgroup_size(64)
fn attention_forward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                     @builtin(local_invocation_id) lid: vec3<u32>) {
#if HD4
  let w = locateBlock(wid, nwg, lid, p.heads, RB);
  if (!w.valid) { return; }
  let h = w.head;
  let g = h / (p.heads / p.kvHeads);
  // Queries past the end are clamped onto the last one: computed, never stored.
#for r in 0..RB
  let i{{r}} = min(w.i0 + {{r}}u, p.T - 1u);
  let qi{{r}} = qIndex(w.b * p.T + i{{r}}, h);
  let qm{{r}} = mask[p.offMask + w.b * p.T + i{{r}}];
  var m{{r}} = bitcast<f32>(0xff7fffffu);
  var l{{r}} = 0.0;
#endfor
#for r in 0..RB
#for d in 0..HD4
  let q{{r}}_{{d}} = ldQ(qi{{r}} + {{d}}u * 4u) * p.scale;
  var acc{{r}}_{{d}} = vec4<f32>(0.0);
#endfor
#endfor
  let jEnd = min(w.i0 + RB - 1u, p.T - 1u);
  // The earliest key any row of the block may see.
  var jStart = firstKey(qm0);
#for r in 1..RB
  jStart = min(jStart, firstKey(qm{{r}}));
#endfor
  for (var j = jStart; j <= jEnd; j++) {
    let key = w.b * p.T + j;
    let km = mask[p.offMask + key];
    if (km == 0u) { continue; }
    let kj = kvIndex(key, g);
#for d in 0..HD4
    let k{{d}} = ldK(kj + {{d}}u * 4u);
    let v{{d}} = ldV(kj + {{d}}u * 4u);
#endfor
#for r in 0..RB
    if (j <= i{{r}} && sees(qm{{r}}, km)) {
      var s = 0.0;
#for d in 0..HD4
      s += dot(q{{r}}_{{d}}, k{{d}});
#endfor
      let mNew = max(m{{r}}, s);
      let corr = exp(m{{r}} - mNew);
      let e = exp(s - mNew);
      l{{r}} = l{{r}} * corr + e;
#for d in 0..HD4
      acc{{r}}_{{d}} = acc{{r}}_{{d}} * corr + e * v{{d}};
#endfor
      m{{r}} = mNew;
    }
#endfor
  }
#for r in 0..RB
  if (w.i0 + {{r}}u < p.T) {
    let row = w.b * p.T + i{{r}};
    let oi = oIndex(row, h);
    let inv = select(0.0, 1.0 / l{{r}}, l{{r}} > 0.0);
#for d in 0..HD4
    for (var c = 0u; c < 4u; c++) { O[p.offO + oi + {{d}}u * 4u + c] = acc{{r}}_{{d}}[c] * inv; }
#endfor
    Lse[p.offLse + row * p.heads + h] = select(0.0, m{{r}} + log(l{{r}}), l{{r}} > 0.0);
  }
#endfor
#else
  let w = locate(wid, nwg, lid, p.heads);
  if (w.row >= p.B * p.T) { return; }
  let h = w.head;
  let g = h / (p.heads / p.kvHeads);
  let qi = qIndex(w.row, h);
  let oi = oIndex(w.row, h);
  var acc: array<f32, MAX_HD>;
  var m = bitcast<f32>(0xff7fffffu);
  var l = 0.0;
  // A padding query's loop is empty.
  let qm = mask[p.offMask + w.row];
  for (var j = firstKey(qm); j <= w.i; j++) {
    let key = w.b * p.T + j;
    if (!sees(qm, mask[p.offMask + key])) { continue; }
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
  for (var d = 0u; d < p.hd; d++) { O[p.offO + oi + d] = acc[d] * inv; }
  Lse[p.offLse + w.row * p.heads + h] = select(0.0, m + log(l), l > 0.0);
#endif
}

// D_i = dO_i · O_i per (row, head), in a pass of its own so that no backward kernel binds
// more than 8 storage buffers (the WebGPU default limit per shader stage).
@compute @workgroup_size(64)
fn attention_backward_d(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                        @builtin(local_invocation_id) lid: vec3<u32>) {
  let w = locate(wid, nwg, lid, p.heads);
  if (w.row >= p.B * p.T) { return; }
  let oi = oIndex(w.row, w.head);
  var D = 0.0;
  for (var d = 0u; d < p.hd; d++) { D += dO[p.offDO + oi + d] * O[p.offO + oi + d]; }
  Dbuf[p.offD + w.row * p.heads + w.head] = D;
}

@compute @workgroup_size(64)
fn attention_backward_dq(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                         @builtin(local_invocation_id) lid: vec3<u32>) {
#if HD4
  let w = locateBlock(wid, nwg, lid, p.heads, RB);
  if (!w.valid) { return; }
  let h = w.head;
  let g = h / (p.heads / p.kvHeads);
#for r in 0..RB
  let i{{r}} = min(w.i0 + {{r}}u, p.T - 1u);
  let row{{r}} = w.b * p.T + i{{r}};
  let qi{{r}} = qIndex(row{{r}}, h);
  let qm{{r}} = mask[p.offMask + row{{r}}];
  let D{{r}} = Dbuf[p.offD + row{{r}} * p.heads + h];
  let lse{{r}} = Lse[p.offLse + row{{r}} * p.heads + h];
#endfor
#for r in 0..RB
#for d in 0..HD4
  let q{{r}}_{{d}} = ldQ(qi{{r}} + {{d}}u * 4u) * p.scale;
  let do{{r}}_{{d}} = ldDO(oIndex(row{{r}}, h) + {{d}}u * 4u);
  var acc{{r}}_{{d}} = vec4<f32>(0.0);
#endfor
#endfor
  let jEnd = min(w.i0 + RB - 1u, p.T - 1u);
  // The earliest key any row of the block may see.
  var jStart = firstKey(qm0);
#for r in 1..RB
  jStart = min(jStart, firstKey(qm{{r}}));
#endfor
  for (var j = jStart; j <= jEnd; j++) {
    let key = w.b * p.T + j;
    let km = mask[p.offMask + key];
    if (km == 0u) { continue; }
    let kj = kvIndex(key, g);
#for d in 0..HD4
    let k{{d}} = ldK(kj + {{d}}u * 4u);
    let v{{d}} = ldV(kj + {{d}}u * 4u);
#endfor
#for r in 0..RB
    if (j <= i{{r}} && sees(qm{{r}}, km)) {
      var s = 0.0;
      var dp = 0.0;
#for d in 0..HD4
      s += dot(q{{r}}_{{d}}, k{{d}});
      dp += dot(do{{r}}_{{d}}, v{{d}});
#endfor
      let ds = exp(s - lse{{r}}) * (dp - D{{r}});
#for d in 0..HD4
      acc{{r}}_{{d}} += ds * k{{d}};
#endfor
    }
#endfor
  }
#for r in 0..RB
  if (w.i0 + {{r}}u < p.T) {
#for d in 0..HD4
    for (var c = 0u; c < 4u; c++) { dQ[p.offDQ + qi{{r}} + {{d}}u * 4u + c] = acc{{r}}_{{d}}[c] * p.scale; }
#endfor
  }
#endfor
#else
  let w = locate(wid, nwg, lid, p.heads);
  if (w.row >= p.B * p.T) { return; }
  let h = w.head;
  let g = h / (p.heads / p.kvHeads);
  let qi = qIndex(w.row, h);
  let oi = oIndex(w.row, h);
  let D = Dbuf[p.offD + w.row * p.heads + h];
  let lse = Lse[p.offLse + w.row * p.heads + h];
  var acc: array<f32, MAX_HD>;
  // A padding query's loop is empty.
  let qm = mask[p.offMask + w.row];
  for (var j = firstKey(qm); j <= w.i; j++) {
    let key = w.b * p.T + j;
    if (!sees(qm, mask[p.offMask + key])) { continue; }
    let kj = kvIndex(key, g);
    let ds = exp(dotQK(qi, kj) - lse) * (dotDOV(oi, kj) - D);
    for (var d = 0u; d < p.hd; d++) { acc[d] += ds * K[p.offK + kj + d]; }
  }
  for (var d = 0u; d < p.hd; d++) { dQ[p.offDQ + qi + d] = acc[d] * p.scale; }
#endif
}

@compute @workgroup_size(64)
fn attention_backward_dkv(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                          @builtin(local_invocation_id) lid: vec3<u32>) {
  let group = p.heads / p.kvHeads;
#if HD4
  // A block of RB keys: each query row loaded serves all of them.
  let w = locateBlock(wid, nwg, lid, p.kvHeads, RB);
  if (!w.valid) { return; }
  let g = w.head;
#for r in 0..RB
  let j{{r}} = min(w.i0 + {{r}}u, p.T - 1u);
  let kj{{r}} = kvIndex(w.b * p.T + j{{r}}, g);
  let km{{r}} = mask[p.offMask + w.b * p.T + j{{r}}];
#endfor
#for r in 0..RB
#for d in 0..HD4
  let k{{r}}_{{d}} = ldK(kj{{r}} + {{d}}u * 4u) * p.scale;
  let v{{r}}_{{d}} = ldV(kj{{r}} + {{d}}u * 4u);
  var accK{{r}}_{{d}} = vec4<f32>(0.0);
  var accV{{r}}_{{d}} = vec4<f32>(0.0);
#endfor
#endfor
  let jLast = min(w.i0 + RB - 1u, p.T - 1u);
  for (var h = g * group; h < (g + 1u) * group; h++) {
    for (var i = w.i0; i < p.T; i++) {
      let row = w.b * p.T + i;
      // A query whose sequence begins after the block's last key, and every query after it, sees none of them.
      let qm = mask[p.offMask + row];
      if (qm != 0u && firstKey(qm) > jLast) { break; }
      let qi = qIndex(row, h);
      let oi = oIndex(row, h);
      let lse = Lse[p.offLse + row * p.heads + h];
      let D = Dbuf[p.offD + row * p.heads + h];
#for d in 0..HD4
      let q{{d}} = ldQ(qi + {{d}}u * 4u);
      let do{{d}} = ldDO(oi + {{d}}u * 4u);
#endfor
#for r in 0..RB
      if (i >= j{{r}} && sees(qm, km{{r}})) {
        var s = 0.0;
        var dp = 0.0;
#for d in 0..HD4
        s += dot(q{{d}}, k{{r}}_{{d}});
        dp += dot(do{{d}}, v{{r}}_{{d}});
#endfor
        let prob = exp(s - lse);
        let ds = prob * (dp - D);
#for d in 0..HD4
        accV{{r}}_{{d}} += prob * do{{d}};
        accK{{r}}_{{d}} += ds * q{{d}};
#endfor
      }
#endfor
    }
  }
#for r in 0..RB
  if (w.i0 + {{r}}u < p.T) {
#for d in 0..HD4
    for (var c = 0u; c < 4u; c++) {
      dKV[p.offDK + kj{{r}} + {{d}}u * 4u + c] = accK{{r}}_{{d}}[c] * p.scale;
      dKV[p.offDV + kj{{r}} + {{d}}u * 4u + c] = accV{{r}}_{{d}}[c];
    }
#endfor
  }
#endfor
#else
  let w = locate(wid, nwg, lid, p.kvHeads);
  if (w.row >= p.B * p.T) { return; }
  let g = w.head;
  let key = w.row;
  let kj = kvIndex(key, g);
  var accK: array<f32, MAX_HD>;
  var accV: array<f32, MAX_HD>;
  if (mask[p.offMask + key] != 0u) {
    for (var h = g * group; h < (g + 1u) * group; h++) {
      for (var i = w.i; i < p.T; i++) {
        let row = w.b * p.T + i;
        let qm = mask[p.offMask + row];
        if (qm != 0u && firstKey(qm) > w.i) { break; }
        if (!sees(qm, mask[p.offMask + key])) { continue; }
        let qi = qIndex(row, h);
        let oi = oIndex(row, h);
        let lse = Lse[p.offLse + row * p.heads + h];
        let D = Dbuf[p.offD + row * p.heads + h];
        let prob = exp(dotQK(qi, kj) - lse);
        let ds = prob * (dotDOV(oi, kj) - D);
        for (var d = 0u; d < p.hd; d++) {
          accV[d] += prob * dO[p.offDO + oi + d];
          accK[d] += ds * Q[p.offQ + qi + d];
        }
      }
    }
  }
  for (var d = 0u; d < p.hd; d++) {
    dKV[p.offDK + kj + d] = accK[d] * p.scale;
    dKV[p.offDV + kj + d] = accV[d];
  }
#endif
}

// Tiled forms for GPUs (TILED; head_dim = 4·HDV): a workgroup of 64 invocations per tile of
// 16 queries (forward, dQ) or 16 keys (dK/dV) of one sequence and head, the tiles of Q, K, V
// and dO staged in workgroup memory with coalesced loads, the 16×16 scores of a tile pair
// computed 4 a invocation (row t / 4, keys t % 4 + 4c), the softmax state of each row kept by
// one invocation (online softmax), and each invocation owning the output columns t % 4 + 4u
// (vec4s) of row t / 4: HDU ≤ 8 vec4 accumulators (16 with dK and dV) where the row kernels
// above hold RB × head_dim of several vectors. No atomics: dQ and dK/dV are separate passes,
// each output summed by the invocation that owns it, in a fixed order. SwiftShader runs the
// row kernels (faster there: barriers are costly on a CPU).
#if TILED
const TQ = 16u;
const TK = 16u;
override HDV: u32 = 1u;
var<workgroup> tQ: array<vec4<f32>, TQ * HDV>;
var<workgroup> tDO: array<vec4<f32>, TQ * HDV>;
var<workgroup> tK: array<vec4<f32>, TK * HDV>;
var<workgroup> tV: array<vec4<f32>, TK * HDV>;
// Scores, probabilities or their gradients of a tile pair: [query][key].
var<workgroup> tP: array<f32, TQ * TK>;
var<workgroup> tDS: array<f32, TQ * TK>;
var<workgroup> tQm: array<u32, TQ>;
var<workgroup> tKm: array<u32, TK>;
// Per query row: forward the rescaling of the step and the final sum; backward lse and D.
var<workgroup> tRow: array<f32, 2 * TQ>;
var<workgroup> tStart: u32;

// Stages the tile of query rows i0.. of head h (rows past the end clamped onto the last):
// Q·scale and the rows' masks.
fn stageQueries(t: u32, b: u32, i0: u32, h: u32, scale: f32) {
  for (var e = t; e < TQ * HDV; e += 64u) {
    let r = e / HDV;
    let d = e - r * HDV;
    tQ[e] = ldQ(qIndex(b * p.T + min(i0 + r, p.T - 1u), h) + d * 4u) * scale;
  }
  if (t < TQ) { tQm[t] = mask[p.offMask + b * p.T + min(i0 + t, p.T - 1u)]; }
}

// The same rows' dO, lse and D, for the backward passes.
fn stageGradients(t: u32, b: u32, i0: u32, h: u32) {
  for (var e = t; e < TQ * HDV; e += 64u) {
    let r = e / HDV;
    let d = e - r * HDV;
    tDO[e] = ldDO(oIndex(b * p.T + min(i0 + r, p.T - 1u), h) + d * 4u);
  }
  if (t < TQ) {
    let row = b * p.T + min(i0 + t, p.T - 1u);
    tRow[t] = Lse[p.offLse + row * p.heads + h];
    tRow[TQ + t] = Dbuf[p.offD + row * p.heads + h];
  }
}

// Stages the keys and values j0.. of kv head g; keys past the end get mask 0 (seen by none).
fn stageKeys(t: u32, b: u32, j0: u32, g: u32, scale: f32) {
  for (var e = t; e < TK * HDV; e += 64u) {
    let r = e / HDV;
    let d = e - r * HDV;
    let kj = kvIndex(b * p.T + min(j0 + r, p.T - 1u), g) + d * 4u;
    tK[e] = ldK(kj) * scale;
    tV[e] = ldV(kj);
  }
  if (t < TK) { tKm[t] = select(0u, mask[p.offMask + b * p.T + min(j0 + t, p.T - 1u)], j0 + t < p.T); }
}

// The earliest key any query of the tile at i0 may see (invocation 0 finds it; all get it).
fn tileStart(t: u32, b: u32, i0: u32) -> u32 {
  if (t == 0u) {
    var s = p.T;
    for (var r = 0u; r < TQ; r++) { s = min(s, firstKey(mask[p.offMask + b * p.T + min(i0 + r, p.T - 1u)])); }
    tStart = s;
  }
  return workgroupUniformLoad(&tStart);
}

// Whether query i0 + r sees key j0 + c (both staged).
fn tileSees(i0: u32, r: u32, j0: u32, c: u32) -> bool {
  return i0 + r < p.T && j0 + c <= i0 + r && sees(tQm[r], tKm[c]);
}

// Staged query row a · key row b (the score: one of them carries the scale), and dO_a · V_b.
fn tileScore(a: u32, b: u32) -> f32 {
  var s = 0.0;
  for (var d = 0u; d < HDV; d++) { s += dot(tQ[a * HDV + d], tK[b * HDV + d]); }
  return s;
}

fn tileDP(a: u32, b: u32) -> f32 {
  var s = 0.0;
  for (var d = 0u; d < HDV; d++) { s += dot(tDO[a * HDV + d], tV[b * HDV + d]); }
  return s;
}

@compute @workgroup_size(64)
fn attention_forward_tiled(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
  let b = wid.z;
  let h = wid.y;
  let i0 = wid.x * TQ;
  let g = h / (p.heads / p.kvHeads);
  let r = t >> 2u;
  let lane = t & 3u;
  stageQueries(t, b, i0, h, p.scale);
  let jStart = tileStart(t, b, i0);
  // Row owner t < TQ: the running max and sum of its row.
  var m = bitcast<f32>(0xff7fffffu);
  var l = 0.0;
#for u in 0..HDU
  var acc{{u}} = vec4<f32>(0.0);
#endfor
  for (var j0 = (jStart / TK) * TK; j0 < min(i0 + TQ, p.T); j0 += TK) {
    stageKeys(t, b, j0, g, 1.0);
    workgroupBarrier();
#for c in 0..4
    tP[r * TK + lane + {{c}}u * 4u] = tileScore(r, lane + {{c}}u * 4u);
#endfor
    workgroupBarrier();
    if (t < TQ) {
      var mNew = m;
      for (var c = 0u; c < TK; c++) {
        if (tileSees(i0, t, j0, c)) { mNew = max(mNew, tP[t * TK + c]); }
      }
      var sum = 0.0;
      for (var c = 0u; c < TK; c++) {
        let e = select(0.0, exp(tP[t * TK + c] - mNew), tileSees(i0, t, j0, c));
        tP[t * TK + c] = e;
        sum += e;
      }
      let corr = exp(m - mNew);
      l = l * corr + sum;
      m = mNew;
      tRow[t] = corr;
    }
    workgroupBarrier();
    let corr = tRow[r];
#for u in 0..HDU
    if (lane + {{u}}u * 4u < HDV) {
      var a = acc{{u}} * corr;
      for (var c = 0u; c < TK; c++) { a += tP[r * TK + c] * tV[c * HDV + lane + {{u}}u * 4u]; }
      acc{{u}} = a;
    }
#endfor
    workgroupBarrier();
  }
  if (t < TQ) {
    tRow[TQ + t] = l;
    if (i0 + t < p.T) { Lse[p.offLse + (b * p.T + i0 + t) * p.heads + h] = select(0.0, m + log(l), l > 0.0); }
  }
  workgroupBarrier();
  let lr = tRow[TQ + r];
  let inv = select(0.0, 1.0 / lr, lr > 0.0);
  if (i0 + r < p.T) {
    let oi = p.offO + oIndex(b * p.T + i0 + r, h);
#for u in 0..HDU
    if (lane + {{u}}u * 4u < HDV) {
      for (var c = 0u; c < 4u; c++) { O[oi + (lane + {{u}}u * 4u) * 4u + c] = acc{{u}}[c] * inv; }
    }
#endfor
  }
}

@compute @workgroup_size(64)
fn attention_backward_dq_tiled(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
  let b = wid.z;
  let h = wid.y;
  let i0 = wid.x * TQ;
  let g = h / (p.heads / p.kvHeads);
  let r = t >> 2u;
  let lane = t & 3u;
  stageQueries(t, b, i0, h, p.scale);
  stageGradients(t, b, i0, h);
  let jStart = tileStart(t, b, i0);
#for u in 0..HDU
  var acc{{u}} = vec4<f32>(0.0);
#endfor
  for (var j0 = (jStart / TK) * TK; j0 < min(i0 + TQ, p.T); j0 += TK) {
    stageKeys(t, b, j0, g, 1.0);
    workgroupBarrier();
    let lse = tRow[r];
    let D = tRow[TQ + r];
#for c in 0..4
    {
      let c = lane + {{c}}u * 4u;
      let prob = exp(tileScore(r, c) - lse);
      tP[r * TK + c] = select(0.0, prob * (tileDP(r, c) - D), tileSees(i0, r, j0, c));
    }
#endfor
    workgroupBarrier();
#for u in 0..HDU
    if (lane + {{u}}u * 4u < HDV) {
      var a = acc{{u}};
      for (var c = 0u; c < TK; c++) { a += tP[r * TK + c] * tK[c * HDV + lane + {{u}}u * 4u]; }
      acc{{u}} = a;
    }
#endfor
    workgroupBarrier();
  }
  if (i0 + r < p.T) {
    let qi = p.offDQ + qIndex(b * p.T + i0 + r, h);
#for u in 0..HDU
    if (lane + {{u}}u * 4u < HDV) {
      for (var c = 0u; c < 4u; c++) { dQ[qi + (lane + {{u}}u * 4u) * 4u + c] = acc{{u}}[c] * p.scale; }
    }
#endfor
  }
}

// A tile of 16 keys of kv head g: its query heads' tiles from the key tile's own on, until a
// tile whose first query's family begins after the last key (every later query's does too).
@compute @workgroup_size(64)
fn attention_backward_dkv_tiled(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
  let b = wid.z;
  let g = wid.y;
  let j0 = wid.x * TK;
  let group = p.heads / p.kvHeads;
  let r = t >> 2u;
  let lane = t & 3u;
  let jLast = min(j0 + TK, p.T) - 1u;
  // K pre-scaled, so that tileScore gives the scores.
  stageKeys(t, b, j0, g, p.scale);
#for u in 0..HDU
  var accK{{u}} = vec4<f32>(0.0);
  var accV{{u}} = vec4<f32>(0.0);
#endfor
  for (var h = g * group; h < (g + 1u) * group; h++) {
    for (var i0 = (j0 / TQ) * TQ; i0 < p.T; i0 += TQ) {
      let qm0 = mask[p.offMask + b * p.T + i0];
      if (qm0 != 0u && firstKey(qm0) > jLast) { break; }
      workgroupBarrier();
      // Q unscaled here: K carries the scale.
      stageQueries(t, b, i0, h, 1.0);
      stageGradients(t, b, i0, h);
      workgroupBarrier();
      let lse = tRow[r];
      let D = tRow[TQ + r];
#for c in 0..4
      {
        let c = lane + {{c}}u * 4u;
        let prob = select(0.0, exp(tileScore(r, c) - lse), tileSees(i0, r, j0, c));
        tP[r * TK + c] = prob;
        tDS[r * TK + c] = prob * (tileDP(r, c) - D);
      }
#endfor
      workgroupBarrier();
      // Invocation t owns key row r: Σ over the tile's queries q.
#for u in 0..HDU
      if (lane + {{u}}u * 4u < HDV) {
        var aK = accK{{u}};
        var aV = accV{{u}};
        for (var q = 0u; q < TQ; q++) {
          let d = q * HDV + lane + {{u}}u * 4u;
          aV += tP[q * TK + r] * tDO[d];
          aK += tDS[q * TK + r] * tQ[d];
        }
        accK{{u}} = aK;
        accV{{u}} = aV;
      }
#endfor
    }
  }
  if (j0 + r < p.T) {
    let kj = kvIndex(b * p.T + j0 + r, g);
#for u in 0..HDU
    if (lane + {{u}}u * 4u < HDV) {
      for (var c = 0u; c < 4u; c++) {
        dKV[p.offDK + kj + (lane + {{u}}u * 4u) * 4u + c] = accK{{u}}[c] * p.scale;
        dKV[p.offDV + kj + (lane + {{u}}u * 4u) * 4u + c] = accV{{u}}[c];
      }
    }
#endfor
  }
}

#endif
