// Element i of an array of IEEE halves stored two to a 32-bit word (element 2w in the low
// half of word w, as little-endian bytes lay them out), given that word: widened to f32 with
// unpack2x16float, which is core WGSL (no shader-f16).
fn halfAt(word: u32, i: u32) -> f32 {
  let w = unpack2x16float(word);
  return select(w.x, w.y, (i & 1u) == 1u);
}

// Two values as one word of halves (a in the low half), each clamped to the largest finite
// half: pack2x16float of a value outside that range is indeterminate.
fn packHalves(a: f32, b: f32) -> u32 {
  return pack2x16float(clamp(vec2<f32>(a, b), vec2<f32>(-65504.0), vec2<f32>(65504.0)));
}
