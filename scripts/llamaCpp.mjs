// llama.cpp's Vulkan build, for the decode peer bench/peers/llama_decode.c: the prebuilt
// libraries node-llama-cpp publishes on the npm registry (@node-llama-cpp/linux-x64-vulkan),
// and the headers of the same llama.cpp release, from the source bundle inside node-llama-cpp's
// own package. Both tarballs are pinned by version and integrity, unpacked into
// .cache/llama-cpp, and the peer is compiled there against them with the machine's C compiler.
// Nothing is installed; node_modules does not change.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const VERSION = '3.22.1';
/** The llama.cpp release both packages are built from (node-llama-cpp's llama/binariesGithubRelease.json). */
export const LLAMA_CPP_RELEASE = 'v0.5.0';
const PACKAGES = {
  headers: { spec: `node-llama-cpp@${VERSION}`, integrity: 'sha512-bltIipuWmc123H7tMIgDGKSsSrhmhlQYeVUC48XTjVW7XGJJiJJyCdlTMzQ/LiWoPkGDpcL4FviDpgw7qfTiDw==' },
  vulkan: { spec: `@node-llama-cpp/linux-x64-vulkan@${VERSION}`, integrity: 'sha512-bBxqU+JOcBu1nb5Qj2zcMci+JByT1E8EajHvYodyNfVIPkEhXh+/HMwR1/BT7xP08YK0hks+kM8fglER0P8JEg==' },
};
const DIR = join(root, '.cache', 'llama-cpp', VERSION);
/** The libraries (llama, ggml and its backends, loaded from this folder) and the peer beside them. */
export const LLAMA_CPP_LIBS = join(DIR, 'lib');
export const LLAMA_DECODE = join(LLAMA_CPP_LIBS, 'llama_decode');
const SOURCE = join(root, 'bench', 'peers', 'llama_decode.c');
const TIMEOUT_MS = 300_000;

/** The environment the peer runs in: ggml finds its backends beside it. */
export function llamaCppEnv(base = process.env) {
  return { ...base, LLAMA_DECODE_LIBS: LLAMA_CPP_LIBS };
}

const sh = (cmd, args, cwd) => execFileSync(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], timeout: TIMEOUT_MS, encoding: 'utf8' });

/** Fetches `pkg`'s tarball into `dir` with npm pack and checks it against its pinned integrity. */
function pack(pkg, dir) {
  const [{ filename }] = JSON.parse(sh('npm', ['pack', pkg.spec, '--pack-destination', dir, '--json', '--silent'], dir));
  const file = join(dir, filename);
  const got = `sha512-${createHash('sha512').update(readFileSync(file)).digest('base64')}`;
  if (got !== pkg.integrity) throw new Error(`${pkg.spec}: integrity ${got}, expected ${pkg.integrity}`);
  return file;
}

function unpackLibraries(tmp) {
  const tgz = pack(PACKAGES.vulkan, tmp);
  const out = join(tmp, 'vulkan');
  mkdirSync(out);
  sh('tar', ['-xzf', tgz, '-C', out]);
  const bins = join(out, 'package', 'bins', 'linux-x64-vulkan');
  mkdirSync(LLAMA_CPP_LIBS, { recursive: true });
  for (const f of readdirSync(bins)) if (f.endsWith('.so') || f.endsWith('.json')) copyFileSync(join(bins, f), join(LLAMA_CPP_LIBS, f));
}

function unpackHeaders(tmp) {
  const tgz = pack(PACKAGES.headers, tmp);
  const out = join(tmp, 'headers');
  mkdirSync(out);
  // Only the bundle of llama.cpp's source is taken from the package, and only its headers from that.
  sh('tar', ['-xzf', tgz, '-C', out, 'package/llama/gitRelease.bundle']);
  const git = join(tmp, 'src');
  sh('git', ['clone', '--quiet', '--no-checkout', join(out, 'package', 'llama', 'gitRelease.bundle'), git]);
  const include = join(DIR, 'include');
  mkdirSync(include, { recursive: true });
  const tar = join(tmp, 'include.tar');
  sh('git', ['-C', git, 'archive', '--output', tar, 'HEAD', 'include', 'ggml/include']);
  sh('tar', ['-xf', tar, '-C', include]);
}

function compile() {
  const include = join(DIR, 'include');
  const lib = (name) => `-l:${readdirSync(LLAMA_CPP_LIBS).find((f) => f.startsWith(name) && f.endsWith('.so'))}`;
  sh(process.env.CC || 'cc', [
    '-O2', '-std=c11', '-Wall', '-Wextra', '-Werror', '-D_POSIX_C_SOURCE=200809L',
    `-I${join(include, 'include')}`, `-I${join(include, 'ggml', 'include')}`,
    SOURCE, '-o', LLAMA_DECODE, `-L${LLAMA_CPP_LIBS}`,
    lib('libllama.vulkan'), lib('libggml.vulkan'), '-l:libggml-base.so', '-Wl,-rpath,$ORIGIN',
  ]);
}

const built = () => existsSync(LLAMA_DECODE) && statSync(LLAMA_DECODE).mtimeMs >= statSync(SOURCE).mtimeMs;

/**
 * The peer, built where it is not (or is older than its source). Returns its path, or a
 * sentence saying why there is none (not Linux x64, no registry, no C compiler).
 */
export function ensureLlamaCpp() {
  if (process.platform !== 'linux' || process.arch !== 'x64') return { why: `llama.cpp's prebuilt Vulkan libraries are for Linux x64, not ${process.platform}-${process.arch}` };
  if (built()) return { binary: LLAMA_DECODE };
  const tmp = join(DIR, 'tmp');
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  try {
    if (!existsSync(join(LLAMA_CPP_LIBS, 'libggml-vulkan.so'))) unpackLibraries(tmp);
    if (!existsSync(join(DIR, 'include', 'include', 'llama.h'))) unpackHeaders(tmp);
    rmSync(LLAMA_DECODE, { force: true }); // a failed build leaves no older peer behind
    compile();
    writeFileSync(join(DIR, 'release.txt'), `node-llama-cpp ${VERSION}, llama.cpp ${LLAMA_CPP_RELEASE}\n`);
    return { binary: LLAMA_DECODE };
  } catch (e) {
    const why = String(e.stderr || e.message).trim().split('\n').slice(-3).join(' ');
    return { why: `llama.cpp's peer could not be built: ${why}` };
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const r = ensureLlamaCpp();
  console.log(r.binary ? `llama.cpp peer: ${r.binary}` : `llama.cpp peer: none (${r.why})`);
}
