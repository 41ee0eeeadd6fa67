/**
 * llama.cpp's Vulkan backend on the GPU report's shapes (bench/peers/llamaCpp.ts), with the
 * report's JSON for the counts and the ratios. The GPU kit (npm run gpu-kit) carries the peer
 * built by scripts/llamaCpp.mjs and runs this after the report.
 *
 *   node --import tsx bench/node/llama.ts --binary .cache/llama-cpp/3.22.1/lib/llama_decode [--engine gpu.json] [--out llama.json] [--quick]
 *
 * The ratio table (Markdown) goes to stdout, progress to stderr.
 */
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { runCli, type CliDescription } from '../../src/cli/options';
import { decodePlan } from '../gpuReport';
import { writeWhole } from '../nodeHalf';
import { llamaCppPeer, llamaRatioTable, type EngineReport, type LlamaRecord, type LlamaSampling } from '../peers/llamaCpp';

const options = {
  binary: { type: 'string', exists: 'file', required: true, arg: 'FILE', help: "the peer, bench/peers/llama_decode.c built by scripts/llamaCpp.mjs (its libraries beside it)" },
  engine: { type: 'string', exists: 'file', arg: 'FILE', help: "the GPU report's JSON: its counts and shapes, and the ratios" },
  out: { type: 'string', arg: 'FILE', help: 'the JSON record to write' },
  quick: { type: 'flag', help: '1 layer, vocabulary 4,096, 8-token prompts, 6 new tokens: a smoke test (with --engine, its run decides)' },
  rows: { type: 'string', multiple: true, arg: 'N,N', help: "rows decoded together (default the report's: 1,32)" },
  sampling: { type: 'string', multiple: true, arg: 'WHERE', help: 'where llama.cpp samples: host (its default), backend (on the device); default both' },
  dir: { type: 'string', exists: 'dir', arg: 'DIR', help: 'where the GGUF files are written (one at a time, removed after); default the system temp folder' },
} as const;

const cli: CliDescription<typeof options> = {
  name: 'llama-peer',
  summary: "llama.cpp's Vulkan decode on the GPU report's shapes, beside the engine's figures.",
  options,
};

await runCli(cli, async (o) => {
  const rows = o.rows.length ? o.rows.map(Number) : [...decodePlan(o.quick).decodeRows];
  if (rows.some((r) => !Number.isInteger(r) || r < 1)) throw new Error(`--rows takes counts, not ${o.rows.join(',')}`);
  const sampling = (o.sampling.length ? o.sampling : ['host', 'backend']) as LlamaSampling[];
  const bad = sampling.find((s) => s !== 'host' && s !== 'backend');
  if (bad) throw new Error(`--sampling takes host or backend, not ${bad}`);
  const engine = o.engine ? (JSON.parse(readFileSync(o.engine, 'utf8')) as EngineReport) : undefined;
  let build = 'llama.cpp';
  try {
    build = readFileSync(join(dirname(o.binary), '..', 'release.txt'), 'utf8').trim();
  } catch {
    // A binary built elsewhere: its build is not known here.
  }
  // After each shape: a run stopped part-way leaves the shapes it finished.
  const save = (record: LlamaRecord) => {
    if (o.out) writeWhole(o.out, `${JSON.stringify(record, null, 2)}\n`);
  };
  const record = await llamaCppPeer({
    binary: o.binary,
    env: { ...process.env, LLAMA_DECODE_LIBS: dirname(o.binary) },
    dir: o.dir ?? tmpdir(),
    build,
    rows,
    sampling,
    engine,
    quick: o.quick,
    log: (line) => console.error(line),
    save,
  });
  save(record);
  if (engine) console.log(llamaRatioTable(record, engine));
  else console.log(JSON.stringify(record.models.map((m) => ({ model: m.model, decode: m.decode.map((d) => ({ rows: d.rows, host: d.host?.tokensPerS, backend: d.backend?.tokensPerS })), errors: m.errors }))));
});
