// The part of a Python sandbox that is the same in a Node process and in a browser Worker:
// Pyodide loaded with its wasm memory capped, output counted and cut, a deadline read through
// Pyodide's interrupt buffer, and the harness (harness.py) run in a module nobody imports.
// Plain JavaScript: the Node sandbox process runs it without a TypeScript loader (a loader
// would need child processes, which that process is denied).

/** @typedef {import('./driver.d.mts').DriverLimits} DriverLimits */
/** @typedef {import('./driver.d.mts').DriverResult} DriverResult */

const PAGE = 65536;

/**
 * Makes every wasm memory refuse to grow past `maxBytes`: emscripten's heap growth then fails
 * and Python raises MemoryError instead of taking the machine's memory. Called before Pyodide
 * loads; the original `grow` stays in this closure only.
 * @param {number} maxBytes
 * @param {() => void} onRefused
 */
export function capWasmMemory(maxBytes, onRefused) {
  const grow = WebAssembly.Memory.prototype.grow;
  Object.defineProperty(WebAssembly.Memory.prototype, 'grow', {
    value: function capped(/** @type {number} */ pages) {
      if (this.buffer.byteLength + pages * PAGE > maxBytes) {
        onRefused();
        throw new RangeError('sandbox: memory limit reached');
      }
      return grow.call(this, pages);
    },
    writable: false,
    configurable: false,
  });
}

/**
 * Loads Pyodide and the harness. `load` is the environment's loadPyodide call (given the
 * options to pass); `onOverflow` runs when the program's output passes the limit.
 * @param {(options: object) => Promise<any>} load
 * @param {string} harnessSource
 * @param {DriverLimits} limits
 * @param {() => void} onOverflow
 */
export async function startDriver(load, harnessSource, limits, onOverflow) {
  let memoryRefused = false;
  capWasmMemory(limits.memoryBytes, () => (memoryRefused = true));
  let output = '';
  let outputBytes = 0;
  const write = (/** @type {Uint8Array} */ bytes) => {
    outputBytes += bytes.length;
    if (outputBytes > limits.outputBytes) onOverflow();
    else if (output.length < limits.keptOutput) output += new TextDecoder().decode(bytes).slice(0, limits.keptOutput - output.length);
    return bytes.length;
  };
  const pyodide = await load({});
  pyodide.setStdout({ write });
  pyodide.setStderr({ write });
  // Python reads element 0 of the interrupt buffer every so often; past the deadline it reads
  // SIGINT once and raises KeyboardInterrupt, within milliseconds, in the same thread. (Once:
  // the harness must be able to report it; a program that swallows it is killed from outside.)
  let deadline = Infinity;
  pyodide.setInterruptBuffer({
    get 0() {
      if (performance.now() <= deadline) return 0;
      deadline = Infinity;
      return 2;
    },
    set 0(_v) {},
  });
  const harness = pyodide.runPython('import types\ntypes.ModuleType("sandbox_harness").__dict__');
  pyodide.runPython(harnessSource, { globals: harness });
  const runJob = harness.get('run_job');
  harness.destroy();
  pyodide.runPython('del types');

  return {
    /**
     * Runs one job (JSON, see harness.py); `replace` says the instance must not run another.
     * @param {string} jobJson
     * @param {number} timeoutMs
     * @returns {DriverResult}
     */
    run(jobJson, timeoutMs) {
      output = '';
      outputBytes = 0;
      memoryRefused = false;
      deadline = performance.now() + timeoutMs;
      /** @type {DriverResult} */
      let result;
      try {
        result = JSON.parse(runJob(jobJson));
      } catch (e) {
        // A fatal error inside Pyodide (a denied host call, a blown wasm stack): this instance is done.
        result = { status: 'error', passed: 0, total: 0, detail: `sandbox failure: ${String(e).split('\n').filter(Boolean).pop()}`, replace: true };
      } finally {
        deadline = Infinity;
      }
      if (memoryRefused) result = { ...result, status: 'killed', detail: `memory limit of ${limits.memoryBytes / 2 ** 20} MiB reached`, replace: true };
      if (result.denied) result.replace = true;
      result.output = output;
      return result;
    },
  };
}
