/** Reinterprets an f32 as its bits (one shared word: no allocation per field). */
const F32 = new Float32Array(1);
const F32_BITS = new Uint32Array(F32.buffer);

/**
 * A u32 parameter whose value changes between replays of a recorded plan (Runtime.capture):
 * the decode step's cache slot. A dispatch recorded on its own uses the value it had when
 * recorded; a plan writes the value the cell holds when it is replayed.
 */
export class Cell {
  private current = 0;

  constructor(value = 0) {
    this.set(value);
  }

  get value(): number {
    return this.current;
  }

  set(value: number): void {
    if (!Number.isInteger(value) || value < 0 || value > 0xffffffff) throw new Error(`u32 parameter out of range: ${value}`);
    this.current = value;
  }
}

/** A parameter's value now: itself, or what its cell holds. */
export function valueOf(v: number | Cell): number {
  return typeof v === 'number' ? v : v.value;
}

/**
 * Packs a kernel's uniform `Params` struct: 4-byte fields in declaration order, padded to
 * 16 bytes as WGSL's uniform layout requires. Fields are kept as their 32-bit patterns, so
 * that the runtime copies them straight into the step's parameter buffer.
 */
export class Params {
  private readonly bits: number[] = [];
  /** The fields that are cells, by word (see Cell). */
  private readonly live: { word: number; cell: Cell }[] = [];

  u32(...values: (number | Cell)[]): this {
    for (const v of values) {
      if (typeof v !== 'number') {
        this.live.push({ word: this.bits.length, cell: v });
        this.bits.push(v.value);
        continue;
      }
      if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) throw new Error(`u32 parameter out of range: ${v}`);
      this.bits.push(v);
    }
    return this;
  }

  /** The fields that are cells: their words in the struct. */
  get cells(): readonly { word: number; cell: Cell }[] {
    return this.live;
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

  /** Writes the struct into `out` from word `at` (the padding included, as zeros), cells as they were when recorded. */
  write(out: Uint32Array, at: number): void {
    const bits = this.bits;
    for (let k = 0; k < bits.length; k++) out[at + k] = bits[k]!;
    out.fill(0, at + bits.length, at + this.words);
  }
}
