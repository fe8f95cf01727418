import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));
const account = process.env.ACCOUNT_URL ?? 'http://127.0.0.1:3000';

export default defineConfig({
  root,
  // tsconfig's `paths` (the shared contracts), which vite does not read by itself.
  resolve: { alias: [{ find: /^@contracts\//, replacement: fileURLToPath(new URL('../../contracts/', import.meta.url)) }] },
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: true },
  // `npm run dev:web`: the dev server forwards API calls to a running account service.
  server: { port: 5173, proxy: { '/api': account, '/trpc': account, '/.well-known': account } },
});
