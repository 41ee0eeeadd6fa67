import { describe, expect, it } from 'vitest';
import { f16ToF32, f32ToBf16Bits, f32ToF16Bits } from '../util/half';
import { parseSafetensors, serializeSafetensors } from './safetensors';

const bitsOf = (x: number) => new Uint32Array(Float32Array.of(x).buffer)[0]!;
const fromBits = (b: number) => new Float32Array(Uint32Array.of(b).buffer)[0]!;
const bf16ToF32 = (h: number) => fromBits(h << 16);

/** The nearest value of a format to x, ties to the even code, from the format's sorted finite codes. */
function nearest(x: number, codes: { value: number; code: number }[]): number {
  let lo = 0;
  let hi = codes.length - 1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (codes[mid]!.value <= x) lo = mid;
    else hi = mid;
  }
  const a = codes[lo]!;
  const b = codes[hi]!;
  const da = Math.abs(x - a.value);
  const db = Math.abs(b.value - x);
  return da < db ? a.code : db < da ? b.code : a.code % 2 === 0 ? a.code : b.code;
}

/** Builds a file from a header (object or raw text) and data bytes, optionally lying about the header length. */
function rawFile(header: unknown, data: Uint8Array = new Uint8Array(), headerLen?: bigint): Uint8Array {
  const json =
    header instanceof Uint8Array
      ? header
      : new TextEncoder().encode(typeof header === 'string' ? header : JSON.stringify(header));
  const out = new Uint8Array(8 + json.length + data.length);
  new DataView(out.buffer).setBigUint64(0, headerLen ?? BigInt(json.length), true);
  out.set(json, 8);
  out.set(data, 8 + json.length);
  return out;
}

function u16le(values: number[]): Uint8Array {
  const out = new Uint8Array(values.length * 2);
  values.forEach((v, i) => {
    out[2 * i] = v & 0xff;
    out[2 * i + 1] = v >> 8;
  });
  return out;
}

function bits(a: Float32Array): number[] {
  return Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));
}

function seeded(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

describe('serializeSafetensors / parseSafetensors', () => {
  it('round-trips bit-identically, including NaN payloads, -0, infinities and subnormals', () => {
    const rand = seeded(1);
    const a = new Float32Array(6 * 5).map(() => (rand() - 0.5) * 10);
    const special = new Float32Array(new Uint32Array([0x7fc00001, 0xffa00000, 0x80000000, 0x7f800000, 0xff800000, 0x00000001, 0x007fffff]).buffer);
    const scalar = new Float32Array([Math.PI]);
    const empty = new Float32Array(0);
    const bytes = serializeSafetensors(
      [
        { name: 'z.weight', shape: [6, 5], data: a },
        { name: 'a.special', shape: [7], data: special },
        { name: 'm.scalar', shape: [], data: scalar },
        { name: 'm.empty', shape: [0, 3], data: empty },
      ],
      { step: '12' },
    );
    const { tensors, metadata } = parseSafetensors(bytes);
    expect(metadata).toEqual({ step: '12', format: 'pt' });
    expect([...tensors.keys()]).toEqual(['a.special', 'm.empty', 'm.scalar', 'z.weight']);
    expect(tensors.get('z.weight')!.shape).toEqual([6, 5]);
    expect(tensors.get('z.weight')!.dtype).toBe('F32');
    expect(bits(tensors.get('z.weight')!.data)).toEqual(bits(a));
    expect(bits(tensors.get('a.special')!.data)).toEqual(bits(special));
    expect(bits(tensors.get('m.scalar')!.data)).toEqual(bits(scalar));
    expect(tensors.get('m.scalar')!.shape).toEqual([]);
    expect(tensors.get('m.empty')!.data.length).toBe(0);
  });

  it('writes a space-padded, 8-byte aligned header with format "pt" and sorted names', () => {
    const bytes = serializeSafetensors([
      { name: 'b', shape: [1], data: new Float32Array([1]) },
      { name: 'a', shape: [2], data: new Float32Array([2, 3]) },
    ]);
    const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
    expect(n % 8).toBe(0);
    const text = new TextDecoder().decode(bytes.subarray(8, 8 + n));
    expect(text).toMatch(/ *$/);
    const header = JSON.parse(text);
    expect(header.__metadata__).toEqual({ format: 'pt' });
    expect(Object.keys(header)).toEqual(['__metadata__', 'a', 'b']);
    expect(header.a).toEqual({ dtype: 'F32', shape: [2], data_offsets: [0, 8] });
    expect(header.b).toEqual({ dtype: 'F32', shape: [1], data_offsets: [8, 12] });
    expect(bytes.length).toBe(8 + n + 12);
  });

  it('forces format "pt" even when metadata names another', () => {
    const bytes = serializeSafetensors([], { format: 'np' });
    expect(parseSafetensors(bytes).metadata.format).toBe('pt');
  });

  it('parses views into a larger buffer at an odd offset', () => {
    const bytes = serializeSafetensors([{ name: 'x', shape: [3], data: new Float32Array([1, -2, 0.5]) }]);
    const big = new Uint8Array(bytes.length + 5);
    big.set(bytes, 3);
    const { tensors } = parseSafetensors(big.subarray(3, 3 + bytes.length));
    expect(Array.from(tensors.get('x')!.data)).toEqual([1, -2, 0.5]);
  });

  it('refuses to serialize mismatched shapes and duplicate names', () => {
    expect(() => serializeSafetensors([{ name: 'x', shape: [2, 2], data: new Float32Array(3) }])).toThrow(
      'tensor "x" has 3 elements but shape [2, 2] needs 4',
    );
    expect(() =>
      serializeSafetensors([
        { name: 'x', shape: [1], data: new Float32Array(1) },
        { name: 'x', shape: [1], data: new Float32Array(1) },
      ]),
    ).toThrow('duplicate tensor name "x"');
  });
});

describe('half-precision decoding', () => {
  const f16Cases: [number, number][] = [
    [0x0000, 0],
    [0x3c00, 1],
    [0xc000, -2],
    [0x3800, 0.5],
    [0x3555, 0.333251953125],
    [0x7bff, 65504],
    [0x0400, 2 ** -14],
    [0x0001, 2 ** -24],
    [0x03ff, 1023 * 2 ** -24],
    [0x8001, -(2 ** -24)],
    [0x7c00, Infinity],
    [0xfc00, -Infinity],
  ];

  it('decodes F16 normals, subnormals, infinities, NaN and -0', () => {
    const halves = [...f16Cases.map(([h]) => h), 0x7e00, 0xfe01, 0x8000];
    const file = rawFile({ h: { dtype: 'F16', shape: [halves.length], data_offsets: [0, halves.length * 2] } }, u16le(halves));
    const t = parseSafetensors(file).tensors.get('h')!;
    expect(t.dtype).toBe('F16');
    f16Cases.forEach(([, v], i) => expect(t.data[i]).toBe(v));
    expect(t.data[f16Cases.length]).toBeNaN();
    expect(t.data[f16Cases.length + 1]).toBeNaN();
    expect(Object.is(t.data[f16Cases.length + 2], -0)).toBe(true);
    for (const [h, v] of f16Cases) expect(f16ToF32(h)).toBe(v);
  });

  it('decodes BF16 normals, subnormals, infinities, NaN and -0', () => {
    const cases: [number, number][] = [
      [0x3f80, 1],
      [0xc000, -2],
      [0x4049, 3.140625],
      [0x7f7f, 3.3895313892515355e38],
      [0x0080, 2 ** -126],
      [0x0001, 2 ** -133],
      [0x7f80, Infinity],
      [0xff80, -Infinity],
    ];
    const halves = [...cases.map(([h]) => h), 0x7fc0, 0x8000];
    const file = rawFile({ b: { dtype: 'BF16', shape: [2, halves.length / 2], data_offsets: [0, halves.length * 2] } }, u16le(halves));
    const t = parseSafetensors(file).tensors.get('b')!;
    expect(t.dtype).toBe('BF16');
    expect(t.shape).toEqual([2, halves.length / 2]);
    cases.forEach(([, v], i) => expect(t.data[i]).toBe(v));
    expect(t.data[cases.length]).toBeNaN();
    expect(Object.is(t.data[cases.length + 1], -0)).toBe(true);
  });
});

describe('parseSafetensors refusals', () => {
  const ok = { x: { dtype: 'F32', shape: [2], data_offsets: [0, 8] } };
  const eight = new Uint8Array(8);

  const cases: [string, Uint8Array, string][] = [
    ['shorter than 8 bytes', new Uint8Array(5), 'file is 5 bytes, shorter than the 8-byte header length prefix'],
    ['header length beyond the file', rawFile(ok, eight, 4096n), 'header length 4096 exceeds the'],
    ['header length absurdly large', rawFile(ok, eight, 2n ** 63n), 'truncated file?'],
    ['header not JSON', rawFile('{"x": ', eight), 'header is not valid JSON'],
    ['header not an object', rawFile('[1, 2]', eight), 'header is not a JSON object'],
    ['header not UTF-8', rawFile(new Uint8Array([0x7b, 0xff, 0x7d]), eight), 'header is not valid UTF-8'],
    ['entry missing fields', rawFile({ x: { dtype: 'F32' } }, eight), 'tensor "x" is missing shape, data_offsets'],
    ['entry missing dtype', rawFile({ x: { shape: [2], data_offsets: [0, 8] } }, eight), 'tensor "x" is missing dtype'],
    [
      'unsupported dtype',
      rawFile({ ids: { dtype: 'I64', shape: [1], data_offsets: [0, 8] } }, eight),
      'tensor "ids" has unsupported dtype I64 (supported: F32, F16, BF16)',
    ],
    [
      'bad shape',
      rawFile({ x: { dtype: 'F32', shape: [2, -1], data_offsets: [0, 8] } }, eight),
      'tensor "x" shape [2,-1] is not a list of non-negative integers',
    ],
    [
      'reversed offsets',
      rawFile({ x: { dtype: 'F32', shape: [2], data_offsets: [8, 0] } }, eight),
      'tensor "x" data_offsets [8,0] is not a [begin, end] pair',
    ],
    [
      'offsets past the end (truncated data)',
      rawFile({ x: { dtype: 'F32', shape: [4], data_offsets: [0, 16] } }, eight),
      'tensor "x" data_offsets [0, 16] exceed the 8-byte data section (truncated file?)',
    ],
    [
      'byte length does not match shape',
      rawFile({ x: { dtype: 'F32', shape: [3], data_offsets: [0, 8] } }, eight),
      'tensor "x" occupies 8 bytes but shape [3] of F32 needs 12',
    ],
    [
      'byte length does not match dtype',
      rawFile({ x: { dtype: 'F16', shape: [2], data_offsets: [0, 8] } }, eight),
      'tensor "x" occupies 8 bytes but shape [2] of F16 needs 4',
    ],
    [
      'overlapping tensors',
      rawFile(
        {
          a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] },
          b: { dtype: 'F32', shape: [1], data_offsets: [4, 8] },
        },
        eight,
      ),
      'tensors "a" [0, 8] and "b" [4, 8] overlap',
    ],
    [
      'overlap hidden behind a smaller tensor',
      rawFile(
        {
          big: { dtype: 'F32', shape: [4], data_offsets: [0, 16] },
          small: { dtype: 'F32', shape: [1], data_offsets: [4, 8] },
          late: { dtype: 'F32', shape: [1], data_offsets: [12, 16] },
        },
        new Uint8Array(16),
      ),
      'tensors "big" [0, 16] and "small" [4, 8] overlap',
    ],
    ['metadata not strings', rawFile({ __metadata__: { step: 3 }, ...ok }, eight), '__metadata__ value for "step" is not a string'],
  ];

  for (const [what, bytes, message] of cases) {
    it(`refuses: ${what}`, () => {
      expect(() => parseSafetensors(bytes)).toThrow(message);
      expect(() => parseSafetensors(bytes)).toThrow(/^invalid safetensors file: /);
    });
  }

  it('accepts the same layout when it is valid', () => {
    const data = new Uint8Array(new Float32Array([1.5, -3]).buffer);
    expect(Array.from(parseSafetensors(rawFile(ok, data)).tensors.get('x')!.data)).toEqual([1.5, -3]);
  });

  it('accepts empty tensors sharing an offset with a neighbour', () => {
    const file = rawFile(
      {
        x: { dtype: 'F32', shape: [2], data_offsets: [0, 8] },
        e: { dtype: 'F32', shape: [0], data_offsets: [4, 4] },
      },
      eight,
    );
    expect(parseSafetensors(file).tensors.get('e')!.data.length).toBe(0);
  });
});

describe('half-precision encoding, against an exhaustive nearest-value search', () => {
  const positives = (widen: (h: number) => number, maxFinite: number) =>
    Array.from({ length: maxFinite + 1 }, (_, code) => ({ code, value: widen(code) })).filter((c) => Number.isFinite(c.value));

  it('rounds random float32 values to the nearest F16 and BF16, ties to even, with subnormals', () => {
    const f16 = positives(f16ToF32, 0x7bff);
    const bf16 = positives(bf16ToF32, 0x7f7f);
    let seed = 12345;
    const next = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
    for (let i = 0; i < 20000; i++) {
      // Magnitudes across both formats' ranges, subnormals and halfway ties included.
      const x = Math.fround(2 ** (next() * 50 - 30) * (1 + next()));
      const tie = i % 7 === 0 ? fromBits((bitsOf(x) & ~0x1fff) | 0x1000) : x;
      for (const v of [x, tie, -x, -tie]) {
        const sign = v < 0 ? 0x8000 : 0;
        const a = Math.abs(v);
        if (a <= 65504) expect(f32ToF16Bits(bitsOf(v)), `f16 of ${v}`).toBe(sign | nearest(a, f16));
        expect(f32ToBf16Bits(bitsOf(v)), `bf16 of ${v}`).toBe(sign | nearest(a, bf16));
      }
    }
  });

  it('keeps zeros, infinities and NaN, and overflows to infinity', () => {
    expect(f32ToF16Bits(bitsOf(0))).toBe(0);
    expect(f32ToF16Bits(bitsOf(-0))).toBe(0x8000);
    expect(f32ToF16Bits(bitsOf(Infinity))).toBe(0x7c00);
    expect(f32ToF16Bits(bitsOf(1e6))).toBe(0x7c00);
    expect(f32ToF16Bits(bitsOf(-1e6))).toBe(0xfc00);
    expect(Number.isNaN(f16ToF32(f32ToF16Bits(bitsOf(NaN))))).toBe(true);
    expect(f32ToBf16Bits(bitsOf(-Infinity))).toBe(0xff80);
    expect(Number.isNaN(bf16ToF32(f32ToBf16Bits(bitsOf(NaN))))).toBe(true);
    expect(f32ToBf16Bits(bitsOf(3.4e38))).toBe(0x7f80);
  });

  it('writes BF16 and F16 files that read back as the rounded values', () => {
    const data = Float32Array.from({ length: 64 }, (_, i) => Math.sin(i) * 10 ** ((i % 9) - 4));
    for (const dtype of ['BF16', 'F16'] as const) {
      const bytes = serializeSafetensors([{ name: 'w', shape: [8, 8], data }], {}, dtype);
      const t = parseSafetensors(bytes).tensors.get('w')!;
      expect(t.dtype).toBe(dtype);
      expect(bytes.byteLength).toBeLessThan(8 + 200 + 64 * 2);
      const narrow = dtype === 'BF16' ? (x: number) => bf16ToF32(f32ToBf16Bits(bitsOf(x))) : (x: number) => f16ToF32(f32ToF16Bits(bitsOf(x)));
      expect([...t.data]).toEqual([...data].map(narrow));
    }
  });
});
