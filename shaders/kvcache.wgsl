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
// Per query head of the group (at most ATT_WG): its max and sum of exp over the chunk; and
// one partial max or sum an invocation.
var<workgroup> headMax: array<f32, ATT_WG>;
var<workgroup> headSum: array<f32, ATT_WG>;
var<workgroup> partial: array<f32, ATT_WG>;
// One vec4 of a head's weighted V an invocation, summed over the slot lanes.
var<workgroup> red: array<vec4<f32>, ATT_WG>;
// Query heads whose outputs an invocation sums at once, each V value read once for them all.
const ATT_HEADS = 8u;
// Invocations a head vector's HD4 vec4s take (one each), and the slot lanes that many make.
const OUT_LANES = ATT_WG / {{HD4}}u;
#if !Q_GLOBAL
#if !FUSED_ROPE
// The group's q heads, [group, hd], staged once for every slot's scores (FUSED_ROPE declares
// it rotated above).
const ATT_QS = 1024u;
var<workgroup> qs: array<f32, ATT_QS>;
#endif
#endif

fn partML(i: u32, h: u32, s: u32) -> u32 {
  return p.rows * p.heads * p.splits * p.hd + ((i * p.heads + h) * p.splits + s) * 2u;
}

// Values i..i+3 of the cache, lanes past `lanes` zero. An f16 cache reads two words: head_dim
// is a multiple of 4 there (checkCache), so i is too.
fn kv4(i: u32, lanes: u32) -> vec4<f32> {
#if KV_F16
  return vec4<f32>(unpack2x16float(cache[i >> 1u]), unpack2x16float(cache[(i >> 1u) + 1u]));
#else
  return ld(i, lanes);
#endif
}

// Values 4·d4.. of query head h of the group (of row i, kv head g), lanes past `lanes` zero.
fn q4(qRow: u32, h: u32, d4: u32, lanes: u32) -> vec4<f32> {
#if Q_GLOBAL
  return ldQ(qRow + h * p.hd + d4 * 4u, lanes);
#else
  let b = h * p.hd + d4 * 4u;
  return vec4<f32>(
    qs[b],
    select(0.0, qs[b + 1u], lanes > 1u),
    select(0.0, qs[b + 2u], lanes > 2u),
    select(0.0, qs[b + 3u], lanes > 3u));
#endif
}

// A workgroup per (chunk s, kv head g, row i), in four phases, each a short chain of reads:
//  1. scores: an invocation per slot loads the K row whole (HD4 vec4 loads, issued together)
//     and scores it against every query head of the group, staged in workgroup memory;
//  2. each head's max and sum: ATT_WG / group invocations a head, each over a stride of slots;
//  3. weighted V: an invocation per (vec4 of the head, slot lane), OUT_LANES lanes striding the
//     slots four at a time (four V loads in flight), for up to ATT_HEADS heads at once;
//  4. the lanes' sums added in workgroup memory, written as O (one chunk) or as the chunk's part.
// Where one invocation walked every slot's scores in turn, a K row's values one load at a time,
// an invocation now waits on about n / ATT_WG + n / (4 · OUT_LANES) loads for n slots.
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
  // The chunk that holds the new slot: its k rotated and its v, as the cache holds them,
  // stored in the cache, which this workgroup alone reads at that slot.
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
  // The new slot's k and v, stored above, read back from the cache like every other slot's.
  storageBarrier();
#else
#if !Q_GLOBAL
  for (var e = lid; e < group * p.hd; e += ATT_WG) { qs[e] = QKV[qRow + e]; }
  workgroupBarrier();
#endif
#endif
  // 1. Scores, [n, group].
  for (var j = lid; j < n; j += ATT_WG) {
    let k = kRow + j * p.kvd;
#for d in 0..HD4
    let k{{d}} = kv4(k + {{d}}u * 4u, min(p.hd - {{d}}u * 4u, 4u));
#endfor
    for (var h = 0u; h < group; h++) {
      var qk = 0.0;
#for d in 0..HD4
      qk += dot(q4(qRow, h, {{d}}u, min(p.hd - {{d}}u * 4u, 4u)), k{{d}});
#endfor
      scores[j * group + h] = qk * p.scale;
    }
  }
  workgroupBarrier();
  // 2. Head hh's max, then its weights exp(score − max) in place and their sum, by the
  // `ways` invocations hh, hh + group, ...; each invocation's part, then one per head adds
  // the parts in order.
  let ways = ATT_WG / group;
  let hh = lid % group;
  let way = lid / group;
  var pm = LOWEST;
  if (way < ways) {
    for (var j = way; j < n; j += ways) { pm = max(pm, scores[j * group + hh]); }
  }
  partial[lid] = pm;
  workgroupBarrier();
  if (lid < group) {
    var m = LOWEST;
    for (var r = 0u; r < ways; r++) { m = max(m, partial[r * group + lid]); }
    headMax[lid] = m;
  }
  workgroupBarrier();
  var ps = 0.0;
  if (way < ways) {
    let m = headMax[hh];
    for (var j = way; j < n; j += ways) {
      let w = exp(scores[j * group + hh] - m);
      scores[j * group + hh] = w;
      ps += w;
    }
  }
  partial[lid] = ps;
  workgroupBarrier();
  if (lid < group) {
    var l = 0.0;
    for (var r = 0u; r < ways; r++) { l += partial[r * group + lid]; }
    headSum[lid] = l;
  }
  // 3-4. Weighted V: vec4 d4 of the head, slots lane, lane + OUT_LANES, ...
  let d4 = lid % {{HD4}}u;
  let lane = lid / {{HD4}}u;
  let lanes = min(p.hd - d4 * 4u, 4u);
  for (var h0 = 0u; h0 < group; h0 += ATT_HEADS) {
    let hn = min(ATT_HEADS, group - h0);
#for h in 0..8
    var acc{{h}} = vec4<f32>(0.0);
#endfor
    if (lane < OUT_LANES) {
      for (var j = lane; j < n; j += 4u * OUT_LANES) {
#for u in 0..4
        let j{{u}} = j + {{u}}u * OUT_LANES;
        let v{{u}} = kv4(vRow + min(j{{u}}, n - 1u) * p.kvd + d4 * 4u, lanes);
#endfor
#for u in 0..4
        if (j{{u}} < n) {
#for h in 0..8
          if ({{h}}u < hn) { acc{{h}} += scores[j{{u}} * group + h0 + {{h}}u] * v{{u}}; }
#endfor
        }
#endfor
      }
    }
#for h in 0..8
    if ({{h}}u < hn) {
      red[lid] = acc{{h}};
      workgroupBarrier();
      if (lane == 0u) {
        var sum = red[d4];
        for (var r = 1u; r < OUT_LANES; r++) { sum += red[r * {{HD4}}u + d4]; }
        let hq = g * group + h0 + {{h}}u;
        let l = headSum[h0 + {{h}}u];
        let scale = select(1.0, select(0.0, 1.0 / l, l > 0.0), p.splits == 1u);
        let at = select(((i * p.heads + hq) * p.splits + s) * p.hd, p.offO + (i * p.heads + hq) * p.hd, p.splits == 1u) + d4 * 4u;
        for (var c = 0u; c < lanes; c++) {
          if (p.splits == 1u) { O[at + c] = sum[c] * scale; } else { part[at + c] = sum[c]; }
        }
      }
      workgroupBarrier();
    }
#endfor
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
