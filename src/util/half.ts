/**
 * IEEE half and bfloat16 conversions on the host: checkpoint dtypes, and the f16 weights a
 * frozen base keeps on the GPU (two halves to a 32-bit word, little-endian).
 */

/** The largest finite IEEE half. */
export const HALF_MAX = 65504;

let f16Lookup: Float32Array | undefined;

/** All 65536 half-precision values widened once; a lookup beats per-element bit fiddling. */
function f16Table(): Float32Array {
  if (f16Lookup) return f16Lookup;
  const t = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) t[h] = f16ToF32(h);
  f16Lookup = t;
  return t;
}

export function f16ToF32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 0x1f) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

/** float32 → bfloat16 bits, rounded to nearest even (NaN stays NaN), as torch's `.to(torch.bfloat16)`. */
export function f32ToBf16Bits(bits: number): number {
  if ((bits & 0x7fffffff) > 0x7f800000) return ((bits >>> 16) | 0x40) & 0xffff;
  return ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16) & 0xffff;
}

/** float32 → IEEE half bits, rounded to nearest even, with subnormals, overflow to infinity and NaN kept. */
export function f32ToF16Bits(bits: number): number {
  const sign = (bits >>> 16) & 0x8000;
  const exp = (bits >>> 23) & 0xff;
  const frac = bits & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (frac ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    // Subnormal: the implicit 1 joins the fraction, shifted into place with rounding.
    const m = frac | 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    const rest = m & ((1 << shift) - 1);
    let out = m >>> shift;
    if (rest > half || (rest === half && out & 1)) out++;
    return sign | out;
  }
  let out = (e << 10) | (frac >>> 13);
  const rest = frac & 0x1fff;
  // A carry out of the fraction steps the exponent, up to infinity: still the right rounding.
  if (rest > 0x1000 || (rest === 0x1000 && out & 1)) out++;
  return sign | out;
}

/** Half bits → float32 values. */
export function halvesToF32(halves: Uint16Array): Float32Array<ArrayBuffer> {
  const table = f16Table();
  const out = new Float32Array(halves.length);
  for (let i = 0; i < halves.length; i++) out[i] = table[halves[i]!]!;
  return out;
}

/** float32 values → half bits (round to nearest even). */
export function f32ToHalves(values: Float32Array): Uint16Array<ArrayBuffer> {
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
  const out = new Uint16Array(values.length);
  for (let i = 0; i < bits.length; i++) out[i] = f32ToF16Bits(bits[i]!);
  return out;
}
