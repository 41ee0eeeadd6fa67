// Token embedding: gather rows of W [vocab, H]; the backward pass scatter-adds into dW.
// The scatter is made deterministic and atomic-free by grouping positions per token on the
// host (token ids are host data): a CSR list of (token, its positions).

struct Params {
  n: u32, H: u32, offW: u32, offOut: u32,
  unique: u32, offIndex: u32, offDy: u32, offTokens: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> tokens: array<u32>;
// W_F16: the table holds IEEE halves two to a word (a frozen f16 base). WORDS: table and
// output both hold halves, gathered as words bit for bit (an f16 KV cache's rows; H and the
// offsets count words).
#if WORDS
@group(0) @binding(2) var<storage, read> W: array<u32>;
@group(0) @binding(3) var<storage, read_write> Out: array<u32>;
fn loadW(i: u32) -> u32 { return W[i]; }
#else
#if W_F16
#include half
@group(0) @binding(2) var<storage, read> W: array<u32>;
fn loadW(i: u32) -> f32 { return halfAt(W[i >> 1u], i); }
#else
@group(0) @binding(2) var<storage, read> W: array<f32>;
fn loadW(i: u32) -> f32 { return W[i]; }
#endif
@group(0) @binding(3) var<storage, read_write> Out: array<f32>;
#endif
#include grid
// The forward with GATHER: row t's token is tokens[offTokens + index[offIndex + t]] (a decode
// step reads each row's token where the sampler left it, by batch row, on the GPU). The
// backward: index = [token_0 .. token_{U-1}, start_0 .. start_U, positions...], the positions
// of token_u being positions[start_u .. start_{u+1}).
@group(0) @binding(4) var<storage, read> index: array<u32>;
#if GATHER
fn tokenAt(t: u32) -> u32 { return tokens[p.offTokens + index[p.offIndex + t]]; }
#else
fn tokenAt(t: u32) -> u32 { return tokens[p.offTokens + t]; }
#endif

@compute @workgroup_size(256)
fn embedding_forward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                     @builtin(local_invocation_id) lid: vec3<u32>) {
  let idx = gridIndex(wid, nwg, lid, 256u);
  if (idx >= p.n * p.H) { return; }
  let t = idx / p.H;
  let c = idx - t * p.H;
  Out[p.offOut + idx] = loadW(p.offW + tokenAt(t) * p.H + c);
}

#if !WORDS
@group(0) @binding(5) var<storage, read> Dy: array<f32>;

// Out = dW: Out[token_u, c] += Σ Dy[pos, c].
@compute @workgroup_size(256)
fn embedding_backward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                      @builtin(local_invocation_id) lid: vec3<u32>) {
  let idx = gridIndex(wid, nwg, lid, 256u);
  if (idx >= p.unique * p.H) { return; }
  let u = idx / p.H;
  let c = idx - u * p.H;
  let token = index[p.offIndex + u];
  let starts = p.offIndex + p.unique;
  let positions = starts + p.unique + 1u;
  var acc = 0.0;
  for (var k = index[starts + u]; k < index[starts + u + 1u]; k++) {
    acc += Dy[p.offDy + index[positions + k] * p.H + c];
  }
  Out[p.offOut + token * p.H + c] += acc;
}
#endif
