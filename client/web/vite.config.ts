import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));
const account = process.env.ACCOUNT_URL ?? 'http://127.0.0.1:3000';

export default defineConfig({
  root,
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: true },
  // `npm run dev:web`: the dev server forwards API calls to a running account service.
  server: { port: 5173, proxy: { '/api': account, '/trpc': account, '/.well-known': account } },
});
