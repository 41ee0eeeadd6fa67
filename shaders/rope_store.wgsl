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
@group(0) @binding(5) var<storage, read_write> cache: array<f32>;
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
    cache[cell + p.B * p.T * kvd + c] = X[row + p.heads * p.hd + kvd + c];
    return;
  }
  let head = u / half;
  let i = u - head * half;
  let pos = min(positions[p.offPos + r], p.maxPos - 1u);
  let c = cosTable[pos * half + i];
  let s = sinTable[pos * half + i];
  let base = row + head * p.hd;
  let x0 = X[base + i];
  let x1 = X[base + i + half];
  let y0 = x0 * c - x1 * s;
  let y1 = x1 * c + x0 * s;
  X[base + i] = y0;
  X[base + i + half] = y1;
  if (head >= p.heads) {
    let k = cell + (head - p.heads) * p.hd;
    cache[k + i] = y0;
    cache[k + i + half] = y1;
  }
}
