// SwiGLU: h = silu(gate) · up, and its backward pass. gate and up are separate tensors of
// the same shape (the outputs of gate_proj and up_proj).

struct Params {
  n: u32, offGate: u32, offUp: u32, offH: u32,
  offDGate: u32, offDUp: u32, _pad0: u32, _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> gate: array<f32>;
@group(0) @binding(2) var<storage, read> up: array<f32>;
// Forward: h (written). Backward: dh (read).
@group(0) @binding(3) var<storage, read_write> h: array<f32>;
@group(0) @binding(4) var<storage, read_write> dGate: array<f32>;
@group(0) @binding(5) var<storage, read_write> dUp: array<f32>;

fn index(wid: vec3<u32>, nwg: vec3<u32>, lid: vec3<u32>) -> u32 {
  return (wid.y * nwg.x + wid.x) * 256u + lid.x;
}

@compute @workgroup_size(256)
fn swiglu_forward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                  @builtin(local_invocation_id) lid: vec3<u32>) {
  let i = index(wid, nwg, lid);
  if (i >= p.n) { return; }
  let g = gate[p.offGate + i];
  h[p.offH + i] = g / (1.0 + exp(-g)) * up[p.offUp + i];
}

@compute @workgroup_size(256)
fn swiglu_backward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                   @builtin(local_invocation_id) lid: vec3<u32>) {
  let i = index(wid, nwg, lid);
  if (i >= p.n) { return; }
  let g = gate[p.offGate + i];
  let u = up[p.offUp + i];
  let dh = h[p.offH + i];
  let s = 1.0 / (1.0 + exp(-g));
  dGate[p.offDGate + i] = dh * u * s * (1.0 + g * (1.0 - s));
  dUp[p.offDUp + i] = dh * g * s;
}
