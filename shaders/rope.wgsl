// Rotary position embedding in the Hugging Face "rotate half" layout, in place on the
// heads · hd values at column `col` of each row of X (row stride `stride`, so q and k can
// sit inside a fused q|k|v row): the pair (i, i + hd/2) of each head rotates by
// pos · inv_freq[i].
// cos/sin come from a table [maxPos, hd/2] built on the host in float64.
// INVERSE applies the transposed rotation: the backward pass.

override INVERSE: bool = false;

struct Params {
  rows: u32, heads: u32, hd: u32, offX: u32,
  offPos: u32, maxPos: u32, stride: u32, col: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> X: array<f32>;
@group(0) @binding(2) var<storage, read> positions: array<u32>;
@group(0) @binding(3) var<storage, read> cosTable: array<f32>;
@group(0) @binding(4) var<storage, read> sinTable: array<f32>;
#include grid


@compute @workgroup_size(256)
fn rope(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
  let half = p.hd / 2u;
  let idx = gridIndex(wid, nwg, lid, 256u);
  if (idx >= p.rows * p.heads * half) { return; }
  let i = idx % half;
  let rh = idx / half; // row · heads + head
  let row = rh / p.heads;
  let head = rh - row * p.heads;
  let pos = min(positions[p.offPos + row], p.maxPos - 1u);
  let c = cosTable[pos * half + i];
  var s = sinTable[pos * half + i];
  if (INVERSE) { s = -s; }
  let base = p.offX + row * p.stride + p.col + head * p.hd;
  let a = X[base + i];
  let b = X[base + i + half];
  X[base + i] = a * c - b * s;
  X[base + i + half] = b * c + a * s;
}
