import { describe, expect, it } from 'vitest';
import { zipFiles } from '../util/zip';
import { readPicked } from './pickedFiles';

const text = (s: string) => new TextEncoder().encode(s);
const picked = (path: string, bytes: Uint8Array) => ({ path, blob: new Blob([bytes.slice()]) });

describe('files the user picked, read in the engine', () => {
  it('unpacks a .zip below its one folder, keeping nested paths', async () => {
    const zip = zipFiles([
      { name: 'run/config.json', bytes: text('{}') },
      { name: 'run/last/model.safetensors', bytes: Uint8Array.of(1, 2, 3) },
    ]);
    const read = await readPicked([picked('exports/run-7.zip', zip)]);
    expect(read.name).toBe('run-7');
    expect(read.files.map((f) => f.name).sort()).toEqual(['config.json', 'last/model.safetensors']);
    expect([...read.files.find((f) => f.name === 'last/model.safetensors')!.bytes]).toEqual([1, 2, 3]);
  });

  it('reads a folder’s loose files by their path in it', async () => {
    const read = await readPicked([picked('ckpt/config.json', text('{"a":1}')), picked('ckpt/tokenizer.json', text('{}'))]);
    expect(read).toMatchObject({ name: 'ckpt' });
    expect(read.files.map((f) => f.name)).toEqual(['config.json', 'tokenizer.json']);
    expect(new TextDecoder().decode(read.files[0]!.bytes)).toBe('{"a":1}');
    expect((await readPicked([picked('config.json', text('{}'))])).name).toBe('imported checkpoint');
  });

  it('refuses nothing, a .zip with other files, and a file that is no zip, with the reason', async () => {
    await expect(readPicked([])).rejects.toThrow('no files chosen');
    await expect(readPicked([picked('a.zip', zipFiles([{ name: 'x', bytes: text('1') }])), picked('b.json', text('{}'))])).rejects.toThrow('choose either one .zip');
    await expect(readPicked([picked('dir/broken.zip', text('not a zip'))])).rejects.toThrow(/^broken\.zip is not a readable zip archive/);
  });
});
