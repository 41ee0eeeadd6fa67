/**
 * Packs a kernel's uniform `Params` struct: 4-byte fields in declaration order, padded to
 * 16 bytes as WGSL's uniform layout requires.
 */
export class Params {
  private readonly words: number[] = [];
  private readonly kinds: ('u' | 'i' | 'f')[] = [];

  u32(...values: number[]): this {
    for (const v of values) {
      if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) throw new Error(`u32 parameter out of range: ${v}`);
      this.words.push(v);
      this.kinds.push('u');
    }
    return this;
  }

  i32(...values: number[]): this {
    for (const v of values) {
      this.words.push(v | 0);
      this.kinds.push('i');
    }
    return this;
  }

  f32(...values: number[]): this {
    for (const v of values) {
      this.words.push(v);
      this.kinds.push('f');
    }
    return this;
  }

  bytes(): Uint8Array {
    const n = Math.max(4, Math.ceil(this.words.length / 4) * 4);
    const buf = new ArrayBuffer(n * 4);
    const u = new Uint32Array(buf);
    const i = new Int32Array(buf);
    const f = new Float32Array(buf);
    this.words.forEach((w, k) => {
      const kind = this.kinds[k];
      if (kind === 'f') f[k] = w;
      else if (kind === 'i') i[k] = w;
      else u[k] = w;
    });
    return new Uint8Array(buf);
  }
}
