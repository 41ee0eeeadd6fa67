/** Reinterprets an f32 as its bits (one shared word: no allocation per field). */
const F32 = new Float32Array(1);
const F32_BITS = new Uint32Array(F32.buffer);

/**
 * Packs a kernel's uniform `Params` struct: 4-byte fields in declaration order, padded to
 * 16 bytes as WGSL's uniform layout requires. Fields are kept as their 32-bit patterns, so
 * that the runtime copies them straight into the step's parameter buffer.
 */
export class Params {
  private readonly bits: number[] = [];

  u32(...values: number[]): this {
    for (const v of values) {
      if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) throw new Error(`u32 parameter out of range: ${v}`);
      this.bits.push(v);
    }
    return this;
  }

  i32(...values: number[]): this {
    for (const v of values) this.bits.push((v | 0) >>> 0);
    return this;
  }

  f32(...values: number[]): this {
    for (const v of values) {
      F32[0] = v;
      this.bits.push(F32_BITS[0]!);
    }
    return this;
  }

  /** Words the struct takes: its fields rounded up to whole 16 bytes, at least 16. */
  get words(): number {
    return Math.max(4, Math.ceil(this.bits.length / 4) * 4);
  }

  /** Writes the struct into `out` from word `at` (the padding included, as zeros). */
  write(out: Uint32Array, at: number): void {
    const bits = this.bits;
    for (let k = 0; k < bits.length; k++) out[at + k] = bits[k]!;
    out.fill(0, at + bits.length, at + this.words);
  }
}
