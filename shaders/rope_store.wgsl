// Rotary position embedding and the KV-cache store of one layer in one pass (generation):
// the q and k heads of each fused q|k|v row rotate in place (as rope.wgsl does: the pair
// (i, i + hd/2) of each head by pos · inv_freq[i]), and the rotated k and the v go into the
// cache in the layout kvcache.wgsl's decode attention reads (K then V, each [B, T, kvd]). One
// dispatch where there were two, and k read once.
//
// Row → (sequence, slot): seqLen > 0 (prefill) row r is token r % seqLen
// of sequence r / seqLen; seqLen = 0 (a decode step) row r is the new token of sequence
// table[offRows + r] at `slot`.
// One invocation per rotated pair of a q or k head, then one per v value.
//
// KV_F16: the cache holds IEEE halves two to a word (kvcache.wgsl reads them). A word is
// written whole by one invocation: the even one of two neighbouring v values stores both, and
// the even one of two neighbouring pairs of a k head rotates and stores both (hd a multiple
// of 4), their odd partners doing nothing.

struct Params {
  rows: u32, heads: u32, kvHeads: u32, hd: u32,
  offX: u32, stride: u32, offPos: u32, maxPos: u32,
  T: u32, B: u32, seqLen: u32, slot: u32,
  offRows: u32, offCache: u32, _pad0: u32, _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> X: array<f32>;
@group(0) @binding(2) var<storage, read> positions: array<u32>;
@group(0) @binding(3) var<storage, read> cosTable: array<f32>;
@group(0) @binding(4) var<storage, read> sinTable: array<f32>;
#if KV_F16
#include half
@group(0) @binding(5) var<storage, read_write> cache: array<u32>;
#else
@group(0) @binding(5) var<storage, read_write> cache: array<f32>;
#endif
@group(0) @binding(6) var<storage, read> table: array<u32>;
#include grid


@compute @workgroup_size(256)
fn rope_store(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_id) lid: vec3<u32>) {
  let half = p.hd / 2u;
  let kvd = p.kvHeads * p.hd;
  let pairs = (p.heads + p.kvHeads) * half;
  let idx = gridIndex(wid, nwg, lid, 256u);
  if (idx >= p.rows * (pairs + kvd)) { return; }
  let r = idx / (pairs + kvd);
  let u = idx - r * (pairs + kvd);
  var b: u32;
  var slot: u32;
  if (p.seqLen > 0u) {
    b = r / p.seqLen;
    slot = r - b * p.seqLen;
  } else {
    b = table[p.offRows + r];
    slot = p.slot;
  }
  let cell = p.offCache + (b * p.T + slot) * kvd;
  let row = p.offX + r * p.stride;
  if (u >= pairs) {
    // v: columns heads·hd + kvd onward of the row, copied as they are.
    let c = u - pairs;
    let v = row + p.heads * p.hd + kvd + c;
#if KV_F16
    if ((c & 1u) == 1u) { return; }
    cache[(cell + p.B * p.T * kvd + c) >> 1u] = packHalves(X[v], X[v + 1u]);
#else
    cache[cell + p.B * p.T * kvd + c] = X[v];
#endif
    return;
  }
  let head = u / half;
  let i = u - head * half;
  let pos = min(positions[p.offPos + r], p.maxPos - 1u);
  let base = row + head * p.hd;
#if KV_F16
  if (head >= p.heads) {
    if ((i & 1u) == 1u) { return; }
    let a = rotate(base, pos, i, half);
    let b = rotate(base, pos, i + 1u, half);
    let k = (cell + (head - p.heads) * p.hd + i) >> 1u;
    cache[k] = packHalves(a.x, b.x);
    cache[k + (half >> 1u)] = packHalves(a.y, b.y);
    return;
  }
#endif
  let y = rotate(base, pos, i, half);
#if !KV_F16
  if (head >= p.heads) {
    let k = cell + (head - p.heads) * p.hd;
    cache[k + i] = y.x;
    cache[k + i + half] = y.y;
  }
#endif
}

// Rotates the pair (i, i + half) of the head at X[base] in place; returns it rotated.
fn rotate(base: u32, pos: u32, i: u32, half: u32) -> vec2<f32> {
  let c = cosTable[pos * half + i];
  let s = sinTable[pos * half + i];
  let x0 = X[base + i];
  let x1 = X[base + i + half];
  let y = vec2<f32>(x0 * c - x1 * s, x1 * c + x0 * s);
  X[base + i] = y.x;
  X[base + i + half] = y.y;
  return y;
}
