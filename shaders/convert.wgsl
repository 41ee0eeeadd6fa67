// Conversions between f32 and IEEE halves stored two to a 32-bit word (a frozen f16 base's
// weights). Element offsets may be odd: narrowing runs one invocation per word and keeps the
// neighbouring tensor's half in a range's first and last word.

struct Params { n: u32, offF: u32, offH: u32, _pad: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> F: array<f32>;
@group(0) @binding(2) var<storage, read_write> Hw: array<u32>;

#include half
#include grid

// F[offF + i] = half element offH + i.
@compute @workgroup_size(256)
fn widen_half(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_id) lid: vec3<u32>) {
  let i = gridIndex(wid, nwg, lid, 256u);
  if (i >= p.n) { return; }
  let e = p.offH + i;
  F[p.offF + i] = halfAt(Hw[e >> 1u], e);
}

// The half bits of x, clamped to the largest finite half.
fn halfBits(x: f32) -> u32 {
  return packHalves(x, 0.0) & 0xffffu;
}

// Halves offH .. offH + n = F[offF ..] rounded.
@compute @workgroup_size(256)
fn narrow_half(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_id) lid: vec3<u32>) {
  let w = (p.offH >> 1u) + gridIndex(wid, nwg, lid, 256u);
  let end = p.offH + p.n;
  if (2u * w >= end) { return; }
  let old = Hw[w];
  var lo = old & 0xffffu;
  var hi = old >> 16u;
  if (2u * w >= p.offH) { lo = halfBits(F[p.offF + 2u * w - p.offH]); }
  if (2u * w + 1u < end) { hi = halfBits(F[p.offF + 2u * w + 1u - p.offH]); }
  Hw[w] = lo | (hi << 16u);
}
