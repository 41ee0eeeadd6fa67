#!/usr/bin/env node
/**
 * npm run gpu-kit -- --out DIR [--platform linux-x64] [--with-node] [--debs DIR]
 *
 * Builds one small folder that runs the GPU report's Node half (bench/node/gpu.ts) on a
 * machine with a GPU driver and Node 20+, with no npm install and no registry: the report
 * bundled by esbuild, the shaders it reads, and Dawn's binary for one platform (with
 * --with-node, Node itself too, xz-compressed), and the native peers (bench/peers/
 * torch_decode.py), which run where python3 has PyTorch with CUDA. With --debs, the Debian
 * packages in DIR (a Vulkan loader: libvulkan1) travel too, unpacked on a machine that lacks
 * the loader. DIR/run.sh [--quick] runs it all on the GPU and writes DIR/results/ (or
 * KIT_RESULTS): gpu.json (the engine), peers.json (PyTorch), ratios.md (the engine beside the
 * peers), step.json (one SAGE step on the Qwen-shaped f16 base with LoRA, bench/node/step.ts),
 * gpu.txt (nvidia-smi) and kit.log (all it printed, with each stage's seconds). DIR/compare.sh
 * ARGS, run from a checkout's root, runs `npm run compare` there on the GPU (its runs side by
 * side with --jobs), bundled with the evolve it starts. Where scripts/llamaCpp.mjs can build
 * llama.cpp's decode peer, it travels too (llama/, xz-compressed: the peer and llama.cpp's Vulkan
 * libraries), and run.sh runs it after the PyTorch peers: results/llama.json and
 * ratios-llama.md (the engine beside llama.cpp's Vulkan backend).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCli } from '../src/cli/options.ts';
import { gpuKitCli } from '../bench/gpuKitCli.ts';
import { KIT_SOURCE_FILE, sourceCommit } from '../src/cli/provenance.ts';
import { ensureLlamaCpp, LLAMA_CPP_LIBS } from './llamaCpp.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

const mkdir = (dir) => mkdirSync(dir, { recursive: true });

function run(cmd, args) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited with ${r.status ?? r.signal}`);
}

// What run.sh and compare.sh both need first: Node, Dawn's binary and a Vulkan loader unpacked
// once, and the GPU chosen.
const SETUP_SH = `# Sourced by run.sh and compare.sh: sets $kit and $node, unpacks what travelled packed.
set -euo pipefail
kit=$(cd "$(dirname "\${BASH_SOURCE[0]}")" && pwd)
# xz, or Python's lzma where the machine has no xz.
unxz() { if command -v xz >/dev/null; then xz -dc "$1"; else python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$1"; fi; }
node=node
if [ -f "$kit/node.xz" ]; then
  [ -x "$kit/node" ] || { unxz "$kit/node.xz" > "$kit/node" && chmod +x "$kit/node"; }
  node="$kit/node"
fi
command -v "$node" >/dev/null || { echo "gpu-kit: Node 20+ is needed (or build the kit with --with-node)"; exit 2; }
for f in "$kit"/node_modules/webgpu/dist/*/*.xz "$kit"/llama/lib/*.xz; do
  if [ -f "$f" ] && [ ! -f "\${f%.xz}" ]; then unxz "$f" > "\${f%.xz}"; fi
done
if [ -f "$kit/llama/lib/llama_decode" ]; then chmod +x "$kit/llama/lib/llama_decode"; fi
export XDG_RUNTIME_DIR=\${XDG_RUNTIME_DIR:-$(mktemp -d)}
if [ -n "\${KIT_SWIFTSHADER:-}" ]; then export VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json; else
  export SAGE_GPU=hardware
  # A machine with a driver but no Vulkan loader: the loader travels as .deb files (--debs).
  if ! ldconfig -p | grep -q libvulkan.so.1 && [ -d "$kit/debs" ]; then
    for f in "$kit"/debs/*.deb; do dpkg -x "$f" /; done; ldconfig
  fi
  # NVIDIA's ICD where containers mount the driver (the loader does not look there by itself).
  icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  # (an if, not an && list: as setup.sh's last command a false test would end the sourcing script)
  if [ -z "\${VK_DRIVER_FILES:-}" ] && [ -f "$icd" ]; then export VK_DRIVER_FILES=$icd; fi
fi
`;

const RUN_SH = `#!/usr/bin/env bash
# The GPU report on this machine's GPU (SAGE_GPU=hardware; KIT_SWIFTSHADER=1 tries SwiftShader
# instead, where Chromium's is installed). Arguments go to the report (--quick for a smoke test).
# Stages in order: the report, the PyTorch peers, llama.cpp's peer, one SAGE step; each is saved
# as it goes (after each model), so a run stopped at a time limit keeps what it finished.
#   KIT_RESULTS=DIR  where the results go (default the kit's results/): at most 8 files, one log
#                    (kit.log), so that a GPU loan's output folder takes them all
#   KIT_NO_REPORT=1  reuse DIR/gpu.json (or KIT_ENGINE=FILE) from an earlier call for the peers
#   KIT_NO_PEERS=1, KIT_NO_LLAMA=1, KIT_NO_STEP=1  skip that stage
source "$(dirname "$0")/setup.sh"
res="\${KIT_RESULTS:-$kit/results}"; mkdir -p "$res"; res=$(cd "$res" && pwd)
engine=$(realpath -m "\${KIT_ENGINE:-$res/gpu.json}")
exec > >(tee -a "$res/kit.log") 2>&1
stage() { echo "gpu-kit: $1 took $(( SECONDS - t0 )) s ($SECONDS s in all)"; }
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > "$res/gpu.txt" 2>&1 || true
cd "$kit"
t0=$SECONDS
if [ -z "\${KIT_NO_REPORT:-}" ]; then
  "$node" k/b/gpu.mjs --out "$engine" "$@"
  stage "the report ($engine)"
elif [ ! -f "$engine" ]; then
  echo "gpu-kit: KIT_NO_REPORT needs the report of an earlier call at $engine (or KIT_ENGINE=FILE)"; exit 2
fi
# The peers on the same card, where python3 has PyTorch with CUDA.
t0=$SECONDS
if [ -z "\${KIT_NO_PEERS:-}" ] && python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  quick=(); for a in "$@"; do [ "$a" = --quick ] && quick=(--quick); done
  PYTHONUNBUFFERED=1 python3 peers/torch_decode.py --out "$res/peers.json" --engine "$engine" \${quick[@]+"\${quick[@]}"} | tee "$res/ratios.md"
  stage "the PyTorch peers"
else
  echo "gpu-kit: the PyTorch peers did not run (no PyTorch with CUDA here, or KIT_NO_PEERS)"
fi
# llama.cpp's Vulkan backend on the same shapes and weights; its GGUF files (about 1 GB for the
# Qwen shape) are written to a temporary folder, one at a time.
t0=$SECONDS
if [ -z "\${KIT_NO_LLAMA:-}" ] && [ -x "$kit/llama/lib/llama_decode" ]; then
  gguf=$(mktemp -d)
  "$node" k/b/llama.mjs --binary "$kit/llama/lib/llama_decode" --engine "$engine" --out "$res/llama.json" --dir "$gguf" \
    | tee "$res/ratios-llama.md" || echo "gpu-kit: the llama.cpp peer failed (kit.log)"
  rm -rf "$gguf"
  stage "llama.cpp's peer"
else
  echo "gpu-kit: the llama.cpp peer did not run (not in this kit, or KIT_NO_LLAMA)"
fi
# Last, so that a short loan loses only this: one SAGE step on the Qwen-shaped f16 base with
# LoRA, phase by phase, with the GPU's busy share.
t0=$SECONDS
if [ -z "\${KIT_NO_STEP:-}" ]; then
  "$node" k/b/step.mjs --out "$res/step.json" "$@"
  stage "the SAGE step ($res/step.json)"
fi
`;

// npm run compare (and the evolve runs it starts) on the GPU, from a repository's root: its
// models, seeds and held-out files are read from there, its runs written there.
const COMPARE_SH = `#!/usr/bin/env bash
# npm run compare on this machine's GPU, run from a checkout's root (its data/ and runs/):
# e.g. bash KIT/compare.sh --pilot --levels 3,4,5 --jobs 4. Arguments go to compare.
source "$(dirname "$0")/setup.sh"
exec "$node" "$kit/k/b/compare.mjs" "$@"
`;

await runCli(gpuKitCli, async (o) => {
  if (!o.out) {
    console.error('gpu-kit: --out DIR is required');
    process.exit(2);
  }
  const out = resolve(o.out);
  const esbuild = join(root, 'node_modules', '.bin', 'esbuild');
  const dawn = join(root, 'node_modules', 'webgpu', 'dist', o.platform);
  if (!existsSync(esbuild) || !existsSync(dawn)) {
    console.error('gpu-kit: run npm ci first (esbuild or the webgpu package is missing)');
    process.exit(2);
  }
  rmSync(out, { recursive: true, force: true });
  // The bundle sits two folders below the kit's root, as bench/node/gpu.ts sits below the
  // repository's: the platform finds shaders/ two folders up from itself.
  mkdirSync(join(out, 'k', 'b'), { recursive: true });
  // The report, and compare with the evolve it spawns (found beside it), each bundled whole.
  for (const [entry, name] of [['bench/node/gpu.ts', 'gpu'], ['bench/node/step.ts', 'step'], ['src/cli/compare.ts', 'compare'], ['src/cli/evolve.ts', 'evolve'], ['bench/node/llama.ts', 'llama']]) {
    run(esbuild, [
      entry, '--bundle', '--platform=node', '--format=esm', '--target=node20', '--log-level=warning',
      `--outfile=${join(out, 'k', 'b', `${name}.mjs`)}`, '--external:webgpu', '--external:pyodide',
      "--banner:js=import { createRequire as __cr } from 'module'; const require = __cr(import.meta.url);",
    ]);
  }
  cpSync(join(root, 'shaders'), join(out, 'shaders'), { recursive: true });
  // The SAGE step's seeds, where it reads them from the kit's root as from a checkout's.
  mkdir(join(out, 'data', 'seeds'));
  copyFileSync(join(root, 'data', 'seeds', 'curriculum-500.jsonl'), join(out, 'data', 'seeds', 'curriculum-500.jsonl'));
  const webgpu = join(out, 'node_modules', 'webgpu');
  mkdirSync(join(webgpu, 'dist'), { recursive: true });
  for (const f of ['index.js', 'package.json', 'LICENSE.md']) copyFileSync(join(root, 'node_modules', 'webgpu', f), join(webgpu, f));
  // Dawn's binary travels xz-compressed (21 MB, 5 MB packed); run.sh unpacks it once.
  mkdir(join(webgpu, 'dist', o.platform));
  run('bash', ['-c', `cd "${dawn}" && for f in *; do xz -T2 -c "$f" > "${join(webgpu, 'dist', o.platform)}/$f.xz"; done`]);
  // Resolved when the bundle loads (the code sandbox's import), never run by the report.
  mkdirSync(join(out, 'node_modules', 'pyodide'), { recursive: true });
  copyFileSync(join(root, 'node_modules', 'pyodide', 'package.json'), join(out, 'node_modules', 'pyodide', 'package.json'));
  mkdir(join(out, 'peers'));
  copyFileSync(join(root, 'bench', 'peers', 'torch_decode.py'), join(out, 'peers', 'torch_decode.py'));
  // llama.cpp's peer: the program and the libraries it loads (ggml's Vulkan and CPU backends).
  const llama = ensureLlamaCpp();
  if (llama.binary) {
    const lib = join(out, 'llama', 'lib');
    mkdir(lib);
    const files = readdirSync(LLAMA_CPP_LIBS).filter((f) => f === 'llama_decode' || (f.endsWith('.so') && f !== 'libllama-common.so'));
    run('bash', ['-c', `cd "${LLAMA_CPP_LIBS}" && for f in ${files.join(' ')}; do xz -T2 -c "$f" > "${lib}/$f.xz"; done`]);
    copyFileSync(join(LLAMA_CPP_LIBS, '..', 'release.txt'), join(out, 'llama', 'release.txt'));
  } else {
    console.log(`gpu-kit: without llama.cpp's peer (${llama.why})`);
  }
  if (o.debs) {
    const debs = readdirSync(resolve(o.debs)).filter((f) => f.endsWith('.deb'));
    if (debs.length === 0) {
      console.error(`gpu-kit: --debs ${o.debs} holds no .deb files`);
      process.exit(2);
    }
    mkdir(join(out, 'debs'));
    for (const f of debs) copyFileSync(join(resolve(o.debs), f), join(out, 'debs', f));
  }
  if (o['with-node']) run('bash', ['-c', `xz -T2 -c "${process.execPath}" > "${join(out, 'node.xz')}"`]);
  // The commit the kit was built from, which its records name (sourceCommit reads it where there is no git).
  const source = sourceCommit(root);
  if (source) writeFileSync(join(out, KIT_SOURCE_FILE), JSON.stringify(source));
  else console.log('gpu-kit: not built from a git checkout: its records will name no commit');
  writeFileSync(join(out, 'setup.sh'), SETUP_SH);
  for (const [file, text] of [['run.sh', RUN_SH], ['compare.sh', COMPARE_SH]]) {
    writeFileSync(join(out, file), text);
    chmodSync(join(out, file), 0o755);
  }
  const du = spawnSync('du', ['-sh', out], { encoding: 'utf8' });
  console.log(`gpu-kit: ${du.stdout.trim() || out}; on the GPU machine run ${join(o.out, 'run.sh')} [--quick] (the report, its peers, then one SAGE step), or ${join(o.out, 'compare.sh')} ARGS from a checkout's root (npm run compare)`);
});
