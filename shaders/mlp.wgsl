// SwiGLU on fused rows: GU [rows, 2·cols] holds gate then up in each row (one matmul with the
// adjacent gate_proj|up_proj weights makes it); h = silu(gate) · up is dense [rows, cols].
// The backward pass writes d gate | d up in the same fused layout.

struct Params {
  n: u32, offGU: u32, offH: u32, offDGU: u32,
  cols: u32, _pad0: u32, _pad1: u32, _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> GU: array<f32>;
// Forward: h (written). Backward: dh (read).
@group(0) @binding(2) var<storage, read_write> h: array<f32>;
@group(0) @binding(3) var<storage, read_write> dGU: array<f32>;

#include grid

// Element i of the dense [rows, cols] h as the index of its gate in the fused rows (its up
// is cols further).
fn fused(i: u32) -> u32 {
  let r = i / p.cols;
  return r * 2u * p.cols + (i - r * p.cols);
}

@compute @workgroup_size(256)
fn swiglu_forward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                  @builtin(local_invocation_id) lid: vec3<u32>) {
  let i = gridIndex(wid, nwg, lid, 256u);
  if (i >= p.n) { return; }
  let j = fused(i);
  let g = GU[p.offGU + j];
  h[p.offH + i] = g / (1.0 + exp(-g)) * GU[p.offGU + j + p.cols];
}

@compute @workgroup_size(256)
fn swiglu_backward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                   @builtin(local_invocation_id) lid: vec3<u32>) {
  let i = gridIndex(wid, nwg, lid, 256u);
  if (i >= p.n) { return; }
  let j = fused(i);
  let g = GU[p.offGU + j];
  let u = GU[p.offGU + j + p.cols];
  let dh = h[p.offH + i];
  let s = 1.0 / (1.0 + exp(-g));
  dGU[p.offDGU + j] = dh * u * s * (1.0 + g * (1.0 - s));
  dGU[p.offDGU + j + p.cols] = dh * g * s;
}
