// The attention of batched decoding over the KV cache.
// One buffer per layer holds K, then V, each [B, T, kvd] (kvd = kvHeads·hd): slot t of
// sequence b at (b·T + t)·kvd, V a further B·T·kvd on; rope_store.wgsl writes it, rotating
// q and k as it stores k and v. Rows of the fused q|k|v input sit `stride` apart, q first.
// Row i of a decode step is the one new token of sequence table[offRows + i], at slot p.slot.
// Finished sequences have no row: the batch is compacted, while their cache stays in place.
//
// One new query per row against its sequence's cache slots start..p.slot (start =
// table[offStarts + i], the first real token of a left-padded prompt); query head h reads kv
// head h / (heads / kvHeads). Two ways (src/model/kernels/kvcache.ts picks by adapter):
//
// decode_attention: one invocation per (row, head) walks every slot, online softmax (on
//                   SwiftShader, where a barrier costs a switch per invocation). HD4 (=
//                   ceil(hd / 4)) unrolls the head vectors into vec4 registers (SwiftShader
//                   keeps arrays in memory); lanes past hd in the last vec4 load as zero.
// decode_attention_split + decode_attention_combine (flash-decoding, for GPUs): the slots
//                   are cut into `splits` chunks of `chunk`; a workgroup per (chunk, kv head,
//                   row) scores its slots against all the query heads of that kv head (each K
//                   and V row loaded once for the group), and writes each head's max, sum
//                   and unnormalised weighted V; the combine rescales the chunks to their
//                   common max. With one chunk the split kernel writes O itself.
//                   FUSED_ROPE: the split kernel also does rope_store.wgsl's work for a decode
//                   step, saving its dispatch: each workgroup rotates its group's q heads into
//                   workgroup memory, and the workgroup whose chunk holds the new slot rotates
//                   the new k, stores k and v in the cache (it alone reads that slot) and scores
//                   them as stored. q in QKV is left as it came.

struct Params {
  rows: u32, kvd: u32, T: u32, B: u32,
  offQKV: u32, stride: u32, slot: u32, offRows: u32,
  offStarts: u32, heads: u32, kvHeads: u32, hd: u32,
  offO: u32, scale: f32, offCache: u32, chunk: u32,
  splits: u32, offPos: u32, maxPos: u32, _pad0: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> QKV: array<f32>;
// KV_F16: the cache holds IEEE halves two to a word (rope_store.wgsl writes them), widened
// to f32 as they are read; every sum stays f32.
#if KV_F16
#include half
@group(0) @binding(2) var<storage, read_write> cache: array<u32>;
fn kv(i: u32) -> f32 { return halfAt(cache[i >> 1u], i); }
// Elements i and i + 1 (i even): one word.
fn kv2(i: u32) -> vec2<f32> { return unpack2x16float(cache[i >> 1u]); }
// A value as the cache holds it: rounded to half.
fn asHeld(x: f32) -> f32 { return unpack2x16float(packHalves(x, 0.0)).x; }
#else
@group(0) @binding(2) var<storage, read_write> cache: array<f32>;
fn kv(i: u32) -> f32 { return cache[i]; }
fn kv2(i: u32) -> vec2<f32> { return vec2<f32>(cache[i], cache[i + 1u]); }
fn asHeld(x: f32) -> f32 { return x; }
#endif
@group(0) @binding(3) var<storage, read> table: array<u32>;
@group(0) @binding(4) var<storage, read_write> O: array<f32>;
#include grid
#if FUSED_ROPE
// cos and sin of pos · inv_freq[i], [maxPos, hd / 2] (src/model/kernels/rope.ts); a row's
// position at table[offPos + i].
@group(0) @binding(6) var<storage, read> cosTable: array<f32>;
@group(0) @binding(7) var<storage, read> sinTable: array<f32>;
// The group's q heads rotated, [group, hd]; the new slot's k (rotated) and v of this kv head,
// each as the cache holds it.
const ATT_QS = 1024u;
const ATT_HD = 256u;
var<workgroup> qs: array<f32, ATT_QS>;
var<workgroup> kNew: array<f32, ATT_HD>;
var<workgroup> vNew: array<f32, ATT_HD>;
#endif


fn ld(i: u32, lanes: u32) -> vec4<f32> {
  return vec4<f32>(
    kv(i),
    select(0.0, kv(i + 1u), lanes > 1u),
    select(0.0, kv(i + 2u), lanes > 2u),
    select(0.0, kv(i + 3u), lanes > 3u));
}

fn ldQ(i: u32, lanes: u32) -> vec4<f32> {
  return vec4<f32>(
    QKV[i],
    select(0.0, QKV[i + 1u], lanes > 1u),
    select(0.0, QKV[i + 2u], lanes > 2u),
    select(0.0, QKV[i + 3u], lanes > 3u));
}

@compute @workgroup_size(64)
fn decode_attention(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                    @builtin(local_invocation_id) lid: vec3<u32>) {
  let idx = gridIndex(wid, nwg, lid, 64u);
  if (idx >= p.rows * p.heads) { return; }
  let i = idx / p.heads;
  let h = idx - i * p.heads;
  let g = h / (p.heads / p.kvHeads);
  let b = table[p.offRows + i];
  let start = table[p.offStarts + i];
  let qBase = p.offQKV + i * p.stride + h * p.hd;
  let vOff = p.B * p.T * p.kvd;
#for d in 0..HD4
  let q{{d}} = ldQ(qBase + {{d}}u * 4u, min(p.hd - {{d}}u * 4u, 4u)) * p.scale;
  var acc{{d}} = vec4<f32>(0.0);
#endfor
  var m = bitcast<f32>(0xff7fffffu);
  var l = 0.0;
  for (var j = start; j <= p.slot; j++) {
    let kBase = p.offCache + (b * p.T + j) * p.kvd + g * p.hd;
    var s = 0.0;
#for d in 0..HD4
    s += dot(q{{d}}, ld(kBase + {{d}}u * 4u, min(p.hd - {{d}}u * 4u, 4u)));
#endfor
    let mNew = max(m, s);
    let corr = exp(m - mNew);
    let e = exp(s - mNew);
    l = l * corr + e;
#for d in 0..HD4
    acc{{d}} = acc{{d}} * corr + e * ld(kBase + vOff + {{d}}u * 4u, min(p.hd - {{d}}u * 4u, 4u));
#endfor
    m = mNew;
  }
  let inv = select(0.0, 1.0 / l, l > 0.0);
  let oBase = p.offO + i * p.heads * p.hd + h * p.hd;
#for d in 0..HD4
  for (var c = 0u; c < min(p.hd - {{d}}u * 4u, 4u); c++) { O[oBase + {{d}}u * 4u + c] = acc{{d}}[c] * inv; }
#endfor
}

// Partial results of the chunks: weighted V [rows, heads, splits, hd], then (max, sum)
// [rows, heads, splits, 2].
@group(0) @binding(5) var<storage, read_write> part: array<f32>;

const LOWEST = bitcast<f32>(0xff7fffffu);
const ATT_WG = 64u;
// Scores of a chunk for the query heads of one kv head, [chunk, group]: chunk · group ≤ this
// (src/model/kernels/kvcache.ts sizes the chunks), 8 KiB of workgroup memory.
const ATT_SCORES = 2048u;
var<workgroup> scores: array<f32, ATT_SCORES>;
// Per query head of the group (at most ATT_WG): its max and sum of exp over the chunk.
var<workgroup> headMax: array<f32, ATT_WG>;
var<workgroup> headSum: array<f32, ATT_WG>;
// Query heads whose outputs an invocation sums at once, each V value read once for them all.
const ATT_HEADS = 8u;

fn partML(i: u32, h: u32, s: u32) -> u32 {
  return p.rows * p.heads * p.splits * p.hd + ((i * p.heads + h) * p.splits + s) * 2u;
}

@compute @workgroup_size(ATT_WG)
fn decode_attention_split(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let s = wid.x;
  let g = wid.y;
  let i = wid.z;
  let group = p.heads / p.kvHeads;
  let b = table[p.offRows + i];
  let start = table[p.offStarts + i];
  // This chunk's live slots: [lo, lo + n).
  let lo = max(start, s * p.chunk);
  let hi = min(p.slot + 1u, (s + 1u) * p.chunk);
  let n = select(0u, hi - lo, hi > lo);
  let kRow = p.offCache + (b * p.T + lo) * p.kvd + g * p.hd;
  let vRow = kRow + p.B * p.T * p.kvd;
  let qRow = p.offQKV + i * p.stride + g * group * p.hd;
#if FUSED_ROPE
  let half = p.hd / 2u;
  let pos = min(table[p.offPos + i], p.maxPos - 1u);
  for (var e = lid; e < group * half; e += ATT_WG) {
    let h = e / half;
    let d = e - h * half;
    let c = cosTable[pos * half + d];
    let sn = sinTable[pos * half + d];
    let x0 = QKV[qRow + h * p.hd + d];
    let x1 = QKV[qRow + h * p.hd + d + half];
    qs[h * p.hd + d] = x0 * c - x1 * sn;
    qs[h * p.hd + d + half] = x1 * c + x0 * sn;
  }
  // The chunk that holds the new slot: its k rotated and its v, as the cache holds them.
  let newSlot = p.slot >= lo && p.slot < lo + n;
  let kSrc = p.offQKV + i * p.stride + p.heads * p.hd + g * p.hd;
  if (newSlot) {
    for (var d = lid; d < half; d += ATT_WG) {
      let c = cosTable[pos * half + d];
      let sn = sinTable[pos * half + d];
      let x0 = QKV[kSrc + d];
      let x1 = QKV[kSrc + d + half];
      kNew[d] = asHeld(x0 * c - x1 * sn);
      kNew[d + half] = asHeld(x1 * c + x0 * sn);
    }
    for (var d = lid; d < p.hd; d += ATT_WG) { vNew[d] = asHeld(QKV[kSrc + p.kvd + d]); }
  }
  workgroupBarrier();
  if (newSlot) {
    let cell = p.offCache + (b * p.T + p.slot) * p.kvd + g * p.hd;
#if KV_F16
    // A word of halves each: hd and the cell are even.
    for (var w = lid; w < half; w += ATT_WG) {
      cache[(cell >> 1u) + w] = packHalves(kNew[2u * w], kNew[2u * w + 1u]);
      cache[((cell + p.B * p.T * p.kvd) >> 1u) + w] = packHalves(vNew[2u * w], vNew[2u * w + 1u]);
    }
#else
    for (var d = lid; d < p.hd; d += ATT_WG) {
      cache[cell + d] = kNew[d];
      cache[cell + p.B * p.T * p.kvd + d] = vNew[d];
    }
#endif
  }
#endif
  // Score e = j·group + h: the heads sharing a K row are neighbouring invocations, so each
  // row is fetched once for them all.
  for (var e = lid; e < n * group; e += ATT_WG) {
    let j = e / group;
    let h = e - j * group;
    let k = kRow + j * p.kvd;
    var qk = 0.0;
#if FUSED_ROPE
    let q = h * p.hd;
    if (lo + j == p.slot) {
      for (var d = 0u; d < p.hd; d += 2u) { qk += dot(vec2<f32>(qs[q + d], qs[q + d + 1u]), vec2<f32>(kNew[d], kNew[d + 1u])); }
    } else {
      for (var d = 0u; d < p.hd; d += 2u) { qk += dot(vec2<f32>(qs[q + d], qs[q + d + 1u]), kv2(k + d)); }
    }
#else
    let q = qRow + h * p.hd;
    // hd is even (rotary pairs): the K row in pairs, one word each when it holds halves.
    for (var d = 0u; d < p.hd; d += 2u) { qk += dot(vec2<f32>(QKV[q + d], QKV[q + d + 1u]), kv2(k + d)); }
#endif
    scores[e] = qk * p.scale;
  }
  workgroupBarrier();
  if (lid < group) {
    var m = LOWEST;
    for (var j = 0u; j < n; j++) { m = max(m, scores[j * group + lid]); }
    var l = 0.0;
    for (var j = 0u; j < n; j++) {
      let w = exp(scores[j * group + lid] - m);
      scores[j * group + lid] = w;
      l += w;
    }
    headMax[lid] = m;
    headSum[lid] = l;
  }
  workgroupBarrier();
  // Output (h, d): an invocation per d walks the chunk's V rows (neighbours read consecutive
  // values) and reads each value once for ATT_HEADS of the group's heads, where one per (h, d)
  // read it once a head: a GPU waits on each read in turn, so the chain is n reads, not n·group.
  // Each head's sum runs over the slots in order, as before.
  for (var d = lid; d < p.hd; d += ATT_WG) {
    for (var h0 = 0u; h0 < group; h0 += ATT_HEADS) {
      let hn = min(ATT_HEADS, group - h0);
      var acc = array<f32, ATT_HEADS>();
      for (var j = 0u; j < n; j++) {
#if FUSED_ROPE
        let v = select(kv(vRow + j * p.kvd + d), vNew[d], lo + j == p.slot);
#else
        let v = kv(vRow + j * p.kvd + d);
#endif
        for (var h = 0u; h < ATT_HEADS; h++) {
          if (h < hn) { acc[h] += scores[j * group + h0 + h] * v; }
        }
      }
      for (var h = 0u; h < hn; h++) {
        let hq = g * group + h0 + h;
        if (p.splits == 1u) {
          let l = headSum[h0 + h];
          O[p.offO + (i * p.heads + hq) * p.hd + d] = acc[h] * select(0.0, 1.0 / l, l > 0.0);
        } else {
          part[((i * p.heads + hq) * p.splits + s) * p.hd + d] = acc[h];
        }
      }
    }
  }
  if (p.splits > 1u && lid < group) {
    let at = partML(i, g * group + lid, s);
    part[at] = headMax[lid];
    part[at + 1u] = headSum[lid];
  }
}

// One invocation per output value (row, head, d): the chunks rescaled to their common max.
@compute @workgroup_size(64)
fn decode_attention_combine(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                            @builtin(local_invocation_id) lid: vec3<u32>) {
  let idx = gridIndex(wid, nwg, lid, 64u);
  if (idx >= p.rows * p.heads * p.hd) { return; }
  let ih = idx / p.hd;
  let d = idx - ih * p.hd;
  let i = ih / p.heads;
  let h = ih - i * p.heads;
  var m = LOWEST;
  for (var s = 0u; s < p.splits; s++) { m = max(m, part[partML(i, h, s)]); }
  var l = 0.0;
  var acc = 0.0;
  for (var s = 0u; s < p.splits; s++) {
    let at = partML(i, h, s);
    // A chunk with no live slot has sum 0 and adds nothing.
    let w = exp(part[at] - m);
    l += part[at + 1u] * w;
    acc += part[(ih * p.splits + s) * p.hd + d] * w;
  }
  O[p.offO + ih * p.hd + d] = acc * select(0.0, 1.0 / l, l > 0.0);
}
