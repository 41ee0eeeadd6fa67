// Next-token sampling, one definition in three layouts: a workgroup of 256 invocations per row
// of logits z, sharing the passes over the vocabulary; two passes over a workgroup per chunk
// of each row, then one per row (greedy and plain temperature, sample_chunks and
// sample_combine below); or, with SERIAL (CPU adapters, where a barrier costs a coroutine
// switch per invocation), one invocation per row and no barriers.
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
// Both thresholds are keys of an order-preserving integer map of the logits. One invocation
// per row (SERIAL) finds them by bisecting the key's 32 bits: a counting pass per bit, no
// barrier. A workgroup of 256 per row (GPUs) finds them by radix select, a byte a pass: a
// histogram of the candidates' next byte in workgroup atomics, whose suffix sums say which
// byte holds the k-th largest key (counts) or where the mass from the top reaches topP (the
// probabilities in 2^-31 fixed point, so that the sums are exact and the result
// deterministic): 4 passes each instead of 32 and 33.
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

// The tempered softmax's temperature: τ = 1 when greedy.
fn tauOf(invTemp: f32) -> f32 { return select(invTemp, 1.0, invTemp == 0.0); }

fn writeOut(row: u32, tok: u32, logq: f32, logp: f32) {
  let o = p.offOut + row * 3u;
  Out[o] = tok;
  Out[o + 1u] = bitcast<u32>(logq);
  Out[o + 2u] = bitcast<u32>(logp);
  if (p.feed == 1u) { Feed[p.offFeed + streams[p.offStreams + row]] = tok; }
}

#if SERIAL
const LOWEST = bitcast<f32>(0xff7fffffu);

// One invocation sums a whole row in order: plainly in f32, the tail's small terms fall under
// the running sum's rounding (at 151,936 tokens, up to 6e-4 of the mass), enough to move the
// nucleus or the draw to another token. Compensated (Kahan) sums keep them: (sum, compensation).
fn kahan(a: vec2<f32>, x: f32) -> vec2<f32> {
  let y = x - a.y;
  let t = a.x + y;
  return vec2<f32>(t, (t - a.x) - y);
}

@compute @workgroup_size(64)
fn sample(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_id) lid3: vec3<u32>) {
  let row = gridIndex(wid, nwg, lid3, 64u);
  if (row >= p.rows) { return; }
  let V = p.vocab;
  let base = p.offZ + row * V;

  var m = LOWEST;
  for (var c = 0u; c < V; c++) { m = max(m, Z[base + c]); }
  // The tempered softmax's normaliser: Σ exp((z − m)·τ).
  let tau = tauOf(p.invTemp);
  var s = vec2<f32>(0.0);
  for (var c = 0u; c < V; c++) { s = kahan(s, exp((Z[base + c] - m) * tau)); }
  let logNorm = log(s.x);

  var logq = 0.0;
  var pick = 0u;
  if (p.invTemp == 0.0) {
    // Arg-max: the lowest id wins ties.
    for (var c = V; c > 0u; c--) {
      if (Z[base + c - 1u] == m) { pick = c - 1u; }
    }
  } else {
    let t = p.invTemp;
    // Kept: key(z) ≥ thr. 0 keeps every token.
    var thr = 0u;
    if (p.topK > 0u && p.topK < V) {
      for (var i = 0u; i < 32u; i++) {
        let trial = thr | (1u << (31u - i));
        var n = 0u;
        for (var c = 0u; c < V; c++) { n += select(0u, 1u, key(Z[base + c]) >= trial); }
        if (n >= p.topK) { thr = trial; }
      }
    }
    if (p.topP < 1.0) {
      var kept = vec2<f32>(0.0);
      for (var c = 0u; c < V; c++) {
        let z = Z[base + c];
        kept = kahan(kept, select(0.0, exp((z - m) * t), key(z) >= thr));
      }
      let need = p.topP * kept.x;
      var cut = 0u;
      for (var i = 0u; i < 32u; i++) {
        let trial = max(cut | (1u << (31u - i)), thr);
        var mass = vec2<f32>(0.0);
        for (var c = 0u; c < V; c++) {
          let z = Z[base + c];
          mass = kahan(mass, select(0.0, exp((z - m) * t), key(z) >= trial));
        }
        if (mass.x >= need) { cut = cut | (1u << (31u - i)); }
      }
      thr = max(thr, cut);
    }
    // Inverse CDF in id order.
    var total = vec2<f32>(0.0);
    for (var c = 0u; c < V; c++) {
      let z = Z[base + c];
      total = kahan(total, select(0.0, exp((z - m) * t), key(z) >= thr));
    }
    let goal = uniform01(p.seed, streams[p.offStreams + row], p.step) * total.x;
    // Rounding can leave the goal past the last kept token: that one is taken then.
    var acc = vec2<f32>(0.0);
    for (var c = 0u; c < V; c++) {
      let z = Z[base + c];
      if (key(z) >= thr) {
        pick = c;
        acc = kahan(acc, exp((z - m) * t));
        if (acc.x > goal) { break; }
      }
    }
    logq = (Z[base + pick] - m) * t - log(total.x);
  }
  writeOut(row, pick, logq, (Z[base + pick] - m) * tau - logNorm);
}
#else
const WG = 256u;
const SCRATCH = 256u;
#include workgroup_reduce

// The inverse CDF over ids [lo, hi) of a row: the first kept id (key ≥ thr) at which the mass
// summed from `start` passes `goal`, or the last kept one where rounding leaves goal beyond it.
fn walkIds(base: u32, lo: u32, hi: u32, m: f32, t: f32, thr: u32, start: f32, goal: f32) -> u32 {
  var acc = start;
  var chosen = lo;
  for (var c = lo; c < hi; c++) {
    let z = Z[base + c];
    if (key(z) >= thr) {
      chosen = c;
      acc += exp((z - m) * t);
      if (acc > goal) { break; }
    }
  }
  return chosen;
}

// Radix select: the 256 byte values' weights, then their suffix sums.
var<workgroup> hist: array<atomic<u32>, 256>;
var<workgroup> suffix: array<u32, 256>;
var<workgroup> found: vec2<u32>;
// The inverse CDF: each invocation's chunk sum, then the sum of the chunks before it.
var<workgroup> before: array<f32, 256>;
var<workgroup> wgTotal: f32;
var<workgroup> lastChunk: u32;
var<workgroup> wgPicked: u32;

// Fills `suffix` with the weights of the row's candidates by the byte of their key at
// `shift`, summed from the largest byte: suffix[i] = the weight of bytes ≥ 255 − i.
// Candidates: key ≥ floor, and the key's bits above the byte equal `high`'s. Weight 1
// (counting), or with scale > 0 the probability exp((z − m)·t) · scale rounded to an integer.
fn histogram(lid: u32, base: u32, floor: u32, high: u32, shift: u32, m: f32, t: f32, scale: f32) {
  atomicStore(&hist[lid], 0u);
  workgroupBarrier();
  let above = select(0u, 0xffffffffu << (shift + 8u), shift < 24u);
  for (var c = lid; c < p.vocab; c += WG) {
    let z = Z[base + c];
    let k = key(z);
    if (k >= floor && (k & above) == high) {
      let w = select(1u, u32(exp((z - m) * t) * scale + 0.5), scale > 0.0);
      atomicAdd(&hist[(k >> shift) & 255u], w);
    }
  }
  workgroupBarrier();
  suffix[lid] = atomicLoad(&hist[255u - lid]);
  // Inclusive scan (Hillis–Steele) over the reversed bytes.
  for (var s = 1u; s < WG; s <<= 1u) {
    workgroupBarrier();
    var v = 0u;
    if (lid >= s) { v = suffix[lid - s]; }
    workgroupBarrier();
    suffix[lid] += v;
  }
  workgroupBarrier();
}

// After histogram: the byte at which the weights summed from the largest reach `goal`
// (1 ≤ goal ≤ the candidates' total), and the weight of the bytes above it.
fn pickByte(lid: u32, goal: u32) -> vec2<u32> {
  var excl = 0u;
  if (lid > 0u) { excl = suffix[lid - 1u]; }
  if (excl < goal && suffix[lid] >= goal) { found = vec2<u32>(255u - lid, excl); }
  workgroupBarrier();
  let r = found;
  workgroupBarrier();
  return r;
}

@compute @workgroup_size(WG)
fn sample(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_id) lid3: vec3<u32>) {
  let row = gridIndex(wid, nwg, vec3<u32>(0u), 1u);
  let lid = lid3.x;
  if (row >= p.rows) { return; }
  let V = p.vocab;
  let base = p.offZ + row * V;

  var m = LOWEST;
  for (var c = lid; c < V; c += WG) { m = max(m, Z[base + c]); }
  m = workgroupReduce(lid, WG, m, true);
  let tau = tauOf(p.invTemp);
  var s = 0.0;
  for (var c = lid; c < V; c += WG) { s += exp((Z[base + c] - m) * tau); }
  let logNorm = log(workgroupReduce(lid, WG, s, false));

  var logq = 0.0;
  var pick = 0u;
  if (p.invTemp == 0.0) {
    // Arg-max as the max of −id over the maxima: the lowest id wins ties.
    var best = LOWEST;
    for (var c = lid; c < V; c += WG) {
      if (Z[base + c] == m) { best = max(best, -f32(c)); }
    }
    pick = u32(-workgroupReduce(lid, WG, best, true));
  } else {
    let t = p.invTemp;
    // Kept: key(z) ≥ thr. 0 keeps every token.
    var thr = 0u;
    if (p.topK > 0u && p.topK < V) {
      // The k-th largest key, a byte a pass: `rank` is its rank among the candidates left.
      var rank = p.topK;
      for (var shift = 24; shift >= 0; shift -= 8) {
        histogram(lid, base, 0u, thr, u32(shift), m, t, 0.0);
        let r = pickByte(lid, rank);
        thr = thr | (r.x << u32(shift));
        rank -= r.y;
      }
    }
    if (p.topP < 1.0) {
      var kept = 0.0;
      for (var c = lid; c < V; c += WG) {
        let z = Z[base + c];
        kept += select(0.0, exp((z - m) * t), key(z) >= thr);
      }
      // Probabilities over the kept tokens in units of 2^-31: they sum to about 2^31.
      let scale = 2147483648.0 / workgroupReduce(lid, WG, kept, false);
      // The largest key whose mass from the top reaches topP of the whole.
      var cut = 0u;
      var need = 0u;
      for (var shift = 24; shift >= 0; shift -= 8) {
        histogram(lid, base, thr, cut, u32(shift), m, t, scale);
        if (shift == 24) {
          let whole = suffix[WG - 1u];
          need = clamp(u32(ceil(p.topP * f32(whole))), 1u, whole);
        }
        let r = pickByte(lid, need);
        cut = cut | (r.x << u32(shift));
        need -= r.y;
      }
      thr = cut;
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
    before[lid] = part;
    workgroupBarrier();
    if (lid == 0u) {
      var acc = 0.0;
      var lastNonEmpty = 0u;
      for (var i = 0u; i < WG; i++) {
        let v = before[i];
        before[i] = acc;
        acc += v;
        if (v > 0.0) { lastNonEmpty = i; }
      }
      wgTotal = acc;
      lastChunk = lastNonEmpty;
    }
    workgroupBarrier();
    let total = wgTotal;
    let start = before[lid];
    let goal = uniform01(p.seed, streams[p.offStreams + row], p.step) * total;
    // Rounding can leave the goal past the last kept token: the last chunk takes it then.
    if (part > 0.0 && goal >= start && (goal < start + part || lid == lastChunk)) {
      wgPicked = walkIds(base, lo, hi, m, t, thr, start, goal);
    }
    workgroupBarrier();
    pick = wgPicked;
    logq = (Z[base + pick] - m) * t - log(total);
  }
  if (lid == 0u) { writeOut(row, pick, logq, (Z[base + pick] - m) * tau - logNorm); }
}

// Two passes over many workgroups a row (greedy, and temperature with nothing cut): at one
// row the kernel above keeps one workgroup busy over the whole vocabulary while the rest of
// the GPU idles. sample_chunks: a workgroup per CHUNK ids of a row writes the chunk's max,
// its tempered mass relative to that max, and its lowest arg-max id (Part, 3 floats a
// chunk). sample_combine: a workgroup per row rescales the chunks to the row's max, finds the
// chunk holding goal = u · total by a scan over the chunks' masses, then the token by a scan
// over the chunk's ids, each invocation walking PER of them: no invocation walks the row.
@group(0) @binding(5) var<storage, read_write> Part: array<f32>;
const CHUNK = 2048u;
const PER = CHUNK / WG;
var<workgroup> wgChunk: u32;
var<workgroup> wgStart: f32;

fn chunksOf(V: u32) -> u32 { return (V + CHUNK - 1u) / CHUNK; }

@compute @workgroup_size(WG)
fn sample_chunks(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                 @builtin(local_invocation_id) lid3: vec3<u32>) {
  let g = gridIndex(wid, nwg, vec3<u32>(0u), 1u);
  let C = chunksOf(p.vocab);
  let row = g / C;
  let lid = lid3.x;
  if (row >= p.rows) { return; }
  let base = p.offZ + row * p.vocab;
  let lo = (g % C) * CHUNK;
  let hi = min(lo + CHUNK, p.vocab);
  var m = LOWEST;
  for (var c = lo + lid; c < hi; c += WG) { m = max(m, Z[base + c]); }
  m = workgroupReduce(lid, WG, m, true);
  let tau = tauOf(p.invTemp);
  var s = 0.0;
  var best = LOWEST;
  for (var c = lo + lid; c < hi; c += WG) {
    let z = Z[base + c];
    s += exp((z - m) * tau);
    if (z == m) { best = max(best, -f32(c)); }
  }
  s = workgroupReduce(lid, WG, s, false);
  best = workgroupReduce(lid, WG, best, true);
  if (lid == 0u) {
    Part[g * 3u] = m;
    Part[g * 3u + 1u] = s;
    Part[g * 3u + 2u] = -best;
  }
}

// Inclusive scan (Hillis–Steele) of v over the workgroup in `before`: returns this
// invocation's exclusive and inclusive sums; before[WG − 1] holds the total until the next scan.
fn scanBefore(lid: u32, v: f32) -> vec2<f32> {
  workgroupBarrier();
  before[lid] = v;
  for (var s = 1u; s < WG; s <<= 1u) {
    workgroupBarrier();
    var x = 0.0;
    if (lid >= s) { x = before[lid - s]; }
    workgroupBarrier();
    before[lid] += x;
  }
  workgroupBarrier();
  var excl = 0.0;
  if (lid > 0u) { excl = before[lid - 1u]; }
  return vec2<f32>(excl, before[lid]);
}

@compute @workgroup_size(WG)
fn sample_combine(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                  @builtin(local_invocation_id) lid3: vec3<u32>) {
  let row = gridIndex(wid, nwg, vec3<u32>(0u), 1u);
  let lid = lid3.x;
  if (row >= p.rows) { return; }
  let V = p.vocab;
  let base = p.offZ + row * V;
  let C = chunksOf(V);
  // Each invocation owns a contiguous block of chunks: one each up to WG chunks a row.
  let per = (C + WG - 1u) / WG;
  let clo = min(lid * per, C);
  let chi = min(clo + per, C);
  let pb = row * C * 3u;

  var m = LOWEST;
  for (var c = clo; c < chi; c++) { m = max(m, Part[pb + c * 3u]); }
  m = workgroupReduce(lid, WG, m, true);
  let tau = tauOf(p.invTemp);
  // The block's mass relative to the row's max (a chunk's: Σ exp((z − m)·τ)), and its first
  // id holding the max.
  var s = 0.0;
  var best = LOWEST;
  for (var c = clo; c < chi; c++) {
    let mc = Part[pb + c * 3u];
    s += Part[pb + c * 3u + 1u] * exp((mc - m) * tau);
    if (mc == m) { best = max(best, -Part[pb + c * 3u + 2u]); }
  }
  let logNorm = log(workgroupReduce(lid, WG, s, false));

  var logq = 0.0;
  var pick = 0u;
  if (p.invTemp == 0.0) {
    pick = u32(-workgroupReduce(lid, WG, best, true));
  } else {
    // Nothing is cut here, so the masses to draw from are the normaliser's (t = τ).
    let t = p.invTemp;
    let blocks = scanBefore(lid, s);
    let total = before[WG - 1u];
    let lastBlock = workgroupReduce(lid, WG, select(-1.0, f32(lid), s > 0.0), true);
    let goal = uniform01(p.seed, streams[p.offStreams + row], p.step) * total;
    // Rounding can leave the goal past the last non-empty block (or chunk, or id): the last
    // takes it then, as the one-workgroup kernel does.
    if (s > 0.0 && goal >= blocks.x && (goal < blocks.y || f32(lid) == lastBlock)) {
      var acc = blocks.x;
      var chosen = clo;
      var start = acc;
      for (var c = clo; c < chi; c++) {
        let w = Part[pb + c * 3u + 1u] * exp((Part[pb + c * 3u] - m) * t);
        if (w > 0.0) {
          chosen = c;
          start = acc;
          acc += w;
          if (acc > goal) { break; }
        }
      }
      wgChunk = chosen;
      wgStart = start;
      // A chunk whose ids all round to zero weight still holds its max: the default pick.
      wgPicked = u32(Part[pb + chosen * 3u + 2u]);
    }
    workgroupBarrier();
    let chunkStart = wgStart;
    let lo = min(wgChunk * CHUNK + lid * PER, V);
    let hi = min(lo + PER, V);
    var part = 0.0;
    for (var c = lo; c < hi; c++) { part += exp((Z[base + c] - m) * t); }
    let ids = scanBefore(lid, part);
    let lastIds = workgroupReduce(lid, WG, select(-1.0, f32(lid), part > 0.0), true);
    let start = chunkStart + ids.x;
    if (part > 0.0 && goal >= start && (goal < chunkStart + ids.y || f32(lid) == lastIds)) {
      // Nothing is cut: threshold 0 keeps every id.
      wgPicked = walkIds(base, lo, hi, m, t, 0u, start, goal);
    }
    workgroupBarrier();
    pick = wgPicked;
    logq = (Z[base + pick] - m) * t - log(total);
  }
  if (lid == 0u) { writeOut(row, pick, logq, (Z[base + pick] - m) * tau - logNorm); }
}
#endif
