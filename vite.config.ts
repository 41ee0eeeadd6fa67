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
  // Pyodide is ES modules already; pre-bundling it would only reload the page on first use.
  optimizeDeps: { exclude: ['pyodide'] },
  server: { port: 5173 },
  build: { target: 'es2022' },
});
