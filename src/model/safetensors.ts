import { f32ToBf16Bits, f32ToF16Bits, halvesToF32 } from '../util/half';

/**
 * Reader and writer for the safetensors format (https://github.com/huggingface/safetensors):
 * an 8-byte little-endian header length, a JSON header, then the raw tensor bytes.
 *
 * Everything is validated before any tensor is decoded, so a damaged file is refused whole
 * instead of yielding a partly loaded model.
 */

export type SafetensorsDtype = 'F32' | 'F16' | 'BF16';

export interface SafetensorsTensor {
  /** Storage type in the file; `data` is always decoded to float32. */
  dtype: SafetensorsDtype;
  shape: number[];
  data: Float32Array;
}

export interface ParsedSafetensors {
  tensors: Map<string, SafetensorsTensor>;
  metadata: Record<string, string>;
}

/** A tensor of a checked file, decoded only when asked (each call decodes afresh; nothing is kept). */
export interface IndexedTensor {
  dtype: SafetensorsDtype;
  shape: number[];
  /** Its bytes in the file. */
  bytes: number;
  decode(): Float32Array;
}

export interface IndexedSafetensors {
  tensors: Map<string, IndexedTensor>;
  metadata: Record<string, string>;
}

export interface TensorToWrite {
  name: string;
  shape: number[];
  data: Float32Array;
}

export const DTYPE_BYTES: Record<SafetensorsDtype, number> = { F32: 4, F16: 2, BF16: 2 };

/** The reference implementation refuses headers above this size; a larger one means a corrupt length. */
const MAX_HEADER_BYTES = 100_000_000;

function fail(message: string): never {
  throw new Error(`invalid safetensors file: ${message}`);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function fmtShape(shape: readonly number[]): string {
  return `[${shape.join(', ')}]`;
}

const littleEndianHost = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

interface PlannedTensor {
  name: string;
  dtype: SafetensorsDtype;
  shape: number[];
  begin: number;
  end: number;
}

/** Every tensor of the file, decoded to float32. */
export function parseSafetensors(bytes: Uint8Array): ParsedSafetensors {
  const { tensors, metadata } = indexSafetensors(bytes);
  return { tensors: new Map([...tensors].map(([name, t]) => [name, { dtype: t.dtype, shape: t.shape, data: t.decode() }])), metadata };
}

/**
 * The file's header checked whole (dtypes, shapes, offsets within the data, no overlaps) and
 * its tensors ready to decode one at a time: a large checkpoint never needs its float32 copy
 * in memory all at once.
 */
export function indexSafetensors(bytes: Uint8Array): IndexedSafetensors {
  if (bytes.byteLength < 8) {
    fail(`file is ${bytes.byteLength} bytes, shorter than the 8-byte header length prefix`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLen64 = view.getBigUint64(0, true);
  const available = bytes.byteLength - 8;
  if (headerLen64 > BigInt(available)) {
    fail(`header length ${headerLen64} exceeds the ${available} bytes after the length prefix (truncated file?)`);
  }
  const headerLen = Number(headerLen64);
  if (headerLen > MAX_HEADER_BYTES) fail(`header length ${headerLen} exceeds the ${MAX_HEADER_BYTES}-byte limit`);

  let headerText: string;
  try {
    headerText = new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(8, 8 + headerLen));
  } catch {
    fail('header is not valid UTF-8');
  }
  let header: unknown;
  try {
    header = JSON.parse(headerText);
  } catch (e) {
    fail(`header is not valid JSON (${(e as Error).message})`);
  }
  if (!isPlainObject(header)) fail('header is not a JSON object');

  const dataStart = 8 + headerLen;
  const dataLen = bytes.byteLength - dataStart;
  const metadata: Record<string, string> = {};
  const planned: PlannedTensor[] = [];

  for (const [name, entry] of Object.entries(header)) {
    if (name === '__metadata__') {
      if (!isPlainObject(entry)) fail('__metadata__ is not a JSON object');
      for (const [k, v] of Object.entries(entry)) {
        if (typeof v !== 'string') fail(`__metadata__ value for "${k}" is not a string`);
        metadata[k] = v;
      }
      continue;
    }
    if (!isPlainObject(entry)) fail(`tensor "${name}" entry is not a JSON object`);
    const missing = (['dtype', 'shape', 'data_offsets'] as const).filter((k) => !(k in entry));
    if (missing.length) fail(`tensor "${name}" is missing ${missing.join(', ')}`);

    const { dtype, shape, data_offsets: offsets } = entry;
    if (typeof dtype !== 'string') fail(`tensor "${name}" dtype is not a string`);
    if (!(dtype in DTYPE_BYTES)) {
      fail(`tensor "${name}" has unsupported dtype ${dtype} (supported: F32, F16, BF16)`);
    }
    if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
      fail(`tensor "${name}" shape ${JSON.stringify(shape)} is not a list of non-negative integers`);
    }
    if (
      !Array.isArray(offsets) ||
      offsets.length !== 2 ||
      !offsets.every((o) => Number.isSafeInteger(o) && o >= 0) ||
      offsets[0] > offsets[1]
    ) {
      fail(`tensor "${name}" data_offsets ${JSON.stringify(offsets)} is not a [begin, end] pair with begin <= end`);
    }
    const [begin, end] = offsets as [number, number];
    const dims = shape as number[];
    if (end > dataLen) {
      fail(
        `tensor "${name}" data_offsets [${begin}, ${end}] exceed the ${dataLen}-byte data section (truncated file?)`,
      );
    }
    const typed = dtype as SafetensorsDtype;
    const expectedBytes = dims.reduce((a, b) => a * b, 1) * DTYPE_BYTES[typed];
    if (end - begin !== expectedBytes) {
      fail(
        `tensor "${name}" occupies ${end - begin} bytes but shape ${fmtShape(dims)} of ${typed} needs ${expectedBytes}`,
      );
    }
    planned.push({ name, dtype: typed, shape: dims, begin, end });
  }

  const byStart = planned.filter((p) => p.end > p.begin).sort((a, b) => a.begin - b.begin);
  // Empty tensors occupy no bytes, so they cannot overlap anything.
  let furthest: PlannedTensor | undefined;
  for (const cur of byStart) {
    if (furthest && cur.begin < furthest.end) {
      fail(
        `tensors "${furthest.name}" [${furthest.begin}, ${furthest.end}] and "${cur.name}" [${cur.begin}, ${cur.end}] overlap`,
      );
    }
    if (!furthest || cur.end > furthest.end) furthest = cur;
  }

  const tensors = new Map<string, IndexedTensor>();
  for (const p of planned) {
    const raw = bytes.subarray(dataStart + p.begin, dataStart + p.end);
    tensors.set(p.name, { dtype: p.dtype, shape: p.shape, bytes: raw.byteLength, decode: () => decode(p.dtype, raw) });
  }
  return { tensors, metadata };
}

function decode(dtype: SafetensorsDtype, raw: Uint8Array): Float32Array {
  const n = raw.byteLength / DTYPE_BYTES[dtype];
  if (dtype === 'F32') {
    if (littleEndianHost) {
      // An explicit copy: the data may be unaligned, and a Node Buffer's slice() would share memory.
      const copy = new Uint8Array(raw.byteLength);
      copy.set(raw);
      return new Float32Array(copy.buffer);
    }
    const out = new Float32Array(n);
    const dv = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
    for (let i = 0; i < n; i++) out[i] = dv.getFloat32(i * 4, true);
    return out;
  }
  const halves = new Uint16Array(n);
  for (let i = 0; i < n; i++) halves[i] = raw[2 * i]! | (raw[2 * i + 1]! << 8);
  if (dtype === 'F16') return halvesToF32(halves);
  // bfloat16 is the top half of a float32, so widening is a shift.
  const out = new Float32Array(n);
  const bits = new Uint32Array(out.buffer);
  for (let i = 0; i < n; i++) bits[i] = halves[i]! << 16;
  return out;
}

/** A tensor's name and shape, as a safetensors header lists it. */
export type TensorEntry = Pick<TensorToWrite, 'name' | 'shape'>;

/**
 * The start of a safetensors file: its header for these tensors stored as `dtype`, and the
 * order (by name, as the format's writers sort them) in which their data must follow.
 */
export function safetensorsHeader(tensors: readonly TensorEntry[], metadata: Record<string, string> = {}, dtype: SafetensorsDtype = 'F32'): { bytes: Uint8Array; order: TensorEntry[]; size: number } {
  const width = DTYPE_BYTES[dtype];
  const sorted = [...tensors].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const header: Record<string, unknown> = {
    // transformers refuses to load weights whose metadata lacks format "pt".
    __metadata__: { ...metadata, format: 'pt' },
  };
  let offset = 0;
  for (let i = 0; i < sorted.length; i++) {
    const t = sorted[i]!;
    if (t.name === '__metadata__') throw new Error('cannot name a tensor "__metadata__"');
    if (i > 0 && sorted[i - 1]!.name === t.name) throw new Error(`duplicate tensor name "${t.name}"`);
    if (!t.shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
      throw new Error(`tensor "${t.name}" shape ${fmtShape(t.shape)} is not a list of non-negative integers`);
    }
    const count = t.shape.reduce((a, b) => a * b, 1);
    header[t.name] = { dtype, shape: t.shape, data_offsets: [offset, offset + count * width] };
    offset += count * width;
  }
  const json = new TextEncoder().encode(JSON.stringify(header));
  // Padding keeps the data section 8-byte aligned so readers can map tensors in place.
  const headerLen = Math.ceil(json.byteLength / 8) * 8;
  const bytes = new Uint8Array(8 + headerLen);
  new DataView(bytes.buffer).setBigUint64(0, BigInt(headerLen), true);
  bytes.set(json, 8);
  bytes.fill(0x20, 8 + json.byteLength);
  return { bytes, order: sorted, size: bytes.length + offset };
}

/** A tensor's data as `dtype` bytes (little-endian), as it follows a safetensors header. */
export function encodeTensorData(data: Float32Array, dtype: SafetensorsDtype): Uint8Array {
  if (dtype === 'F32' && littleEndianHost) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const out = new Uint8Array(data.length * DTYPE_BYTES[dtype]);
  const view = new DataView(out.buffer);
  if (dtype === 'F32') {
    for (let i = 0; i < data.length; i++) view.setFloat32(i * 4, data[i]!, true);
    return out;
  }
  // A Float32Array's offset is a multiple of 4: its bits are read in place, not copied.
  const bits = new Uint32Array(data.buffer, data.byteOffset, data.length);
  const narrow = dtype === 'BF16' ? f32ToBf16Bits : f32ToF16Bits;
  for (let i = 0; i < bits.length; i++) view.setUint16(2 * i, narrow(bits[i]!), true);
  return out;
}

/** Safetensors bytes of the tensors (float32 data), stored as `dtype`. */
export function serializeSafetensors(tensors: TensorToWrite[], metadata: Record<string, string> = {}, dtype: SafetensorsDtype = 'F32'): Uint8Array {
  for (const t of tensors) {
    const count = t.shape.reduce((a, b) => a * b, 1);
    if (Number.isSafeInteger(count) && count !== t.data.length) {
      throw new Error(`tensor "${t.name}" has ${t.data.length} elements but shape ${fmtShape(t.shape)} needs ${count}`);
    }
  }
  const { bytes, order, size } = safetensorsHeader(tensors, metadata, dtype);
  const out = new Uint8Array(size);
  out.set(bytes);
  let pos = bytes.length;
  const data = new Map(tensors.map((t) => [t.name, t.data]));
  for (const t of order) {
    const encoded = encodeTensorData(data.get(t.name)!, dtype);
    out.set(encoded, pos);
    pos += encoded.length;
  }
  return out;
}
