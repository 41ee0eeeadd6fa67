// C[b] = alpha * op(A[b]) · op(B[b]) (+ bias[n]) (+ beta * C[b])
// op(A) is M×K: A is stored M×K, or K×M when TRANS_A. op(B) is K×N: B is stored K×N, or
// N×K when TRANS_B (a PyTorch linear weight [out, in] used as x·Wᵀ). All row-major.
// Batch strides are in elements; a stride of 0 broadcasts that operand over the batch.
//
// Variants (entry points), chosen per adapter and shape by the autotuner:
//   matmul_reg   register-tiled 8×8 per invocation, no workgroup memory (fast on SwiftShader)
//   matmul_tiled 64×64 workgroup-memory tiles, 4×4 per invocation (fast on real GPUs)
//   matmul_gemv  one column × 4 rows per invocation, for decode-sized M

// SUBGROUP (subgroups of 4 consecutive invocations, see Runtime.subgroupMatmul): in
// matmul_reg the 4 lanes of a subgroup share their rows, so each lane loads two of the
// eight rows of op(A) and subgroupBroadcast hands them round: a quarter of the A loads.
#if SUBGROUP
enable subgroups;
#endif
// HALF_MATH (matmul_big, where the device has shader-f16): the staged operands are rounded to
// f16 and multiplied in f16, each product added to an f32 sum: half the workgroup memory
// traffic and twice the multiply rate of f32 on GPUs with fast f16, products good to 2^-11.
// SK_HALF (matmul_splitk over an f16 B read as vec4s, where the device has shader-f16): B's
// halves are multiplied as they are stored, with no widening, by A's vec4s rounded to f16 once
// per K step; each group of four products is summed in f16 (a vec4<f16> dot) and added to an
// f32 sum.
#if HALF_MATH
enable f16;
#endif
#if SK_HALF
enable f16;
#endif
// MMA (matmul_mma, where the device has subgroup matrices with f16 operands and an f32
// result): the products on the GPU's matrix units (tensor cores through Vulkan's cooperative
// matrices). Its uniformity is the subgroup's, not the workgroup's: each subgroup multiplies
// its own column block or none, so the analysis, which cannot see that subgroup_id is
// uniform in a subgroup, is told not to warn.
#if MMA
enable f16;
#if !MMA_EMULATED
enable subgroups;
enable chromium_experimental_subgroup_matrix;
diagnostic(off, chromium_experimental.subgroup_matrix_uniformity);
#endif
#endif

// TRANS_A / TRANS_B are preprocessor switches rather than overrides: with literal index
// arithmetic SwiftShader's JIT runs the register-tiled loop 40% faster.
override WG_X: u32 = 8u;
override WG_Y: u32 = 8u;

struct Params {
  M: u32, N: u32, K: u32, batch: u32,
  offA: u32, offB: u32, offC: u32, offBias: u32,
  strideA: u32, strideB: u32, strideC: u32, hasBias: u32,
  alpha: f32, beta: f32,
  // Distance between consecutive stored rows of A (K, or M with TRANS_A; twice that with
  // A_SWIGLU), and with A_SWIGLU the distance from a gate to its up in a stored row.
  ldA: u32, upA: u32,
  // A_NORM: the RMSNorm's epsilon and the offset of its weight. SK_SLICED: the elements of K
  // a slice covers (a multiple of 4) and the number of slices.
  eps: f32, offNorm: u32, kSlice: u32, kSlices: u32,
  // LORA_W: the offsets of U and of the adapter's B, and the adapter's scale.
  offU: u32, offLoraB: u32, loraScale: f32,
}

@group(0) @binding(0) var<uniform> p: Params;
// VEC4: A and B are read as vec4 (every dimension, offset and stride a multiple of 4);
// only matmul_reg is compiled then. One vec4 load replaces four scalar loads, each a
// bounds-checked gather per lane on SIMD CPU backends.
#if VEC4
@group(0) @binding(1) var<storage, read> A: array<vec4<f32>>;
#else
@group(0) @binding(1) var<storage, read> A: array<f32>;
#endif
// B_F16 / BIAS_F16: B (or the bias) holds IEEE halves two to a word, widened on load with
// unpack2x16float (core WGSL, no shader-f16); every product and sum stays f32. loadB takes an
// element index, loadB4 the index of an aligned group of four.
#include half
#if MMA
// An f16 B as halves, the element type subgroupMatrixLoad reads; loadB keeps the module's
// scalar entry points valid (only matmul_mma is compiled from it, never with VEC4).
@group(0) @binding(2) var<storage, read> B: array<f16>;
fn loadB(i: u32) -> f32 { return f32(B[i]); }
#else
#if B_F16
#if SK_HALF
@group(0) @binding(2) var<storage, read> B: array<vec4<f16>>;
fn loadB4(i: u32) -> vec4<f32> { return vec4<f32>(B[i]); }
#else
#if VEC4
@group(0) @binding(2) var<storage, read> B: array<vec2<u32>>;
fn loadB4(i: u32) -> vec4<f32> {
  let w = B[i];
  return vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y));
}
#else
@group(0) @binding(2) var<storage, read> B: array<u32>;
fn loadB(i: u32) -> f32 { return halfAt(B[i >> 1u], i); }
#endif
#endif
#else
#if VEC4
@group(0) @binding(2) var<storage, read> B: array<vec4<f32>>;
fn loadB4(i: u32) -> vec4<f32> { return B[i]; }
#else
@group(0) @binding(2) var<storage, read> B: array<f32>;
fn loadB(i: u32) -> f32 { return B[i]; }
#endif
#endif
#endif
@group(0) @binding(3) var<storage, read_write> C: array<f32>;
#if BIAS_F16
@group(0) @binding(4) var<storage, read> bias: array<u32>;
fn loadBias(i: u32) -> f32 { return halfAt(bias[i >> 1u], i); }
#else
@group(0) @binding(4) var<storage, read> bias: array<f32>;
fn loadBias(i: u32) -> f32 { return bias[i]; }
#endif

// LORA_W (inference over a LoRA adapter kept apart from its base): every output adds
// loraScale · Σ_j U[m, j]·LoraB[n, j] over the adapter's R columns, U = x·Aᵀ [M, R] computed
// before and LoraB the adapter's B [N, R]: the up-projection added as the matmul stores, with
// no dispatch (and no wait on one) of its own. LORA_W is a row's length in the arrays' elements:
// R/4 vec4s with LORA_VEC4 (R and both offsets multiples of 4), else R floats. A loop of a
// constant count, which a GPU's compiler unrolls (every load of a sum in flight at once) and
// SwiftShader need not (matmul_reg stores 64 outputs an invocation: unrolled there, its
// compile took a minute).
#if LORA_W
#if LORA_VEC4
@group(0) @binding(7) var<storage, read> LoraU: array<vec4<f32>>;
@group(0) @binding(8) var<storage, read> LoraB: array<vec4<f32>>;
const LORA_PER_ELEMENT = 4u;
fn loraProduct(u: u32, w: u32) -> f32 { return dot(LoraU[u], LoraB[w]); }
#else
@group(0) @binding(7) var<storage, read> LoraU: array<f32>;
@group(0) @binding(8) var<storage, read> LoraB: array<f32>;
const LORA_PER_ELEMENT = 1u;
fn loraProduct(u: u32, w: u32) -> f32 { return LoraU[u] * LoraB[w]; }
#endif
fn loraAt(m: u32, n: u32) -> f32 {
  let u = p.offU / LORA_PER_ELEMENT + m * {{LORA_W}}u;
  let w = p.offLoraB / LORA_PER_ELEMENT + n * {{LORA_W}}u;
  var s = 0.0;
  for (var j = 0u; j < {{LORA_W}}u; j++) { s += loraProduct(u + j, w + j); }
  return p.loraScale * s;
}
#endif

// A_SWIGLU: A holds fused gate|up rows and op(A) is silu(gate)·up (the down projection's
// input), computed as it is loaded: no dispatch and no buffer for the activation between.
#if A_SWIGLU
#if VEC4
fn loadA4(i: u32) -> vec4<f32> {
  let g = A[i];
  return g / (vec4<f32>(1.0) + exp(-g)) * A[i + (p.upA >> 2u)];
}
#else
fn loadA(i: u32) -> f32 {
  let g = A[i];
  return g / (1.0 + exp(-g)) * A[i + p.upA];
}
#endif
#else
#if VEC4
fn loadA4(i: u32) -> vec4<f32> { return A[i]; }
#else
fn loadA(i: u32) -> f32 { return A[i]; }
#endif
#endif

// A_NORM: op(A) is RMSNorm(A)·w, row by row (the input of the projection after a norm):
// C = rstd(row) · Σ_k A[row, k]·w[k]·B[k, ·], the row's Σ A² gathered in the same K loop,
// so the normalised rows need neither a dispatch nor a buffer. A is not transposed then.
#if A_NORM
#if NORM_F16
@group(0) @binding(5) var<storage, read> normW: array<u32>;
fn loadNorm(k: u32) -> f32 { return halfAt(normW[(p.offNorm + k) >> 1u], p.offNorm + k); }
#else
@group(0) @binding(5) var<storage, read> normW: array<f32>;
fn loadNorm(k: u32) -> f32 { return normW[p.offNorm + k]; }
#endif
fn rowScale(ss: f32) -> f32 { return inverseSqrt(ss / f32(p.K) + p.eps); }
#else
// Without the norm a row's sums are stored as accumulated (its Σ A², never gathered, unread).
fn rowScale(ss: f32) -> f32 { return 1.0; }
#endif
fn rowScale4(ss: vec4<f32>) -> vec4<f32> { return vec4<f32>(rowScale(ss.x), rowScale(ss.y), rowScale(ss.z), rowScale(ss.w)); }

fn baseA(b: u32) -> u32 { return p.offA + b * p.strideA; }
fn baseB(b: u32) -> u32 { return p.offB + b * p.strideB; }

// Element (m, k) of op(A) and (k, n) of op(B) as flat indices.
fn idxA(base: u32, m: u32, k: u32) -> u32 {
#if TRANS_A
  return base + k * p.ldA + m;
#else
  return base + m * p.ldA + k;
#endif
}
fn idxB(base: u32, k: u32, n: u32) -> u32 {
#if TRANS_B
  return base + n * p.K + k;
#else
  return base + k * p.N + n;
#endif
}

// A split-K-style workgroup's batch and range of K [lo, hi): with SK_SLICED wid.z is its slice
// of K (one batch), otherwise its batch (K whole).
fn kRange(z: u32) -> vec3<u32> {
#if SK_SLICED
  return vec3<u32>(0u, z * p.kSlice, min(p.K, z * p.kSlice + p.kSlice));
#else
  return vec3<u32>(z, 0u, p.K);
#endif
}

// Writes alpha·v (+ bias) (+ the LoRA term) (+ beta·C) to C[b, m, n].
fn storeOne(b: u32, m: u32, n: u32, acc: f32) {
  var v = p.alpha * acc;
  if (p.hasBias != 0u) { v += loadBias(p.offBias + n); }
#if LORA_W
  v += loraAt(m, n);
#endif
  let ci = p.offC + b * p.strideC + m * p.N + n;
  if (p.beta != 0.0) { v += p.beta * C[ci]; }
  C[ci] = v;
}

// Register tile per invocation: 8×8 outputs, scalar loads, unrolled with #for so the
// tile lives in registers (on SwiftShader 9x faster than loops, 2x faster than 4×4 tiles).
@compute @workgroup_size(WG_X, WG_Y, 1)
#if SUBGROUP
fn matmul_reg(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(subgroup_invocation_id) sid: u32) {
#else
fn matmul_reg(@builtin(global_invocation_id) gid: vec3<u32>) {
#endif
  let b = gid.z;
  let row0 = gid.y * 8u;
  let col0 = gid.x * 8u;
  // Out-of-range rows/columns (even whole invocations past the edge) are clamped onto the
  // last valid one so the loop runs without divergence; only the store is guarded. An
  // early return would put every load under an execution mask on SIMD CPU backends. Element (r, k) of op(A) is at rowOff_r + k·ksA.
#if TRANS_A
  let ksA = p.ldA;
#else
  let ksA = 1u;
#endif
#if TRANS_B
  let ksB = 1u;
#else
  let ksB = p.N;
#endif
#for i in 0..8
  let rowOff{{i}} = idxA(baseA(b), min(row0 + {{i}}u, p.M - 1u), 0u);
  let colOff{{i}} = idxB(baseB(b), 0u, min(col0 + {{i}}u, p.N - 1u));
#endfor
#if SUBGROUP
  // This lane's two rows of op(A): row0 + sid and row0 + 4 + sid.
  let rowLo = idxA(baseA(b), min(row0 + sid, p.M - 1u), 0u);
  let rowHi = idxA(baseA(b), min(row0 + 4u + sid, p.M - 1u), 0u);
#endif
  var acc: array<array<f32, 8>, 8>;
#for i in 0..8
  var ss{{i}} = 0.0;
#endfor
  let K4 = p.K & ~3u;
#if VEC4
  // Flat indices of the first element of each 4-wide group along M (TRANS_A) or N (!TRANS_B),
  // clamped like the rows and columns above (M, N ≥ 4 here).
  let aG0 = baseA(b) + min(row0, p.M - 4u);
  let aG1 = baseA(b) + min(row0 + 4u, p.M - 4u);
  let bG0 = baseB(b) + min(col0, p.N - 4u);
  let bG1 = baseB(b) + min(col0 + 4u, p.N - 4u);
#endif
  for (var k = 0u; k < K4; k += 4u) {
#if VEC4
#if TRANS_A
#if SUBGROUP
    // Lane sid loads the rows' values at k + sid.
    let mineL = loadA4((aG0 + (k + sid) * p.ldA) >> 2u);
    let mineH = loadA4((aG1 + (k + sid) * p.ldA) >> 2u);
#endif
#for t in 0..4
#if SUBGROUP
    let vAl{{t}} = subgroupBroadcast(mineL, {{t}}u);
    let vAh{{t}} = subgroupBroadcast(mineH, {{t}}u);
#else
    let vAl{{t}} = loadA4((aG0 + (k + {{t}}u) * p.ldA) >> 2u);
    let vAh{{t}} = loadA4((aG1 + (k + {{t}}u) * p.ldA) >> 2u);
#endif
    let ra0_{{t}} = vAl{{t}}.x; let ra1_{{t}} = vAl{{t}}.y; let ra2_{{t}} = vAl{{t}}.z; let ra3_{{t}} = vAl{{t}}.w;
    let ra4_{{t}} = vAh{{t}}.x; let ra5_{{t}} = vAh{{t}}.y; let ra6_{{t}} = vAh{{t}}.z; let ra7_{{t}} = vAh{{t}}.w;
#endfor
#else
#if SUBGROUP
    let mineLo = loadA4((rowLo + k) >> 2u);
    let mineHi = loadA4((rowHi + k) >> 2u);
    let vA0 = subgroupBroadcast(mineLo, 0u); let vA1 = subgroupBroadcast(mineLo, 1u);
    let vA2 = subgroupBroadcast(mineLo, 2u); let vA3 = subgroupBroadcast(mineLo, 3u);
    let vA4 = subgroupBroadcast(mineHi, 0u); let vA5 = subgroupBroadcast(mineHi, 1u);
    let vA6 = subgroupBroadcast(mineHi, 2u); let vA7 = subgroupBroadcast(mineHi, 3u);
#else
#for i in 0..8
    let vA{{i}} = loadA4((rowOff{{i}} + k) >> 2u);
#endfor
#endif
#for i in 0..8
    let ra{{i}}_0 = vA{{i}}.x; let ra{{i}}_1 = vA{{i}}.y; let ra{{i}}_2 = vA{{i}}.z; let ra{{i}}_3 = vA{{i}}.w;
#endfor
#endif
#if TRANS_B
#for j in 0..8
    let vB{{j}} = loadB4((colOff{{j}} + k) >> 2u);
    let b0_{{j}} = vB{{j}}.x; let b1_{{j}} = vB{{j}}.y; let b2_{{j}} = vB{{j}}.z; let b3_{{j}} = vB{{j}}.w;
#endfor
#else
#for t in 0..4
    let vBl{{t}} = loadB4((bG0 + (k + {{t}}u) * p.N) >> 2u);
    let vBh{{t}} = loadB4((bG1 + (k + {{t}}u) * p.N) >> 2u);
    let b{{t}}_0 = vBl{{t}}.x; let b{{t}}_1 = vBl{{t}}.y; let b{{t}}_2 = vBl{{t}}.z; let b{{t}}_3 = vBl{{t}}.w;
    let b{{t}}_4 = vBh{{t}}.x; let b{{t}}_5 = vBh{{t}}.y; let b{{t}}_6 = vBh{{t}}.z; let b{{t}}_7 = vBh{{t}}.w;
#endfor
#endif
#else
#for t in 0..4
#if TRANS_A
    let kA{{t}} = (k + {{t}}u) * ksA;
#else
    let kA{{t}} = k + {{t}}u;
#endif
#if TRANS_B
    let kB{{t}} = k + {{t}}u;
#else
    let kB{{t}} = (k + {{t}}u) * ksB;
#endif
#endfor
#if SUBGROUP
#for t in 0..4
    let lo{{t}} = loadA(rowLo + kA{{t}});
    let hi{{t}} = loadA(rowHi + kA{{t}});
    let ra0_{{t}} = subgroupBroadcast(lo{{t}}, 0u); let ra1_{{t}} = subgroupBroadcast(lo{{t}}, 1u);
    let ra2_{{t}} = subgroupBroadcast(lo{{t}}, 2u); let ra3_{{t}} = subgroupBroadcast(lo{{t}}, 3u);
    let ra4_{{t}} = subgroupBroadcast(hi{{t}}, 0u); let ra5_{{t}} = subgroupBroadcast(hi{{t}}, 1u);
    let ra6_{{t}} = subgroupBroadcast(hi{{t}}, 2u); let ra7_{{t}} = subgroupBroadcast(hi{{t}}, 3u);
#endfor
#else
#for i in 0..8
#for t in 0..4
    let ra{{i}}_{{t}} = loadA(rowOff{{i}} + kA{{t}});
#endfor
#endfor
#endif
#for t in 0..4
#for j in 0..8
    let b{{t}}_{{j}} = loadB(colOff{{j}} + kB{{t}});
#endfor
#endfor
#endif
#if A_NORM
#for t in 0..4
    let g{{t}} = loadNorm(k + {{t}}u);
#endfor
#endif
#for i in 0..8
#if A_NORM
    ss{{i}} += ra{{i}}_0 * ra{{i}}_0 + ra{{i}}_1 * ra{{i}}_1 + ra{{i}}_2 * ra{{i}}_2 + ra{{i}}_3 * ra{{i}}_3;
#for t in 0..4
    let a{{i}}_{{t}} = ra{{i}}_{{t}} * g{{t}};
#endfor
#else
#for t in 0..4
    let a{{i}}_{{t}} = ra{{i}}_{{t}};
#endfor
#endif
#endfor
#for i in 0..8
#for j in 0..8
    acc[{{i}}][{{j}}] += a{{i}}_0 * b0_{{j}} + a{{i}}_1 * b1_{{j}} + a{{i}}_2 * b2_{{j}} + a{{i}}_3 * b3_{{j}};
#endfor
#endfor
  }
#if !VEC4
  for (var k = K4; k < p.K; k++) {
#if A_NORM
    let g = loadNorm(k);
#endif
#for i in 0..8
#if A_NORM
    let ra{{i}} = loadA(rowOff{{i}} + k * ksA);
    ss{{i}} += ra{{i}} * ra{{i}};
    let a{{i}} = ra{{i}} * g;
#else
    let a{{i}} = loadA(rowOff{{i}} + k * ksA);
#endif
#endfor
#for j in 0..8
    let b{{j}} = loadB(colOff{{j}} + k * ksB);
#endfor
#for i in 0..8
#for j in 0..8
    acc[{{i}}][{{j}}] += a{{i}} * b{{j}};
#endfor
#endfor
  }
#endif
  // Unrolled too: indexing acc with a loop variable would move the whole tile to memory.
#for i in 0..8
  let rs{{i}} = rowScale(ss{{i}});
#for j in 0..8
  if (row0 + {{i}}u < p.M && col0 + {{j}}u < p.N) { storeOne(b, row0 + {{i}}u, col0 + {{j}}u, acc[{{i}}][{{j}}] * rs{{i}}); }
#endfor
#endfor
}

#if !VEC4
// Workgroup-memory tiles: (4·WG_Y)×TILE_K of op(A) and TILE_K×(4·WG_X) of op(B),
// with WG_X = WG_Y = 16.
const TILE = 64u;
const TILE_K = 16u;
var<workgroup> tileA: array<vec4<f32>, 256>; // [k][m/4]: 16 × 16 vec4
var<workgroup> tileB: array<vec4<f32>, 256>; // [k][n/4]: 16 × 16 vec4

fn safeA(base: u32, m: u32, k: u32) -> f32 {
  if (m < p.M && k < p.K) { return loadA(idxA(base, m, k)); }
  return 0.0;
}
fn safeB(base: u32, k: u32, n: u32) -> f32 {
  if (k < p.K && n < p.N) { return loadB(idxB(base, k, n)); }
  return 0.0;
}
// The norm's weight at k, 0 past the end (where the tile's A and B are 0 too).
#if A_NORM
fn safeNorm(k: u32) -> f32 {
  if (k < p.K) { return loadNorm(k); }
  return 0.0;
}
#endif

@compute @workgroup_size(16, 16, 1)
fn matmul_tiled(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let b = wid.z;
  let tileRow = wid.y * TILE;
  let tileCol = wid.x * TILE;
  let bA = baseA(b);
  let bB = baseB(b);
  let t = lid.y * 16u + lid.x; // 0..255
  var acc: array<vec4<f32>, 4>;
  // A_NORM: Σ A² of this invocation's four rows, from the raw tile of A; w scales B's tile.
  var ss = vec4<f32>(0.0);
  for (var k0 = 0u; k0 < p.K; k0 += TILE_K) {
    // Each invocation loads one vec4 of each tile: k = t / 16, 4 rows/cols at (t % 16) * 4.
    let kk = t >> 4u;
    let q = (t & 15u) * 4u;
    tileA[t] = vec4<f32>(safeA(bA, tileRow + q, k0 + kk), safeA(bA, tileRow + q + 1u, k0 + kk),
                         safeA(bA, tileRow + q + 2u, k0 + kk), safeA(bA, tileRow + q + 3u, k0 + kk));
    tileB[t] = vec4<f32>(safeB(bB, k0 + kk, tileCol + q), safeB(bB, k0 + kk, tileCol + q + 1u),
                         safeB(bB, k0 + kk, tileCol + q + 2u), safeB(bB, k0 + kk, tileCol + q + 3u));
#if A_NORM
    tileB[t] *= safeNorm(k0 + kk);
#endif
    workgroupBarrier();
#for k in 0..16
    let a{{k}} = tileA[{{k}}u * 16u + lid.y];
    let b{{k}} = tileB[{{k}}u * 16u + lid.x];
#if A_NORM
    ss += a{{k}} * a{{k}};
#endif
    acc[0] += b{{k}} * a{{k}}.x;
    acc[1] += b{{k}} * a{{k}}.y;
    acc[2] += b{{k}} * a{{k}}.z;
    acc[3] += b{{k}} * a{{k}}.w;
#endfor
    workgroupBarrier();
  }
  let row0 = tileRow + lid.y * 4u;
  let col0 = tileCol + lid.x * 4u;
  let rs = rowScale4(ss);
  for (var i = 0u; i < 4u; i++) {
    if (row0 + i >= p.M) { break; }
    for (var j = 0u; j < 4u; j++) {
      if (col0 + j >= p.N) { break; }
      storeOne(b, row0 + i, col0 + j, acc[i][j] * rs[i]);
    }
  }
}

@compute @workgroup_size(WG_X, 1, 1)
fn matmul_gemv(@builtin(global_invocation_id) gid: vec3<u32>) {
  let b = gid.z;
  let n = gid.x;
  let row0 = gid.y * 4u;
  if (n >= p.N || row0 >= p.M) { return; }
  let r = min(vec4<u32>(row0, row0 + 1u, row0 + 2u, row0 + 3u), vec4<u32>(p.M - 1u));
  let bA = baseA(b);
  let bB = baseB(b);
  var acc = vec4<f32>(0.0);
  var ss = vec4<f32>(0.0);
  for (var k = 0u; k < p.K; k++) {
    let a = vec4<f32>(loadA(idxA(bA, r.x, k)), loadA(idxA(bA, r.y, k)), loadA(idxA(bA, r.z, k)), loadA(idxA(bA, r.w, k)));
#if A_NORM
    ss += a * a;
    acc += a * (loadB(idxB(bB, k, n)) * loadNorm(k));
#else
    acc += a * loadB(idxB(bB, k, n));
#endif
  }
  let rs = rowScale4(ss);
  for (var i = 0u; i < 4u; i++) {
    if (row0 + i >= p.M) { break; }
    storeOne(b, row0 + i, n, acc[i] * rs[i]);
  }
}
#endif
#if VEC4
// gemv reading vec4s along K, for x·Wᵀ (A row-major [M, K], B a linear weight [N, K]: the
// decode step's shape): a 4×4 tile per invocation, each loaded vec4 serving four dot
// products. On SwiftShader 1.5–8× faster than one column × 4 rows at M ≤ 8.
@compute @workgroup_size(WG_X, 1, 1)
fn matmul_gemv(@builtin(global_invocation_id) gid: vec3<u32>) {
  let b = gid.z;
  let n0 = gid.x * 4u;
  let m0 = gid.y * 4u;
  if (n0 >= p.N || m0 >= p.M) { return; }
  let K4 = p.K / 4u;
  let ldA4 = p.ldA / 4u;
  let bA = baseA(b) >> 2u;
  let bB = baseB(b) >> 2u;
  // Rows and columns past the edge are clamped onto the last one: computed, never stored.
#for i in 0..4
  let a{{i}} = bA + min(m0 + {{i}}u, p.M - 1u) * ldA4;
  let w{{i}} = bB + min(n0 + {{i}}u, p.N - 1u) * K4;
  var c{{i}} = vec4<f32>(0.0);
  var ss{{i}} = 0.0;
#endfor
  for (var k = 0u; k < K4; k++) {
#if A_NORM
    let g = vec4<f32>(loadNorm(4u * k), loadNorm(4u * k + 1u), loadNorm(4u * k + 2u), loadNorm(4u * k + 3u));
#endif
#for j in 0..4
    let vw{{j}} = loadB4(w{{j}} + k);
#endfor
#for i in 0..4
#if A_NORM
    let rx{{i}} = loadA4(a{{i}} + k);
    ss{{i}} += dot(rx{{i}}, rx{{i}});
    let vx{{i}} = rx{{i}} * g;
#else
    let vx{{i}} = loadA4(a{{i}} + k);
#endif
    c{{i}} += vec4<f32>(dot(vx{{i}}, vw0), dot(vx{{i}}, vw1), dot(vx{{i}}, vw2), dot(vx{{i}}, vw3));
#endfor
  }
#for i in 0..4
  let rs{{i}} = rowScale(ss{{i}});
#endfor
  for (var j = 0u; j < 4u; j++) {
    if (n0 + j >= p.N) { break; }
#for i in 0..4
    if (m0 + {{i}}u < p.M) { storeOne(b, m0 + {{i}}u, n0 + j, c{{i}}[j] * rs{{i}}); }
#endfor
  }
}
#endif

// SK_SLICED (matmul_splitk, matmul_big): K cut into kSlices slices of kSlice, a workgroup per
// slice (wid.z, one batch, no norm: a row's Σ A² needs its whole K), each writing its raw sums
// to SkPart [slice, M, N]; matmul_splitk_reduce adds them in slice order and stores alpha, bias
// and beta.
#if SK_SLICED
@group(0) @binding(6) var<storage, read_write> SkPart: array<f32>;

@compute @workgroup_size(64, 1, 1)
fn matmul_splitk_reduce(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.y * nwg.x + wid.x) * 64u + lid;
  let size = p.M * p.N;
  if (i >= size) { return; }
  var total = 0.0;
  for (var s = 0u; s < p.kSlices; s++) { total += SkPart[s * size + i]; }
  storeOne(0u, i / p.N, i % p.N, total);
}
#endif

// matmul_splitk: decode-sized M on GPUs. A workgroup computes SK_ROWS rows × 4 columns of C,
// its SK_WG invocations striding K together: for x·Wᵀ (VEC4) consecutive invocations read
// consecutive vec4s of a weight row, so every load is coalesced, each weight vec4 serving
// SK_ROWS rows and each vec4 of A four columns. The partial sums are then reduced with
// subgroupAdd and one slot per subgroup (SUBGROUP), or by a tree in workgroup memory.
// N = 896 makes 224 workgroups, where matmul_gemv's 256 columns per workgroup make 4: enough
// to keep every compute unit of a GPU streaming weights, which bounds a decode step.
// Without VEC4 (any transpose, any alignment) the invocations stride K one element at a time.
// With SK_SLICED (above) a long K at few rows (a decode step's down projection, K = 4,864
// over N = 896 at one row: 224 workgroups) spreads over as many workgroups again per slice.
// Compiled only where SK_ROWS is defined (the modules of the other variants leave it out).
#if SK_ROWS
const SK_WG = 64u;
// The rows of a workgroup: the SK_ROWS define (which unrolls them) as a number.
override SK_ROWS_U: u32 = 1u;
// Values reduced per workgroup: SK_ROWS × 4 sums, then with A_NORM each row's Σ A².
override SK_VALUES: u32 = 4u;
// Partial sums kept per value: one per invocation (tree), or one per subgroup.
override SK_SLOTS: u32 = 64u;
var<workgroup> skPartial: array<f32, SK_SLOTS * SK_VALUES>;
#if SUBGROUP
// Slots handed to subgroups in the order they arrive: WebGPU does not promise which
// invocations form a subgroup, so a slot cannot be derived from local_invocation_index.
var<workgroup> skSlotsUsed: atomic<u32>;
#endif

@compute @workgroup_size(SK_WG, 1, 1)
#if SUBGROUP
fn matmul_splitk(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
                 @builtin(subgroup_invocation_id) sid: u32) {
#else
fn matmul_splitk(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
#endif
  let range = kRange(wid.z);
  let b = range.x;
  let kLo = range.y;
  let kHi = range.z;
  let n0 = wid.x * 4u;
  let m0 = wid.y * SK_ROWS_U;
  // Rows and columns past the edge are clamped onto the last one: computed, never stored.
#for r in 0..SK_ROWS
  var ss{{r}} = 0.0;
#for c in 0..4
  var acc{{r}}_{{c}} = 0.0;
#endfor
#endfor
#if VEC4
  let K4 = p.K / 4u;
  let ldA4 = p.ldA / 4u;
  let bA = baseA(b) >> 2u;
  let bB = baseB(b) >> 2u;
#for c in 0..4
  let w{{c}} = bB + min(n0 + {{c}}u, p.N - 1u) * K4;
#endfor
#for r in 0..SK_ROWS
  let a{{r}} = bA + min(m0 + {{r}}u, p.M - 1u) * ldA4;
#endfor
  for (var k = kLo / 4u + lid; k < kHi / 4u; k += SK_WG) {
#if A_NORM
    let g = vec4<f32>(loadNorm(4u * k), loadNorm(4u * k + 1u), loadNorm(4u * k + 2u), loadNorm(4u * k + 3u));
#endif
#for c in 0..4
#if SK_HALF
    let vw{{c}} = B[w{{c}} + k];
#else
    let vw{{c}} = loadB4(w{{c}} + k);
#endif
#endfor
#for r in 0..SK_ROWS
#if A_NORM
    let rx{{r}} = loadA4(a{{r}} + k);
    ss{{r}} += dot(rx{{r}}, rx{{r}});
    let vx{{r}} = rx{{r}} * g;
#else
    let vx{{r}} = loadA4(a{{r}} + k);
#endif
#if SK_HALF
    let hx{{r}} = vec4<f16>(vx{{r}});
#for c in 0..4
    acc{{r}}_{{c}} += f32(dot(hx{{r}}, vw{{c}}));
#endfor
#else
#for c in 0..4
    acc{{r}}_{{c}} += dot(vx{{r}}, vw{{c}});
#endfor
#endif
#endfor
  }
#else
  let bA = baseA(b);
  let bB = baseB(b);
  for (var k = kLo + lid; k < kHi; k += SK_WG) {
#if A_NORM
    let g = loadNorm(k);
#endif
#for c in 0..4
    let vw{{c}} = loadB(idxB(bB, k, min(n0 + {{c}}u, p.N - 1u)));
#endfor
#for r in 0..SK_ROWS
#if A_NORM
    let rx{{r}} = loadA(idxA(bA, min(m0 + {{r}}u, p.M - 1u), k));
    ss{{r}} += rx{{r}} * rx{{r}};
    let vx{{r}} = rx{{r}} * g;
#else
    let vx{{r}} = loadA(idxA(bA, min(m0 + {{r}}u, p.M - 1u), k));
#endif
#for c in 0..4
    acc{{r}}_{{c}} += vx{{r}} * vw{{c}};
#endfor
#endfor
  }
#endif
  // Value r·4 + c is C[m0 + r, n0 + c]; value SK_ROWS·4 + r is row r's Σ A² (A_NORM).
#if SUBGROUP
#for r in 0..SK_ROWS
#for c in 0..4
  let t{{r}}_{{c}} = subgroupAdd(acc{{r}}_{{c}});
#endfor
#if A_NORM
  let tss{{r}} = subgroupAdd(ss{{r}});
#endif
#endfor
  if (sid == 0u) {
    let at = atomicAdd(&skSlotsUsed, 1u) * SK_VALUES;
#for r in 0..SK_ROWS
#for c in 0..4
    skPartial[at + {{r}}u * 4u + {{c}}u] = t{{r}}_{{c}};
#endfor
#if A_NORM
    skPartial[at + SK_ROWS_U * 4u + {{r}}u] = tss{{r}};
#endif
#endfor
  }
  workgroupBarrier();
  let slots = atomicLoad(&skSlotsUsed);
#else
  let at = lid * SK_VALUES;
#for r in 0..SK_ROWS
#for c in 0..4
  skPartial[at + {{r}}u * 4u + {{c}}u] = acc{{r}}_{{c}};
#endfor
#if A_NORM
  skPartial[at + SK_ROWS_U * 4u + {{r}}u] = ss{{r}};
#endif
#endfor
  for (var stride = SK_WG / 2u; stride > 0u; stride /= 2u) {
    workgroupBarrier();
    if (lid < stride) {
      for (var v = 0u; v < SK_VALUES; v++) { skPartial[lid * SK_VALUES + v] += skPartial[(lid + stride) * SK_VALUES + v]; }
    }
  }
  workgroupBarrier();
  let slots = 1u;
#endif
  // One invocation per output: C[m0 + lid / 4, n0 + lid % 4].
  let r = lid / 4u;
  let m = m0 + r;
  let n = n0 + (lid & 3u);
  if (lid < SK_ROWS_U * 4u && m < p.M && n < p.N) {
    var total = 0.0;
    var ss = 0.0;
    for (var s = 0u; s < slots; s++) {
      total += skPartial[s * SK_VALUES + lid];
#if A_NORM
      ss += skPartial[s * SK_VALUES + SK_ROWS_U * 4u + r];
#endif
    }
#if SK_SLICED
    SkPart[(wid.z * p.M + m) * p.N + n] = total;
#else
    storeOne(b, m, n, total * rowScale(ss));
#endif
  }
}
#endif

// matmul_rows: rollout batches on GPUs (x·Wᵀ at 9-64 rows, RL's decode steps). A workgroup of 64
// owns RW_COLS columns × RW_ROWS_U rows (the next power of two of M, 8 to 64): each K step of
// RW_K stages a RW_K × RW_COLS tile of op(B) and a RW_ROWS_U × RW_K tile of op(A) in workgroup
// memory, read along the stored operand's contiguous dimension (K for x·Wᵀ), so the weights
// cross the memory bus once per step for up to 64 rows, where split-K reads them again for
// every 8. Invocation t computes RW_RPI rows × 4 columns (row group t / 8, column group t % 8).
// Loads past an edge read a clamped index and stage 0. With SK_SLICED a K too long for its
// launch is cut into slices as in split-K (o_proj and down at 32 rows: 28 column tiles).
// Compiled only where RW_RPI is defined.
#if RW_RPI
const RW_WG = 64u;
const RW_COLS = 32u;
const RW_K = 32u;
// Rows of a workgroup and of an invocation: the RW_RPI define (which unrolls them) as numbers.
override RW_ROWS_U: u32 = 8u;
override RW_RPI_U: u32 = 1u;
var<workgroup> rwW: array<f32, RW_K * RW_COLS>;
var<workgroup> rwX: array<f32, 64u * RW_K>;

@compute @workgroup_size(RW_WG, 1, 1)
fn matmul_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let range = kRange(wid.z);
  let b = range.x;
  let kLo = range.y;
  let kHi = range.z;
  let n0 = wid.x * RW_COLS;
  let m0 = wid.y * RW_ROWS_U;
  let bA = baseA(b);
  let bB = baseB(b);
  let cg = lid % 8u;
  let rg = lid / 8u;
  // With A_NORM the norm's weight scales the staged weights and each invocation sums its own
  // rows' x² from the staged x as it multiplies (every invocation walks all of K for its rows:
  // no reduction, and the norm prologue never slices).
#for r in 0..RW_RPI
  var ss{{r}} = 0.0;
#for c in 0..4
  var acc{{r}}_{{c}} = 0.0;
#endfor
#endfor
  for (var k0 = kLo; k0 < kHi; k0 += RW_K) {
    for (var e = lid; e < RW_K * RW_COLS; e += RW_WG) {
#if TRANS_B
      let kk = e % RW_K;
      let j = e / RW_K;
#else
      let kk = e / RW_COLS;
      let j = e % RW_COLS;
#endif
      let k = min(k0 + kk, p.K - 1u);
#if A_NORM
      let w = loadB(idxB(bB, k, min(n0 + j, p.N - 1u))) * loadNorm(k);
#else
      let w = loadB(idxB(bB, k, min(n0 + j, p.N - 1u)));
#endif
      rwW[kk * RW_COLS + j] = select(0.0, w, k0 + kk < kHi);
    }
    for (var e = lid; e < RW_ROWS_U * RW_K; e += RW_WG) {
#if TRANS_A
      let kk = e / RW_ROWS_U;
      let r = e % RW_ROWS_U;
#else
      let kk = e % RW_K;
      let r = e / RW_K;
#endif
      let x = loadA(idxA(bA, min(m0 + r, p.M - 1u), min(k0 + kk, p.K - 1u)));
      rwX[r * RW_K + kk] = select(0.0, x, k0 + kk < kHi);
    }
    workgroupBarrier();
    for (var kk = 0u; kk < RW_K; kk++) {
      let at = kk * RW_COLS + cg * 4u;
      let w = vec4<f32>(rwW[at], rwW[at + 1u], rwW[at + 2u], rwW[at + 3u]);
#for r in 0..RW_RPI
      let x{{r}} = rwX[(rg * RW_RPI_U + {{r}}u) * RW_K + kk];
#if A_NORM
      ss{{r}} += x{{r}} * x{{r}};
#endif
      acc{{r}}_0 += x{{r}} * w.x;
      acc{{r}}_1 += x{{r}} * w.y;
      acc{{r}}_2 += x{{r}} * w.z;
      acc{{r}}_3 += x{{r}} * w.w;
#endfor
    }
    workgroupBarrier();
  }
#for r in 0..RW_RPI
  {
    let m = m0 + rg * RW_RPI_U + {{r}}u;
    if (m < p.M) {
#for c in 0..4
      let col{{c}} = n0 + cg * 4u + {{c}}u;
      if (col{{c}} < p.N) {
#if SK_SLICED
        SkPart[(wid.z * p.M + m) * p.N + col{{c}}] = acc{{r}}_{{c}};
#else
        storeOne(b, m, col{{c}}, acc{{r}}_{{c}} * rowScale(ss{{r}}));
#endif
      }
#endfor
    }
  }
#endfor
}
#endif

// matmul_big: training-sized matmuls on GPUs. A workgroup of 16×16 computes a 128×128 tile of C,
// 8×8 per invocation (rows ty·4 + i and 64 + ty·4 + i, columns tx·4 + j and 64 + tx·4 + j).
// Each K step of BIG_K stages a 128×BIG_K slice of op(A) and a BIG_K×128 slice of op(B) in
// workgroup memory, one vec4 per invocation and operand, read along the stored operand's
// contiguous dimension whatever the transpose: along K for x·Wᵀ (both operands), along M or N
// for xᵀ·dy and x·W, so consecutive invocations read consecutive 16 bytes. Each quad is stored
// whole as it was read (invocation t writes vec4 t: no component writes, which some backends
// turn into racing read-modify-writes of the whole vector): a slice read along K is laid out
// [row][k], one read along M or N [k][row / 4], and bigFragA/B hand out 4 k-steps of 4 rows
// either way. Two buffers: the next slice is loaded into registers while the current one is
// multiplied, then stored into the other buffer, one barrier per step. Loads past an edge
// read a clamped index and are replaced by 0 (no divergent branch); with VEC4 (the contiguous
// dimensions and offsets multiples of 4) every load is one vec4, otherwise four scalars.
// Registers: 64 accumulators, 4×4×4 operands of a 4-step chunk, the staged quads; 16 KiB of
// workgroup memory (WebGPU's default limit). With SK_SLICED (tiled-128-splitk) a workgroup
// covers one slice of K (wid.z) and writes its raw tile to SkPart: a long K over few tiles
// (Qwen2.5-0.5B's LM head backward at 1,024 tokens: K = 151,936 on 8×7 tiles, where an H100
// has 132 compute units) then fills the GPU.
const BIG_K = 8u;
// Per buffer: 256 vec4 (128 × BIG_K values).
const BIG_BUF = 256u;
#if HALF_MATH
alias BigVec = vec4<f16>;
alias BigMat = mat4x4<f16>;
#else
alias BigVec = vec4<f32>;
alias BigMat = mat4x4<f32>;
#endif
var<workgroup> bigA: array<BigVec, 512>;
var<workgroup> bigB: array<BigVec, 512>;

// Four consecutive elements (r, c..c+3) of stored A (rows × cols, row stride p.ldA), 0 past
// either edge.
fn quadA(base: u32, r: u32, c: u32, rows: u32, cols: u32) -> vec4<f32> {
  let row = base + min(r, rows - 1u) * p.ldA;
#if VEC4
  // cols is a multiple of 4: a group lies wholly inside or wholly past the edge.
  return select(vec4<f32>(0.0), loadA4((row + min(c, cols - 4u)) >> 2u), r < rows && c < cols);
#else
  let cs = vec4<u32>(c, c + 1u, c + 2u, c + 3u);
  let cc = min(cs, vec4<u32>(cols - 1u));
  let v = vec4<f32>(loadA(row + cc.x), loadA(row + cc.y), loadA(row + cc.z), loadA(row + cc.w));
  return select(vec4<f32>(0.0), v, vec4<bool>(r < rows) & (cs < vec4<u32>(cols)));
#endif
}

// The same for stored B (rows × cols read, row stride ld).
fn quadB(base: u32, r: u32, c: u32, rows: u32, cols: u32, ld: u32) -> vec4<f32> {
  let row = base + min(r, rows - 1u) * ld;
#if VEC4
  return select(vec4<f32>(0.0), loadB4((row + min(c, cols - 4u)) >> 2u), r < rows && c < cols);
#else
  let cs = vec4<u32>(c, c + 1u, c + 2u, c + 3u);
  let cc = min(cs, vec4<u32>(cols - 1u));
  let v = vec4<f32>(loadB(row + cc.x), loadB(row + cc.y), loadB(row + cc.z), loadB(row + cc.w));
  return select(vec4<f32>(0.0), v, vec4<bool>(r < rows) & (cs < vec4<u32>(cols)));
#endif
}

// Invocation t's quad of the slice at k0. Read along K (!TRANS_A): tile row t / 2, k = k0 +
// (t % 2)·4 ..; along M (TRANS_A): k = k0 + t / 32, tile rows (t % 32)·4 ...
fn bigLoadA(base: u32, t: u32, tileRow: u32, k0: u32, kEnd: u32) -> vec4<f32> {
#if TRANS_A
  return quadA(base, k0 + (t >> 5u), tileRow + (t & 31u) * 4u, kEnd, p.M);
#else
  return quadA(base, tileRow + (t >> 1u), k0 + (t & 1u) * 4u, p.M, kEnd);
#endif
}

// Along K (TRANS_B): tile column t / 2, k = k0 + (t % 2)·4 ..; along N: k = k0 + t / 32,
// columns (t % 32)·4 ... With A_NORM the norm's weight scales op(B)'s row k (op(A)·diag(w)·op(B)).
// Both read K up to kEnd (the end of the workgroup's slice; p.K unsliced); B's rows stay p.K long.
fn bigLoadB(base: u32, t: u32, tileCol: u32, k0: u32, kEnd: u32) -> vec4<f32> {
#if TRANS_B
  let k = k0 + (t & 1u) * 4u;
  let v = quadB(base, tileCol + (t >> 1u), k, p.N, kEnd, p.K);
#if A_NORM
  let kk = min(vec4<u32>(k, k + 1u, k + 2u, k + 3u), vec4<u32>(p.K - 1u));
  return v * vec4<f32>(loadNorm(kk.x), loadNorm(kk.y), loadNorm(kk.z), loadNorm(kk.w));
#else
  return v;
#endif
#else
  let k = k0 + (t >> 5u);
  let v = quadB(base, k, tileCol + (t & 31u) * 4u, kEnd, p.N, p.N);
#if A_NORM
  return v * loadNorm(min(k, p.K - 1u));
#else
  return v;
#endif
#endif
}

// Steps kq·4 .. kq·4 + 3 of the 4 tile rows of op(A) at 4·r4 .. 4·r4 + 3 (column j: step j).
fn bigFragA(cur: u32, kq: u32, r4: u32) -> BigMat {
#if TRANS_A
  let at = cur + kq * 4u * 32u + r4;
  return BigMat(bigA[at], bigA[at + 32u], bigA[at + 64u], bigA[at + 96u]);
#else
  let at = cur + r4 * 8u + kq;
  return transpose(BigMat(bigA[at], bigA[at + 2u], bigA[at + 4u], bigA[at + 6u]));
#endif
}

// The same for the 4 tile columns of op(B) at 4·c4 ...
fn bigFragB(cur: u32, kq: u32, c4: u32) -> BigMat {
#if TRANS_B
  let at = cur + c4 * 8u + kq;
  return transpose(BigMat(bigB[at], bigB[at + 2u], bigB[at + 4u], bigB[at + 6u]));
#else
  let at = cur + kq * 4u * 32u + c4;
  return BigMat(bigB[at], bigB[at + 32u], bigB[at + 64u], bigB[at + 96u]);
#endif
}

@compute @workgroup_size(16, 16, 1)
fn matmul_big(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
#if SK_SLICED
  let b = 0u;
  let kBegin = wid.z * p.kSlice;
  let kEnd = min(p.K, kBegin + p.kSlice);
#else
  let b = wid.z;
  let kBegin = 0u;
  let kEnd = p.K;
#endif
  let tileRow = wid.y * 128u;
  let tileCol = wid.x * 128u;
  let bA = baseA(b);
  let bB = baseB(b);
  let tx = lid.x;
  let ty = lid.y;
  let t = ty * 16u + tx;
#for i in 0..4
  var lo{{i}}_0 = vec4<f32>(0.0);
  var lo{{i}}_1 = vec4<f32>(0.0);
  var hi{{i}}_0 = vec4<f32>(0.0);
  var hi{{i}}_1 = vec4<f32>(0.0);
#endfor
  // A_NORM: Σ A² of the rows ty·4 + i (ssLo) and 64 + ty·4 + i (ssHi), from the staged raw A.
  var ssLo = vec4<f32>(0.0);
  var ssHi = vec4<f32>(0.0);
  bigA[t] = BigVec(bigLoadA(bA, t, tileRow, kBegin, kEnd));
  bigB[t] = BigVec(bigLoadB(bB, t, tileCol, kBegin, kEnd));
  workgroupBarrier();
  // A slice past K (none is, as slices are planned) would sum nothing and write zeros.
  let steps = (select(0u, kEnd - kBegin, kEnd > kBegin) + BIG_K - 1u) / BIG_K;
  for (var s = 0u; s < steps; s++) {
    let cur = (s & 1u) * BIG_BUF;
    // The next slice's loads are issued before the multiply so that they are in flight during
    // it (past the end they read clamped indices and are never used).
    let nextA = bigLoadA(bA, t, tileRow, kBegin + (s + 1u) * BIG_K, kEnd);
    let nextB = bigLoadB(bB, t, tileCol, kBegin + (s + 1u) * BIG_K, kEnd);
#for q in 0..2
    {
      let fa0 = bigFragA(cur, {{q}}u, ty);
      let fa1 = bigFragA(cur, {{q}}u, 16u + ty);
      let fb0 = bigFragB(cur, {{q}}u, tx);
      let fb1 = bigFragB(cur, {{q}}u, 16u + tx);
#for j in 0..4
      {
        let a0 = fa0[{{j}}];
        let a1 = fa1[{{j}}];
        let b0 = fb0[{{j}}];
        let b1 = fb1[{{j}}];
#if A_NORM
        ssLo += vec4<f32>(a0) * vec4<f32>(a0);
        ssHi += vec4<f32>(a1) * vec4<f32>(a1);
#endif
#for i in 0..4
        lo{{i}}_0 += vec4<f32>(a0[{{i}}] * b0);
        lo{{i}}_1 += vec4<f32>(a0[{{i}}] * b1);
        hi{{i}}_0 += vec4<f32>(a1[{{i}}] * b0);
        hi{{i}}_1 += vec4<f32>(a1[{{i}}] * b1);
#endfor
      }
#endfor
    }
#endfor
    let next = BIG_BUF - cur;
    bigA[next + t] = BigVec(nextA);
    bigB[next + t] = BigVec(nextB);
    workgroupBarrier();
  }
  let rsLo = rowScale4(ssLo);
  let rsHi = rowScale4(ssHi);
  let c0 = tileCol + tx * 4u;
  let c1 = c0 + 64u;
  // Sliced: the slice's raw tile (SkPart's slice wid.z), unsliced: C of batch b.
  let slot = wid.z;
#for i in 0..4
  bigStoreRow(slot, tileRow + ty * 4u + {{i}}u, c0, c1, lo{{i}}_0 * rsLo[{{i}}], lo{{i}}_1 * rsLo[{{i}}]);
  bigStoreRow(slot, tileRow + 64u + ty * 4u + {{i}}u, c0, c1, hi{{i}}_0 * rsHi[{{i}}], hi{{i}}_1 * rsHi[{{i}}]);
#endfor
}

// Row m of an invocation's outputs: columns c0..c0+3 and c1..c1+3, of C's batch `slot`, or
// (SK_SLICED) raw into SkPart's slice `slot`.
fn bigStoreRow(slot: u32, m: u32, c0: u32, c1: u32, v0: vec4<f32>, v1: vec4<f32>) {
  if (m >= p.M) { return; }
  for (var j = 0u; j < 4u; j++) {
#if SK_SLICED
    if (c0 + j < p.N) { SkPart[(slot * p.M + m) * p.N + c0 + j] = v0[j]; }
    if (c1 + j < p.N) { SkPart[(slot * p.M + m) * p.N + c1 + j] = v1[j]; }
#else
    if (c0 + j < p.N) { storeOne(slot, m, c0 + j, v0[j]); }
    if (c1 + j < p.N) { storeOne(slot, m, c1 + j, v1[j]); }
#endif
  }
}

// matmul_mma: C = alpha·op(A)·Wᵀ (+ bias) (+ beta·C) for an f16 W [N, K] (a linear layer's
// weight as stored), or without TRANS_B alpha·op(A)·W for an f16 W [K, N] (a layer's weight
// in the backward pass: dX = dY·W), and f32 A [M, K], on subgroup matrices of MMA_M×MMA_K (A),
// MMA_K×MMA_N (W) and an f32 MMA_M×MMA_N result: the adapter's own configuration, the
// products in its matrix units at their rate, where the vector kernels issue one FMA per
// invocation per cycle. A workgroup computes MM_ROWS rows × MM_COLS columns of C: four
// subgroups, one column block of MMA_N each, all sharing the rows of op(A) staged in
// workgroup memory as halves (the prologue applied as they are staged); W's blocks are loaded
// straight from storage (TRANS_B: column-major with stride K, a block's columns are rows of
// W; else row-major with stride N). The
// results go through workgroup memory, so that the edges and the epilogue (alpha, bias, beta,
// or SK_SLICED's raw sums) are ordinary guarded stores. With A_NORM each row is normalised
// before it is rounded to half (a hidden state's raw values can pass f16's range; its
// normalised ones do not), its rstd summed over all of K by MM_WG / MM_ROWS invocations in a
// fixed order, so a slice of K normalises as K whole does. With A_SCALE (an A whose rows lie
// outside f16's range, such as gradients, whose small values half would flush to zero) each
// row is multiplied by a power of two that brings its largest magnitude over the workgroup's
// range of K into [2^14, 2^15) before it is rounded, and its results by the inverse after
// the products: both exact, so each product keeps half's 11 bits whatever the row's scale.
// Deterministic: no atomics, each output summed in one order. Needs K a multiple of MMA_K and
// N of MMA_N (whole blocks), W's offset and its row length (K with TRANS_B, else N) multiples
// of 8 (16-byte aligned block loads).
#if MMA
const MM_M = {{MMA_M}}u;
const MM_N = {{MMA_N}}u;
const MM_K = {{MMA_K}}u;
const MM_ROWS = MM_M * {{MMA_TM}}u;
// Subgroups that multiply, one column block each; others (an adapter whose subgroups are
// smaller than its subgroupMaxSize) only stage.
const MM_SG = 4u;
const MM_COLS = MM_SG * MM_N;
// Elements of K staged a step: a multiple of MMA_K (pickSubgroupMatrix takes a K that divides 64).
const MM_KT = 64u;
// Invocations: four subgroups of the adapter's subgroupMaxSize.
override MM_WG: u32 = 128u;
var<workgroup> mmA: array<f16, MM_ROWS * MM_KT>;
var<workgroup> mmC: array<f32, MM_ROWS * MM_COLS>;
#if A_NORM
var<workgroup> mmSum: array<f32, MM_WG>;
var<workgroup> mmScale: array<f32, MM_ROWS>;
#endif
#if A_SCALE
var<workgroup> mmMax: array<f32, MM_WG>;
// Each staged row's power of two (the exponent of its scale).
var<workgroup> mmExp: array<i32, MM_ROWS>;
#endif

#if MMA_EMULATED
// MMA_EMULATED: the four subgroup matrix builtins matmul_mma calls, as the WGSL proposal
// defines them, in ordinary invocations: a subgroup is MM_WG / MM_SG consecutive invocations.
// A loaded matrix is where its block lies (offset and stride), read when it is multiplied (the
// kernel changes neither operand in between); a result is a lane's share, its elements
// e ≡ lane (mod the subgroup's width), each product exact in f32 (two halves' is) and summed
// in f32 along K. Only the lines of the builtins differ, so a device without subgroup matrices
// checks the rest of the kernel (staging, prologues, slices, offsets, epilogue) against
// float64; the builtins themselves are checked on the card (the GPU report's mmaCheck). Far
// slower than any other variant: tests only, never a tuning candidate.
alias MmLeft = vec2<u32>;
// Offset, then the distances between consecutive n and consecutive k.
alias MmRight = vec3<u32>;
alias MmResult = array<f32, MM_M * MM_N>;
fn mmLanes() -> u32 { return MM_WG / MM_SG; }
// subgroupMatrixLoad<subgroup_matrix_left<f16, MM_K, MM_M>, row_major>(&mmA, off, stride): (m, k) at off + m·stride + k.
fn mmLoadLeftRowMajor(off: u32, stride: u32) -> MmLeft { return vec2(off, stride); }
// subgroupMatrixLoad<subgroup_matrix_right<f16, MM_N, MM_K>, col_major>(&B, off, stride): (k, n) at off + n·stride + k.
fn mmLoadRightColMajor(off: u32, stride: u32) -> MmRight { return vec3(off, stride, 1u); }
// subgroupMatrixLoad<subgroup_matrix_right<f16, MM_N, MM_K>, row_major>(&B, off, stride): (k, n) at off + k·stride + n.
fn mmLoadRightRowMajor(off: u32, stride: u32) -> MmRight { return vec3(off, 1u, stride); }
// subgroupMatrixMultiplyAccumulate(a, w, c): c + a·w, this lane's share.
fn mmMultiplyAccumulate(a: MmLeft, w: MmRight, c: MmResult, lane: u32) -> MmResult {
  var r = c;
  for (var j = 0u; lane + j * mmLanes() < MM_M * MM_N; j++) {
    let e = lane + j * mmLanes();
    let m = e / MM_N;
    let n = e % MM_N;
    var t = r[j];
    for (var k = 0u; k < MM_K; k++) { t += f32(mmA[a.x + m * a.y + k]) * f32(B[w.x + n * w.y + k * w.z]); }
    r[j] = t;
  }
  return r;
}
// subgroupMatrixStore<row_major>(&mmC, off, c, stride): (m, n) to off + m·stride + n, by the lane that holds it.
fn mmStoreRowMajor(off: u32, c: MmResult, stride: u32, lane: u32) {
  for (var j = 0u; lane + j * mmLanes() < MM_M * MM_N; j++) {
    let e = lane + j * mmLanes();
    mmC[off + (e / MM_N) * stride + e % MM_N] = c[j];
  }
}
#endif

@compute @workgroup_size(MM_WG, 1, 1)
#if MMA_EMULATED
fn matmul_mma(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let sg = lid / mmLanes();
#else
fn matmul_mma(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
              @builtin(subgroup_id) sg: u32) {
#endif
  let range = kRange(wid.z);
  let b = range.x;
  let m0 = wid.y * MM_ROWS;
  let n0 = wid.x * MM_COLS;
  let rowsA = baseA(b);
#if A_NORM
  let per = MM_WG / MM_ROWS;
  let nr = lid / per;
  var ss = 0.0;
  if (m0 + nr < p.M) {
    for (var k = lid % per; k < p.K; k += per) {
      let v = loadA(idxA(rowsA, m0 + nr, k));
      ss += v * v;
    }
  }
  mmSum[lid] = ss;
  workgroupBarrier();
  if (lid < MM_ROWS) {
    var t = 0.0;
    for (var j = 0u; j < per; j++) { t += mmSum[lid * per + j]; }
    mmScale[lid] = rowScale(t);
  }
  workgroupBarrier();
#endif
#if A_SCALE
  // Each row's largest magnitude in this workgroup's range of K, by MM_WG / MM_ROWS
  // invocations a row, then its exponent: max·2^e in [2^14, 2^15) (half's largest is 65,504),
  // kept within f32's normal range (a zero row takes 2^15).
  let per = MM_WG / MM_ROWS;
  let nr = lid / per;
  var top = 0.0;
  if (m0 + nr < p.M) {
    for (var k = range.y + lid % per; k < range.z; k += per) { top = max(top, abs(loadA(idxA(rowsA, m0 + nr, k)))); }
  }
  mmMax[lid] = top;
  workgroupBarrier();
  if (lid < MM_ROWS) {
    var t = 0.0;
    for (var j = 0u; j < per; j++) { t = max(t, mmMax[lid * per + j]); }
    mmExp[lid] = clamp(15 - frexp(t).exp, -126, 126);
  }
  workgroupBarrier();
#endif
  // Subgroup-uniform: whether this subgroup has a column block inside N.
  let owner = sg < MM_SG && n0 + sg * MM_N < p.N;
#if TRANS_B
  let colsW = baseB(b) + (n0 + min(sg, MM_SG - 1u) * MM_N) * p.K;
#else
  let colsW = baseB(b) + n0 + min(sg, MM_SG - 1u) * MM_N;
#endif
#for i in 0..MMA_TM
#if MMA_EMULATED
  var acc{{i}}: MmResult;
#else
  var acc{{i}}: subgroup_matrix_result<f32, MM_N, MM_M>;
#endif
#endfor
  for (var k0 = range.y; k0 < range.z; k0 += MM_KT) {
    for (var e = lid; e < MM_ROWS * MM_KT; e += MM_WG) {
      let r = e / MM_KT;
      let k = k0 + e % MM_KT;
      var v = 0.0;
      if (m0 + r < p.M && k < range.z) {
        v = loadA(idxA(rowsA, m0 + r, k));
#if A_NORM
        v *= mmScale[r] * loadNorm(k);
#endif
#if A_SCALE
        v = ldexp(v, mmExp[r]);
#endif
      }
      mmA[e] = f16(v);
    }
    workgroupBarrier();
    if (owner) {
      let steps = min(MM_KT, range.z - k0) / MM_K;
      for (var s = 0u; s < steps; s++) {
#if MMA_EMULATED
#if TRANS_B
        let w = mmLoadRightColMajor(colsW + k0 + s * MM_K, p.K);
#else
        let w = mmLoadRightRowMajor(colsW + (k0 + s * MM_K) * p.N, p.N);
#endif
#for i in 0..MMA_TM
        acc{{i}} = mmMultiplyAccumulate(mmLoadLeftRowMajor({{i}}u * MM_M * MM_KT + s * MM_K, MM_KT), w, acc{{i}}, lid % mmLanes());
#endfor
#else
#if TRANS_B
        let w = subgroupMatrixLoad<subgroup_matrix_right<f16, MM_N, MM_K>, col_major>(&B, colsW + k0 + s * MM_K, p.K);
#else
        let w = subgroupMatrixLoad<subgroup_matrix_right<f16, MM_N, MM_K>, row_major>(&B, colsW + (k0 + s * MM_K) * p.N, p.N);
#endif
#for i in 0..MMA_TM
        acc{{i}} = subgroupMatrixMultiplyAccumulate(
          subgroupMatrixLoad<subgroup_matrix_left<f16, MM_K, MM_M>, row_major>(&mmA, {{i}}u * MM_M * MM_KT + s * MM_K, MM_KT), w, acc{{i}});
#endfor
#endif
      }
    }
    workgroupBarrier();
  }
  if (owner) {
#for i in 0..MMA_TM
#if MMA_EMULATED
    mmStoreRowMajor({{i}}u * MM_M * MM_COLS + sg * MM_N, acc{{i}}, MM_COLS, lid % mmLanes());
#else
    subgroupMatrixStore<row_major>(&mmC, {{i}}u * MM_M * MM_COLS + sg * MM_N, acc{{i}}, MM_COLS);
#endif
#endfor
  }
  workgroupBarrier();
  for (var e = lid; e < MM_ROWS * MM_COLS; e += MM_WG) {
    let m = m0 + e / MM_COLS;
    let n = n0 + e % MM_COLS;
    if (m < p.M && n < p.N) {
#if A_SCALE
      let v = ldexp(mmC[e], -mmExp[e / MM_COLS]);
#else
      let v = mmC[e];
#endif
#if SK_SLICED
      SkPart[(wid.z * p.M + m) * p.N + n] = v;
#else
      storeOne(b, m, n, v);
#endif
    }
  }
}
#endif
