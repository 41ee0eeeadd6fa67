import { f32ToHalves } from '../util/half';
import type { Runtime } from './runtime';
import { view, type Tensor } from './tensor';

/**
 * Uploads consecutive runs of an f16 buffer from float32 values, in order. A run may start or
 * end mid-word (writes move whole 32-bit words): a trailing odd half waits for the next run,
 * or for `end`, which writes it with a zero beside it. Nothing else is held on the host.
 */
export class HalfWriter {
  /** The next element expected, and a half held back from the last run (its bits), if any. */
  private next = 0;
  private carry: number | null = null;

  constructor(
    private readonly rt: Runtime,
    private readonly target: Tensor<'f16'>,
  ) {
    // A buffer of its own: the half past an odd end is the buffer's padding, free to write.
    if (target.offset !== 0) throw new Error('HalfWriter: writes a whole buffer, not a view');
  }

  /** Writes `values` at element `offset`, which must be where the last run ended. */
  write(offset: number, values: Float32Array): void {
    if (offset !== this.next) throw new Error(`HalfWriter: runs must be consecutive (expected element ${this.next}, got ${offset})`);
    if (offset + values.length > this.target.size) throw new Error(`HalfWriter: ${values.length} values at ${offset} overrun ${this.target.size}`);
    if (values.length === 0) return;
    const halves = f32ToHalves(values);
    const lead = this.carry === null ? 0 : 1;
    const start = offset - lead;
    const count = Math.floor((lead + halves.length) / 2) * 2;
    if (count > 0) {
      const words = new Uint16Array(count);
      if (this.carry !== null) words[0] = this.carry;
      words.set(halves.subarray(0, count - lead), lead);
      this.rt.write(view(this.target, [count], start), words);
    }
    this.carry = (lead + halves.length) % 2 === 1 ? halves[halves.length - 1]! : null;
    this.next = offset + values.length;
  }

  /** Writes the half held back, if any. */
  end(): void {
    if (this.carry === null) return;
    const start = this.next - 1;
    const words = Uint16Array.of(this.carry, 0);
    this.rt.write({ ...this.target, shape: [2], offset: start, size: 2 }, words);
    this.carry = null;
  }
}
