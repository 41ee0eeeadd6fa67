// RMSNorm over the last dimension: y = x · rstd · w, rstd = 1 / sqrt(mean(x²) + eps).
// One 64-wide workgroup per row (rows on a 2-D grid). The forward pass saves rstd per row
// for the backward pass.

struct Params {
  rows: u32, cols: u32, offX: u32, offW: u32,
  offY: u32, offRstd: u32, offDy: u32, offDx: u32,
  eps: f32, accumulate: u32, _pad1: u32, _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
// W_F16: the weight holds IEEE halves two to a word (a frozen f16 base).
#if W_F16
#include half
@group(0) @binding(2) var<storage, read> W: array<u32>;
fn loadW(i: u32) -> f32 { return halfAt(W[i >> 1u], i); }
#else
@group(0) @binding(2) var<storage, read> W: array<f32>;
fn loadW(i: u32) -> f32 { return W[i]; }
#endif
// Forward: Y, Rstd written. Backward: Rstd and Dy read, Dx written.
@group(0) @binding(3) var<storage, read_write> Y: array<f32>;
@group(0) @binding(4) var<storage, read_write> Rstd: array<f32>;
@group(0) @binding(5) var<storage, read> Dy: array<f32>;
@group(0) @binding(6) var<storage, read_write> Dx: array<f32>;

const WG = 64u;
const SCRATCH = WG;
#include workgroup_reduce
#include grid


@compute @workgroup_size(WG)
fn rmsnorm_forward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                   @builtin(local_invocation_id) lid3: vec3<u32>) {
  let row = gridIndex(wid, nwg, vec3<u32>(0u), 1u);
  if (row >= p.rows) { return; }
  let lid = lid3.x;
  let base = row * p.cols;
  var ss = 0.0;
  for (var c = lid; c < p.cols; c += WG) {
    let x = X[p.offX + base + c];
    ss += x * x;
  }
  let rstd = inverseSqrt(workgroupReduce(lid, WG, ss, false) / f32(p.cols) + p.eps);
  for (var c = lid; c < p.cols; c += WG) {
    Y[p.offY + base + c] = X[p.offX + base + c] * rstd * loadW(p.offW + c);
  }
  if (lid == 0u) { Rstd[p.offRstd + row] = rstd; }
}

// dx = rstd · (g − x̂ · mean(g ⊙ x̂)), g = w ⊙ dy, x̂ = x · rstd. The weight gradient
// Σ_rows dy ⊙ x̂ is a column reduction, done by reduce.wgsl's col_reduce.
@compute @workgroup_size(WG)
fn rmsnorm_backward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                    @builtin(local_invocation_id) lid3: vec3<u32>) {
  let row = gridIndex(wid, nwg, vec3<u32>(0u), 1u);
  if (row >= p.rows) { return; }
  let lid = lid3.x;
  let base = row * p.cols;
  let rstd = Rstd[p.offRstd + row];
  var dot = 0.0;
  for (var c = lid; c < p.cols; c += WG) {
    dot += loadW(p.offW + c) * Dy[p.offDy + base + c] * X[p.offX + base + c] * rstd;
  }
  let meanDot = workgroupReduce(lid, WG, dot, false) / f32(p.cols);
  for (var c = lid; c < p.cols; c += WG) {
    let xhat = X[p.offX + base + c] * rstd;
    let g = loadW(p.offW + c) * Dy[p.offDy + base + c];
    let d = rstd * (g - xhat * meanDot);
    // accumulate: add into an existing gradient (the residual stream's) instead of writing.
    if (p.accumulate != 0u) { Dx[p.offDx + base + c] += d; } else { Dx[p.offDx + base + c] = d; }
  }
}

// One invocation per row, no workgroup barriers: on CPU adapters (SwiftShader runs each
// barrier as a coroutine switch per invocation) this is several times faster than the
// cooperative kernels above; on GPUs the cooperative ones win.
@compute @workgroup_size(64)
fn rmsnorm_forward_serial(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                          @builtin(local_invocation_id) lid: vec3<u32>) {
  let row = gridIndex(wid, nwg, lid, 64u);
  if (row >= p.rows) { return; }
  let base = row * p.cols;
  var ss = 0.0;
  for (var c = 0u; c < p.cols; c++) {
    let x = X[p.offX + base + c];
    ss += x * x;
  }
  let rstd = inverseSqrt(ss / f32(p.cols) + p.eps);
  for (var c = 0u; c < p.cols; c++) {
    Y[p.offY + base + c] = X[p.offX + base + c] * rstd * loadW(p.offW + c);
  }
  Rstd[p.offRstd + row] = rstd;
}

@compute @workgroup_size(64)
fn rmsnorm_backward_serial(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                           @builtin(local_invocation_id) lid: vec3<u32>) {
  let row = gridIndex(wid, nwg, lid, 64u);
  if (row >= p.rows) { return; }
  let base = row * p.cols;
  let rstd = Rstd[p.offRstd + row];
  var dot = 0.0;
  for (var c = 0u; c < p.cols; c++) {
    dot += loadW(p.offW + c) * Dy[p.offDy + base + c] * X[p.offX + base + c] * rstd;
  }
  let meanDot = dot / f32(p.cols);
  for (var c = 0u; c < p.cols; c++) {
    let xhat = X[p.offX + base + c] * rstd;
    let d = rstd * (loadW(p.offW + c) * Dy[p.offDy + base + c] - xhat * meanDot);
    if (p.accumulate != 0u) { Dx[p.offDx + base + c] += d; } else { Dx[p.offDx + base + c] = d; }
  }
}
