// Next-token sampling. Two layouts of one body: a workgroup of WG invocations per row of
// logits z, sharing the passes over the vocabulary; or, with SERIAL (CPU adapters, where a
// barrier costs a coroutine switch per invocation), one invocation per row and no barriers.
//
// Greedy (invTemp = 0): the arg-max, lowest id among ties; its sampling log-probability is
// 0 (a point mass). Otherwise, as Hugging Face's warpers in this order:
//   temperature  s = z · invTemp
//   top-k        keep the tokens whose logit is ≥ the k-th largest (ties at it kept)
//   top-p        of those, keep the smallest top set whose probability reaches topP
// then draw from softmax(s) over the kept tokens by the inverse CDF in id order, with
// u = hash(seed, stream, step) in [0, 1): a counter-based stream per row, so a row's tokens
// depend only on the seed, its stream id (its sequence's index in the batch) and the step,
// not on which other rows are still running.
// The k-th largest logit and the nucleus threshold are found exactly by bisecting the
// 32 bits of an order-preserving integer key of the logits: 32 counting passes over the
// row, no sort.
//
// Out[row] = (token, log q(token), log p(token)) with q the distribution sampled from and p
// the model's distribution at the sampling temperature, softmax(z · invTemp) over the whole
// vocabulary (untempered when greedy): the policy-gradient ratio's denominator, as verl and
// TRL compute it (the training forward scales its logits the same way). Floats as their bits.
// With feed = 1 the token is also written to Feed[offFeed + stream]: the next decode step's
// embedding reads it there, so the host need not see a token before the step that consumes it.

struct Params {
  rows: u32, vocab: u32, offZ: u32, offStreams: u32,
  topK: u32, seed: u32, step: u32, offOut: u32,
  invTemp: f32, topP: f32, offFeed: u32, feed: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> Z: array<f32>;
@group(0) @binding(2) var<storage, read> streams: array<u32>;
@group(0) @binding(3) var<storage, read_write> Out: array<u32>;
@group(0) @binding(4) var<storage, read_write> Feed: array<u32>;

#include grid
#if SERIAL
const WG = 1u;
const LOWEST = bitcast<f32>(0xff7fffffu);
fn reduce(lid: u32, v: f32, isMax: bool) -> f32 { return v; }
#else
override WG: u32 = 64u;
const SCRATCH = 256u;
#include workgroup_reduce
fn reduce(lid: u32, v: f32, isMax: bool) -> f32 { return workgroupReduce(lid, WG, v, isMax); }

var<workgroup> prefix: array<f32, SCRATCH>;
var<workgroup> wgTotal: f32;
var<workgroup> lastChunk: u32;
var<workgroup> wgPicked: u32;
#endif

// Monotone map of floats to u32: a < b  ⇔  key(a) < key(b).
fn key(z: f32) -> u32 {
  let u = bitcast<u32>(z);
  return select(u | 0x80000000u, ~u, (u >> 31u) == 1u);
}

fn pcg(v: u32) -> u32 {
  let state = v * 747796405u + 2891336453u;
  let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
  return (word >> 22u) ^ word;
}

fn uniform01(seed: u32, stream: u32, step: u32) -> f32 {
  let h = pcg(pcg(pcg(pcg(seed) ^ stream) ^ step) + 0x9e3779b9u);
  return f32(h >> 8u) * (1.0 / 16777216.0);
}

#if SERIAL
@compute @workgroup_size(64)
#else
@compute @workgroup_size(WG)
#endif
fn sample(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_id) lid3: vec3<u32>) {
#if SERIAL
  let row = gridIndex(wid, nwg, lid3, 64u);
  let lid = 0u;
#else
  let row = gridIndex(wid, nwg, vec3<u32>(0u), 1u);
  let lid = lid3.x;
#endif
  if (row >= p.rows) { return; }
  let V = p.vocab;
  let base = p.offZ + row * V;

  var m = LOWEST;
  for (var c = lid; c < V; c += WG) { m = max(m, Z[base + c]); }
  m = reduce(lid, m, true);
  // The tempered softmax's normaliser: Σ exp((z − m)·τ), τ = 1 when greedy.
  let tau = select(p.invTemp, 1.0, p.invTemp == 0.0);
  var s = 0.0;
  for (var c = lid; c < V; c += WG) { s += exp((Z[base + c] - m) * tau); }
  let logNorm = log(reduce(lid, s, false));

  var logq = 0.0;
  var pick = 0u;
  if (p.invTemp == 0.0) {
    // Arg-max as the max of −id over the maxima: the lowest id wins ties.
    var best = LOWEST;
    for (var c = lid; c < V; c += WG) {
      if (Z[base + c] == m) { best = max(best, -f32(c)); }
    }
    pick = u32(-reduce(lid, best, true));
  } else {
    let t = p.invTemp;
    // Kept: key(z) ≥ thr. 0 keeps every token.
    var thr = 0u;
    if (p.topK > 0u && p.topK < V) {
      for (var i = 0u; i < 32u; i++) {
        let trial = thr | (1u << (31u - i));
        var n = 0.0;
        for (var c = lid; c < V; c += WG) { n += select(0.0, 1.0, key(Z[base + c]) >= trial); }
        if (reduce(lid, n, false) >= f32(p.topK)) { thr = trial; }
      }
    }
    if (p.topP < 1.0) {
      var kept = 0.0;
      for (var c = lid; c < V; c += WG) {
        let z = Z[base + c];
        kept += select(0.0, exp((z - m) * t), key(z) >= thr);
      }
      let need = p.topP * reduce(lid, kept, false);
      var cut = 0u;
      for (var i = 0u; i < 32u; i++) {
        let trial = max(cut | (1u << (31u - i)), thr);
        var mass = 0.0;
        for (var c = lid; c < V; c += WG) {
          let z = Z[base + c];
          mass += select(0.0, exp((z - m) * t), key(z) >= trial);
        }
        if (reduce(lid, mass, false) >= need) { cut = cut | (1u << (31u - i)); }
      }
      thr = max(thr, cut);
    }
    // Inverse CDF in id order: each invocation owns a contiguous chunk of ids; a serial
    // prefix over the chunk sums finds the chunk holding goal = u · total, which its owner scans.
    let chunk = (V + WG - 1u) / WG;
    let lo = min(lid * chunk, V);
    let hi = min(lo + chunk, V);
    var part = 0.0;
    for (var c = lo; c < hi; c++) {
      let z = Z[base + c];
      part += select(0.0, exp((z - m) * t), key(z) >= thr);
    }
#if SERIAL
    let total = part;
    let before = 0.0;
    let last = true;
#else
    prefix[lid] = part;
    workgroupBarrier();
    if (lid == 0u) {
      var acc = 0.0;
      var lastNonEmpty = 0u;
      for (var i = 0u; i < WG; i++) {
        let v = prefix[i];
        prefix[i] = acc;
        acc += v;
        if (v > 0.0) { lastNonEmpty = i; }
      }
      wgTotal = acc;
      lastChunk = lastNonEmpty;
    }
    workgroupBarrier();
    let total = wgTotal;
    let before = prefix[lid];
    let last = lid == lastChunk;
#endif
    let goal = uniform01(p.seed, streams[p.offStreams + row], p.step) * total;
    // Rounding can leave the goal past the last kept token: the last chunk takes it then.
    if (part > 0.0 && goal >= before && (goal < before + part || last)) {
      var acc = before;
      var chosen = lo;
      for (var c = lo; c < hi; c++) {
        let z = Z[base + c];
        if (key(z) >= thr) {
          chosen = c;
          acc += exp((z - m) * t);
          if (acc > goal) { break; }
        }
      }
#if SERIAL
      pick = chosen;
    }
#else
      wgPicked = chosen;
    }
    workgroupBarrier();
    pick = wgPicked;
#endif
    logq = (Z[base + pick] - m) * t - log(total);
  }
  if (lid == 0u) {
    let tok = pick;
    let o = p.offOut + row * 3u;
    Out[o] = tok;
    Out[o + 1u] = bitcast<u32>(logq);
    Out[o + 2u] = bitcast<u32>((Z[base + tok] - m) * tau - logNorm);
    if (p.feed == 1u) { Feed[p.offFeed + streams[p.offStreams + row]] = tok; }
  }
}
