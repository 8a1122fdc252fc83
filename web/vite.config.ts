import { defineConfig } from 'vite';

// The daemon serves web/dist/ at "/" and the API under /v1/ on the same
// origin, so the build uses absolute asset paths and no proxy is needed in
// production. `npm run dev` proxies /v1 and /reports to a daemon or to the
// mock server (TIDAL_URL, default the mock's http://127.0.0.1:18080).
const target = process.env.TIDAL_URL ?? 'http://127.0.0.1:18080';

export default defineConfig({
  base: '/',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
  },
  server: {
    proxy: {
      '/v1': target,
      '/reports': target,
    },
  },
});
