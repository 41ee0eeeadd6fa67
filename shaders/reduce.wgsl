// Reductions. Row kernels use one 64-wide workgroup per row (rows on a 2-D grid); scalar
// reductions run in two passes: 256 workgroups of grid-stride partials, then one workgroup.

// row_reduce: 0 sum, 1 max.   scalar: 0 sum, 1 sum of squares.
override OP: u32 = 0u;

struct Params {
  rows: u32, cols: u32, offX: u32, offOut: u32,
  n: u32, offY: u32, offS: u32, accumulate: u32,
}

// col_reduce: multiply by Y[r, c] and/or by the row scale S[r] before summing.
override HAS_Y: bool = false;
override HAS_S: bool = false;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> Out: array<f32>;
@group(0) @binding(3) var<storage, read> Y: array<f32>;
@group(0) @binding(4) var<storage, read> S: array<f32>;

const WG = 64u;
const SCRATCH = 256u;
#include workgroup_reduce

fn combine(a: f32, b: f32) -> f32 {
  if (OP == 1u) { return max(a, b); }
  return a + b;
}

#include grid

@compute @workgroup_size(WG)
fn row_reduce(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_id) lid3: vec3<u32>) {
  let row = gridIndex(wid, nwg, vec3<u32>(0u), 1u);
  let lid = lid3.x;
  if (row >= p.rows) { return; } // uniform per workgroup, so barriers stay uniform
  let base = p.offX + row * p.cols;
  var acc = select(0.0, LOWEST, OP == 1u);
  for (var c = lid; c < p.cols; c += WG) { acc = combine(acc, X[base + c]); }
  let total = workgroupReduce(lid, WG, acc, OP == 1u);
  if (lid == 0u) { Out[p.offOut + row] = total; }
}

// Numerically stable softmax of each row: exp(x - max) / Σ exp(x - max).
@compute @workgroup_size(WG)
fn softmax_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_id) lid3: vec3<u32>) {
  let row = gridIndex(wid, nwg, vec3<u32>(0u), 1u);
  let lid = lid3.x;
  if (row >= p.rows) { return; }
  let base = p.offX + row * p.cols;
  var m = LOWEST;
  for (var c = lid; c < p.cols; c += WG) { m = max(m, X[base + c]); }
  let rowMax = workgroupReduce(lid, WG, m, true);
  var s = 0.0;
  for (var c = lid; c < p.cols; c += WG) { s += exp(X[base + c] - rowMax); }
  let inv = 1.0 / workgroupReduce(lid, WG, s, false);
  let outBase = p.offOut + row * p.cols;
  for (var c = lid; c < p.cols; c += WG) { Out[outBase + c] = exp(X[base + c] - rowMax) * inv; }
}

// Pass 1: Out[offOut + wid] = partial of X over a grid stride (256 workgroups × 256 wide).
@compute @workgroup_size(256)
fn scalar_partial(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>,
                  @builtin(num_workgroups) nwg: vec3<u32>) {
  let lid = lid3.x;
  let stride = nwg.x * 256u;
  var acc = 0.0;
  for (var i = wid.x * 256u + lid; i < p.n; i += stride) {
    let v = X[p.offX + i];
    acc += select(v, v * v, OP == 1u);
  }
  let total = workgroupReduce(lid, 256u, acc, false);
  if (lid == 0u) { Out[p.offOut + wid.x] = total; }
}

// Pass 1 without barriers, for CPU adapters: invocation i sums the i-th of 1024 contiguous
// chunks into Out[offOut + i].
@compute @workgroup_size(64)
fn scalar_partial_serial(@builtin(global_invocation_id) gid: vec3<u32>) {
  let chunk = (p.n + 1023u) / 1024u;
  let start = gid.x * chunk;
  let end = min(start + chunk, p.n);
  var acc = 0.0;
  for (var i = start; i < end; i++) {
    let v = X[p.offX + i];
    acc += select(v, v * v, OP == 1u);
  }
  Out[p.offOut + gid.x] = acc;
}

// Pass 2 without barriers: one invocation adds the n partials.
@compute @workgroup_size(1)
fn scalar_final_serial() {
  var acc = 0.0;
  for (var i = 0u; i < p.n; i++) { acc += X[p.offX + i]; }
  Out[p.offOut] = acc;
}

// Pass 2: Out[offOut] = Σ X[offX .. offX + n) in one workgroup.
@compute @workgroup_size(256)
fn scalar_final(@builtin(local_invocation_id) lid3: vec3<u32>) {
  let lid = lid3.x;
  var acc = 0.0;
  for (var i = lid; i < p.n; i += 256u) { acc += X[p.offX + i]; }
  let total = workgroupReduce(lid, 256u, acc, false);
  if (lid == 0u) { Out[p.offOut] = total; }
}

// Out[c] (+)= Σ_r X[r, c] · Y[r, c] · S[r]: bias gradients (Σ dy) and RMSNorm weight
// gradients (Σ dy · x · rstd). One invocation per column, rows in order: deterministic.
@compute @workgroup_size(64)
fn col_reduce(@builtin(global_invocation_id) gid: vec3<u32>) {
  let c = gid.x;
  if (c >= p.cols) { return; }
  var acc = 0.0;
  for (var r = 0u; r < p.rows; r++) {
    var v = X[p.offX + r * p.cols + c];
    if (HAS_Y) { v *= Y[p.offY + r * p.cols + c]; }
    if (HAS_S) { v *= S[p.offS + r]; }
    acc += v;
  }
  if (p.accumulate != 0u) { Out[p.offOut + c] += acc; } else { Out[p.offOut + c] = acc; }
}

// The first of two stages of col_reduce where rows are many (GPUs): workgroup (x, y) sums
// rows [y·n, (y + 1)·n) of 64 columns into Out[y, c], its 4 lanes of 64 invocations striding
// the block's rows (consecutive invocations read consecutive columns: coalesced), then added
// in lane order; col_reduce over the row blocks' partials is the second. Both fixed orders:
// deterministic.
@compute @workgroup_size(64, 4)
fn col_partial(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let c = min(wid.x * 64u + lid.x, p.cols - 1u);
  let r0 = wid.y * p.n;
  let r1 = min(r0 + p.n, p.rows);
  var acc = 0.0;
  for (var r = r0 + lid.y; r < r1; r += 4u) {
    var v = X[p.offX + r * p.cols + c];
    if (HAS_Y) { v *= Y[p.offY + r * p.cols + c]; }
    if (HAS_S) { v *= S[p.offS + r]; }
    acc += v;
  }
  scratch[lid.y * 64u + lid.x] = acc;
  workgroupBarrier();
  if (lid.y == 0u && wid.x * 64u + lid.x < p.cols) {
    Out[p.offOut + wid.y * p.cols + c] = ((scratch[lid.x] + scratch[64u + lid.x]) + scratch[128u + lid.x]) + scratch[192u + lid.x];
  }
}
