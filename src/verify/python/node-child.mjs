// One Python sandbox process (see nodePool.ts). Started by the pool under Node's permission
// model (reading Pyodide's folder and this one, nothing else: no writes, no child processes,
// no workers) and, where Linux allows it, in a network namespace of its own. Before Pyodide
// loads, the socket APIs are removed as well; where no namespace holds, those removals are
// the isolation, checked before any code runs.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { startDriver } from './driver.mjs';

const [pyodideDir, harnessFile, limitsJson, isolation] = process.argv.slice(2);
const send = process.send.bind(process);

// Pyodide reads the fs flag constants through process.binding, which the permission model denies.
const denyBinding = process.binding;
process.binding = (name) => (name === 'constants' ? { fs: fs.constants } : denyBinding(name));

function refuse() {
  throw new Error('sandbox: network access is not allowed');
}
const require = createRequire(import.meta.url);
for (const [name, keys] of Object.entries({
  net: ['connect', 'createConnection', 'createServer'],
  tls: ['connect', 'createServer'],
  dgram: ['createSocket'],
  http: ['request', 'get', 'createServer'],
  https: ['request', 'get', 'createServer'],
  http2: ['connect', 'createServer', 'createSecureServer'],
  dns: ['lookup', 'resolve', 'resolve4', 'resolve6', 'resolveAny'],
  inspector: ['open'],
})) {
  const mod = require(name);
  for (const key of keys) Object.defineProperty(mod, key, { value: refuse, writable: false, configurable: false });
}
const net = require('net');
for (const proto of [net.Socket.prototype, net.Server.prototype]) {
  for (const key of ['connect', 'listen']) Object.defineProperty(proto, key, { value: refuse, writable: false, configurable: false });
}
for (const key of ['fetch', 'WebSocket', 'EventSource', 'XMLHttpRequest']) delete globalThis[key];

/** True when a connection attempt fails before reaching anything. */
function socketsRemoved() {
  try {
    new net.Socket().connect(1, '127.0.0.1');
    return false;
  } catch {
    return typeof globalThis.fetch === 'undefined';
  }
}
if (isolation !== 'netns' && !socketsRemoved()) {
  send({ type: 'refused', reason: 'no network isolation: neither a network namespace nor removed socket APIs hold here' });
  process.exit(3);
}

const limits = JSON.parse(limitsJson);
const { loadPyodide } = await import(`${pyodideDir}/pyodide.mjs`);
const driver = await startDriver(
  (options) => loadPyodide({ ...options, indexURL: `${pyodideDir}/` }),
  fs.readFileSync(harnessFile, 'utf8'),
  limits,
  // Past the output limit the process ends at once (Python is still running: no message could
  // leave first); the pool reads exit code 4 as "killed for its output".
  () => process.exit(4),
);
process.on('message', (msg) => {
  const result = driver.run(msg.job, msg.timeoutMs);
  send({ type: 'result', result }, () => {
    if (result.replace) process.exit(0);
  });
});
send({ type: 'ready', isolation: isolation === 'netns' ? 'network namespace' : 'socket APIs removed' });
