#!/usr/bin/env node
/**
 * npm run gpu-kit -- --out DIR [--platform linux-x64] [--with-node]
 *
 * Builds one small folder that runs the GPU report's Node half (bench/node/gpu.ts) on a
 * machine with a GPU driver and Node 20+, with no npm install and no registry: the report
 * bundled by esbuild, the shaders it reads, and Dawn's binary for one platform (with
 * --with-node, Node itself too, xz-compressed). DIR/run.sh [--quick] runs it on the GPU and
 * writes DIR/results/gpu.json and the table to paste.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCli } from '../src/cli/options.ts';
import { gpuKitCli } from '../bench/gpuKitCli.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

function run(cmd, args) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited with ${r.status ?? r.signal}`);
}

const RUN_SH = `#!/usr/bin/env bash
# The GPU report on this machine's GPU (SAGE_GPU=hardware; KIT_SWIFTSHADER=1 tries SwiftShader
# instead, where Chromium's is installed). Arguments go to the report (--quick for a smoke test).
set -euo pipefail
kit=$(cd "$(dirname "$0")" && pwd)
node=node
if [ -f "$kit/node.xz" ]; then
  [ -x "$kit/node" ] || { xz -dc "$kit/node.xz" > "$kit/node" && chmod +x "$kit/node"; }
  node="$kit/node"
fi
command -v "$node" >/dev/null || { echo "gpu-kit: Node 20+ is needed (or build the kit with --with-node)"; exit 2; }
export XDG_RUNTIME_DIR=\${XDG_RUNTIME_DIR:-$(mktemp -d)}
if [ -n "\${KIT_SWIFTSHADER:-}" ]; then export VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json; else export SAGE_GPU=hardware; fi
mkdir -p "$kit/results"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$kit/results/gpu.txt" 2>&1 || true
cd "$kit"
"$node" k/b/gpu.mjs --out "$kit/results/gpu.json" "$@"
echo "gpu-kit: results/gpu.json written"
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
  run(esbuild, [
    'bench/node/gpu.ts', '--bundle', '--platform=node', '--format=esm', '--target=node20', '--log-level=warning',
    `--outfile=${join(out, 'k', 'b', 'gpu.mjs')}`, '--external:webgpu', '--external:pyodide',
    "--banner:js=import { createRequire as __cr } from 'module'; const require = __cr(import.meta.url);",
  ]);
  cpSync(join(root, 'shaders'), join(out, 'shaders'), { recursive: true });
  const webgpu = join(out, 'node_modules', 'webgpu');
  mkdirSync(join(webgpu, 'dist'), { recursive: true });
  for (const f of ['index.js', 'package.json', 'LICENSE.md']) copyFileSync(join(root, 'node_modules', 'webgpu', f), join(webgpu, f));
  cpSync(dawn, join(webgpu, 'dist', o.platform), { recursive: true });
  // Resolved when the bundle loads (the code sandbox's import), never run by the report.
  mkdirSync(join(out, 'node_modules', 'pyodide'), { recursive: true });
  copyFileSync(join(root, 'node_modules', 'pyodide', 'package.json'), join(out, 'node_modules', 'pyodide', 'package.json'));
  if (o['with-node']) run('bash', ['-c', `xz -T2 -c "${process.execPath}" > "${join(out, 'node.xz')}"`]);
  writeFileSync(join(out, 'run.sh'), RUN_SH);
  chmodSync(join(out, 'run.sh'), 0o755);
  const du = spawnSync('du', ['-sh', out], { encoding: 'utf8' });
  console.log(`gpu-kit: ${du.stdout.trim() || out}; run ${join(o.out, 'run.sh')} [--quick] on the GPU machine`);
});
