// The Node halves of benchmark suites: bench/node/<suite>.ts measures the same work as the
// page's suite of that name, but in Node on Dawn. scripts/bench.mjs runs them before it opens
// the page (one at a time, so they never compete with the browser for the CPU) and hands
// their JSON to the page, whose suite prints it beside the browser figures.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { gpuEnv } from './gpu-env.mjs';

/** The requested suites that have a Node half ('all' selects every one). */
export function nodeSuites(root, requested) {
  const dir = join(root, 'bench', 'node');
  const available = existsSync(dir)
    ? readdirSync(dir)
        .filter((f) => f.endsWith('.ts'))
        .map((f) => f.slice(0, -3))
        .sort()
    : [];
  return requested.includes('all') ? available : requested.filter((name) => available.includes(name));
}

/**
 * Runs bench/node/<name>.ts under tsx with the Dawn environment; resolves to its JSON
 * output, or to `{ error }` when it fails or outlives `timeoutMs`. Its progress lines go to
 * `progress`.
 */
export function runNodeSuite(root, name, { quick, progress, timeoutMs }) {
  const tmp = mkdtempSync(join(os.tmpdir(), `bench-node-${name}-`));
  const outFile = join(tmp, 'result.json');
  const args = ['--import', 'tsx', join('bench', 'node', `${name}.ts`), '--out', outFile, ...(quick ? ['--quick'] : [])];
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { cwd: root, env: gpuEnv(), stdio: ['ignore', 'ignore', 'pipe'] });
    let tail = '';
    let pending = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk) => {
      pending += chunk;
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        if (!line) continue;
        progress(`  ${line}`);
        tail = `${tail}\n${line}`.slice(-4000);
      }
    });
    const timer = setTimeout(() => {
      tail += `\ntimed out after ${timeoutMs / 60_000} min`;
      child.kill('SIGKILL');
    }, timeoutMs);
    const finish = (result) => {
      clearTimeout(timer);
      rmSync(tmp, { recursive: true, force: true });
      resolve(result);
    };
    child.on('error', (e) => finish({ error: `could not start node: ${e.message}` }));
    child.on('close', (code, signal) => {
      if (code === 0 && existsSync(outFile)) {
        try {
          finish(JSON.parse(readFileSync(outFile, 'utf8')));
        } catch (e) {
          finish({ error: `unreadable result: ${e.message}` });
        }
        return;
      }
      finish({ error: `bench/node/${name}.ts exited with ${signal ?? `code ${code}`}:${tail}` });
    });
  });
}
