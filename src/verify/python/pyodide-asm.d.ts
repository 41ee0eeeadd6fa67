/** Pyodide's emscripten module, imported by the sandbox Worker so that Pyodide need not load it by URL. */
declare module 'pyodide/pyodide.asm.mjs' {
  const createPyodideModule: (settings: object) => Promise<unknown>;
  export default createPyodideModule;
}
