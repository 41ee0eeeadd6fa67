import react from '@vitejs/plugin-react';
import { defineConfig, type Connect, type Plugin } from 'vite';

/** The Python sandbox Worker (src/verify/python/sandbox.worker.ts) may connect nowhere. */
const sandboxCsp: Connect.NextHandleFunction = (req, res, next) => {
  if (req.url?.includes('sandbox.worker')) res.setHeader('Content-Security-Policy', "connect-src 'none'");
  next();
};
const sandboxWorkerCsp: Plugin = {
  name: 'sandbox-worker-csp',
  configureServer: (server) => void server.middlewares.use(sandboxCsp),
  configurePreviewServer: (server) => void server.middlewares.use(sandboxCsp),
};

export default defineConfig({
  plugins: [react(), sandboxWorkerCsp],
  worker: { format: 'es' },
  optimizeDeps: {
    // The pages and the Workers: a dependency only a Worker imports (hyparquet-writer, in the
    // engine's bank export) is otherwise found when the Worker first loads, and its late
    // pre-bundling reloads the page, losing what the page was doing (a run, a comparison).
    entries: ['index.html', 'bench/*.html', 'e2e/*.html', 'src/**/*.worker.ts'],
    // Pyodide is ES modules already; pre-bundling it would only reload the page on first use.
    exclude: ['pyodide'],
  },
  server: { port: 5173 },
  build: { target: 'es2022' },
});
