// Mesa's lavapipe, a CPU Vulkan driver that offers `shader-f16`, for the tests of the kernels
// that compute in f16. SwiftShader (the suite's driver) has no f16, and Debian 12's own Mesa
// (22.3) is refused by Dawn; Mesa 25 from Debian's backports offers f16 and subgroups. The
// driver is unpacked into .cache/lavapipe, never installed: nothing on the system changes, and
// only the processes started with lavapipeEnv see it, with those of its libraries this machine
// lacks (an LLVM, a newer libdrm) unpacked beside it.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const DIR = join(root, '.cache', 'lavapipe');
export const LAVAPIPE_ICD = join(DIR, 'lvp_icd.json');
const MIRROR = 'http://deb.debian.org/debian';
const APT_TIMEOUT_MS = 180_000;

/** The environment of a process that runs Dawn on the unpacked driver (ensureLavapipe first). */
export function lavapipeEnv(icd, base = process.env) {
  const lib = dirname(JSON.parse(readFileSync(icd, 'utf8')).ICD.library_path);
  return { ...base, VK_ICD_FILENAMES: icd, LD_LIBRARY_PATH: [lib, base.LD_LIBRARY_PATH].filter(Boolean).join(':') };
}

/** The ICD file of the unpacked driver, or null where it is not here. */
export function lavapipeIcd() {
  if (!existsSync(LAVAPIPE_ICD)) return null;
  const lib = JSON.parse(readFileSync(LAVAPIPE_ICD, 'utf8')).ICD?.library_path;
  return lib && existsSync(lib) ? LAVAPIPE_ICD : null;
}

function codename() {
  const release = existsSync('/etc/os-release') ? readFileSync('/etc/os-release', 'utf8') : '';
  return /^VERSION_CODENAME=(\w+)/m.exec(release)?.[1] ?? null;
}

/**
 * Fetches Debian's mesa-vulkan-drivers (backports first, else the release's own) with apt-get
 * over a private package list, and unpacks it. Returns the ICD file, or a sentence saying why
 * there is none (no Debian here, the archive unreachable); the f16 tests are then skipped.
 */
export function ensureLavapipe() {
  const have = lavapipeIcd();
  if (have) return { icd: have };
  const release = codename();
  if (!release || !existsSync('/etc/debian_version')) return { why: 'this machine is not Debian, whose backports carry the Mesa it needs' };
  const apt = join(DIR, 'apt');
  mkdirSync(join(apt, 'lists', 'partial'), { recursive: true });
  writeFileSync(join(apt, 'sources.list'), [`deb ${MIRROR} ${release}-backports main`, `deb ${MIRROR} ${release} main`, ''].join('\n'));
  const opts = [
    `-o=Dir::Etc::SourceList=${join(apt, 'sources.list')}`,
    '-o=Dir::Etc::SourceParts=/nonexistent',
    `-o=Dir::State::Lists=${join(apt, 'lists')}`,
    '-o=Dir::Cache::pkgcache=',
    '-o=Dir::Cache::srcpkgcache=',
    '-o=Debug::NoLocking=1',
    '-o=APT::Sandbox::User=',
    '-qq',
  ];
  // A bound on each apt-get: an archive that never answers ends the attempt, not npm test.
  const run = (args) => execFileSync('apt-get', [...opts, ...args], { stdio: ['ignore', 'ignore', 'pipe'], timeout: APT_TIMEOUT_MS });
  try {
    run(['update']);
    // apt's own resolver, against what this machine has installed: the driver and whichever
    // of its libraries are missing or too old here (LLVM, libdrm), downloaded, not installed.
    const debs = join(DIR, 'debs');
    rmSync(debs, { recursive: true, force: true });
    mkdirSync(join(debs, 'partial'), { recursive: true });
    const fetch = (pkg) => run([`-o=Dir::Cache::Archives=${debs}`, '--download-only', '--no-install-recommends', '-y', 'install', pkg]);
    try {
      fetch(`mesa-vulkan-drivers/${release}-backports`);
    } catch {
      fetch('mesa-vulkan-drivers'); // no backport of it for this release: the release's own Mesa
    }
    const fetched = readdirSync(debs).filter((f) => f.endsWith('.deb'));
    const deb = fetched.find((f) => f.startsWith('mesa-vulkan-drivers_'));
    if (!deb) return { why: `apt-get found no mesa-vulkan-drivers for Debian ${release} newer than this machine's` };
    // A C library of another release cannot be loaded beside this machine's own.
    const core = fetched.find((f) => /^(libc6|libgcc-s1|libstdc\+\+6)_/.test(f));
    if (core) return { why: `${deb} needs a newer ${core.split('_')[0]} than this machine has` };
    const unpacked = join(DIR, 'root');
    rmSync(unpacked, { recursive: true, force: true });
    for (const f of fetched) execFileSync('dpkg-deb', ['-x', join(debs, f), unpacked]);
    const lib = findFile(unpacked, 'libvulkan_lvp.so');
    if (!lib) return { why: `${deb} holds no libvulkan_lvp.so` };
    const shipped = findFile(unpacked, 'lvp_icd.json');
    const api = (shipped && JSON.parse(readFileSync(shipped, 'utf8')).ICD?.api_version) ?? '1.3.0';
    writeFileSync(LAVAPIPE_ICD, JSON.stringify({ file_format_version: '1.0.0', ICD: { library_path: lib, api_version: api } }, null, 2));
    return { icd: LAVAPIPE_ICD, fetched: deb };
  } catch (e) {
    const said = e?.code === 'ETIMEDOUT' ? `no answer in ${APT_TIMEOUT_MS / 1000} s` : String(e?.stderr ?? e?.message ?? e).trim().split('\n')[0];
    return { why: `apt-get could not fetch Debian's mesa-vulkan-drivers (${said})` };
  }
}

function findFile(dir, name) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      const found = findFile(path, name);
      if (found) return found;
    } else if (entry.name === name) return path;
  }
  return null;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const got = ensureLavapipe();
  console.log(got.icd ? `lavapipe (f16 kernel tests): ${got.fetched ? `${got.fetched} unpacked, ` : ''}${got.icd}` : `lavapipe (f16 kernel tests): not here, ${got.why}`);
}
