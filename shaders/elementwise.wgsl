// Element-wise and layout kernels over flat f32 ranges. Every operand has an element offset,
// so views into larger buffers work. Dispatched as a 2-D grid of 256-wide workgroups (large
// tensors exceed the 65535 workgroups-per-dimension limit in 1-D).

// binary: 0 add, 1 mul, 2 sub, 3 silu backward (X = x, Y = dy).
// unary:  0 scale (alpha·x), 1 silu.
override OP: u32 = 0u;

struct Params {
  n: u32, offX: u32, offY: u32, offOut: u32,
  alpha: f32, rows: u32, cols: u32, beta: f32,
  strideX: u32, strideOut: u32, _pad0: u32, _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read> Y: array<f32>;
@group(0) @binding(3) var<storage, read_write> Out: array<f32>;

#include grid

fn sigmoid(x: f32) -> f32 {
  return 1.0 / (1.0 + exp(-x));
}

@compute @workgroup_size(256)
fn binary(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_id) lid: vec3<u32>) {
  let i = gridIndex(wid, nwg, lid, 256u);
  if (i >= p.n) { return; }
  let x = X[p.offX + i];
  let y = Y[p.offY + i];
  var v: f32;
  switch (OP) {
    case 0u: { v = x + y; }
    case 1u: { v = x * y; }
    case 2u: { v = x - y; }
    default: {
      let s = sigmoid(x);
      v = y * s * (1.0 + x * (1.0 - s));
    }
  }
  Out[p.offOut + i] = v;
}

@compute @workgroup_size(256)
fn unary(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
         @builtin(local_invocation_id) lid: vec3<u32>) {
  let i = gridIndex(wid, nwg, lid, 256u);
  if (i >= p.n) { return; }
  let x = X[p.offX + i];
  var v: f32;
  switch (OP) {
    case 0u: { v = p.alpha * x; }
    default: { v = x * sigmoid(x); }
  }
  Out[p.offOut + i] = v;
}

// Out += alpha · X
@compute @workgroup_size(256)
fn axpy(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
  let i = gridIndex(wid, nwg, lid, 256u);
  if (i >= p.n) { return; }
  Out[p.offOut + i] += p.alpha * X[p.offX + i];
}

@compute @workgroup_size(256)
fn fill(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
  let i = gridIndex(wid, nwg, lid, 256u);
  if (i >= p.n) { return; }
  Out[p.offOut + i] = p.alpha;
}

// Out[b, c, r] = X[b, r, c]; one invocation per output element, n = batch·rows·cols.
@compute @workgroup_size(256)
fn transpose(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_id) lid: vec3<u32>) {
  let i = gridIndex(wid, nwg, lid, 256u);
  if (i >= p.n) { return; }
  let plane = p.rows * p.cols;
  let b = i / plane;
  let rem = i - b * plane;
  let c = rem / p.rows;
  let r = rem - c * p.rows;
  Out[p.offOut + i] = X[p.offX + b * plane + r * p.cols + c];
}

// A block of `cols` columns between matrices of different widths (offsets point at the block's
// first column): Out[r, c] = alpha · X[r, c] + beta · Out[r, c]; n = rows·cols.
@compute @workgroup_size(256)
fn columns(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_id) lid: vec3<u32>) {
  let i = gridIndex(wid, nwg, lid, 256u);
  if (i >= p.n) { return; }
  let r = i / p.cols;
  let c = i - r * p.cols;
  let o = p.offOut + r * p.strideOut + c;
  var v = p.alpha * X[p.offX + r * p.strideX + c];
  // beta = 0 overwrites (a poisoned destination must not leak NaN through 0 · NaN).
  if (p.beta != 0.0) { v += p.beta * Out[o]; }
  Out[o] = v;
}
