// The attention of batched decoding over the KV cache.
// One buffer per layer holds K, then V, each [B, T, kvd] (kvd = kvHeads·hd): slot t of
// sequence b at (b·T + t)·kvd, V a further B·T·kvd on; rope_store.wgsl writes it, rotating
// q and k as it stores k and v. Rows of the fused q|k|v input sit `stride` apart, q first.
// Row i of a decode step is the one new token of sequence table[offRows + i], at slot p.slot.
// Finished sequences have no row: the batch is compacted, while their cache stays in place.
//
// decode_attention: one new query per row against its sequence's cache slots
//                   start..p.slot (start = table[offStarts + i], the first real token of a
//                   left-padded prompt), online softmax; one invocation per (row, head),
//                   query head h reading kv head h / (heads / kvHeads).
// HD4 (= ceil(hd / 4)) unrolls the head vectors into vec4 registers (SwiftShader keeps
// arrays in memory); lanes past hd in the last vec4 load as zero and are never stored.

struct Params {
  rows: u32, kvd: u32, T: u32, B: u32,
  offQKV: u32, stride: u32, slot: u32, offRows: u32,
  offStarts: u32, heads: u32, kvHeads: u32, hd: u32,
  offO: u32, scale: f32, offCache: u32, _pad0: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> QKV: array<f32>;
@group(0) @binding(2) var<storage, read_write> cache: array<f32>;
@group(0) @binding(3) var<storage, read> table: array<u32>;
@group(0) @binding(4) var<storage, read_write> O: array<f32>;
#include grid


fn ld(i: u32, lanes: u32) -> vec4<f32> {
  return vec4<f32>(
    cache[i],
    select(0.0, cache[i + 1u], lanes > 1u),
    select(0.0, cache[i + 2u], lanes > 2u),
    select(0.0, cache[i + 3u], lanes > 3u));
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
