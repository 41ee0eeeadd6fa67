import { zipSync } from 'fflate';

/** Named files as one .zip: safetensors are incompressible floats, stored; JSON is deflated. */
export function zipFiles(files: readonly { name: string; bytes: Uint8Array }[]): Uint8Array {
  return zipSync(Object.fromEntries(files.map((f) => [f.name, [f.bytes, { level: f.name.endsWith('.json') || f.name.endsWith('.jsonl') ? 6 : 0 }]])));
}
