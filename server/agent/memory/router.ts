/**
 * The memory files: `GET /memory`, `PATCH /memory/{name}` (replace the content),
 * `DELETE /memory/{name}` (204); docs/api.md, "Memory". Routes and inputs from their rows of
 * @contracts/agent/routes.ts.
 */
import { z } from 'zod';
import { MemoryFile, MemoryFiles } from '@contracts/agent/memory.js';
import { agentRoute, router } from '../trpc.js';
import { deleteMemoryFile, readMemoryFiles, writeMemoryFile } from './files.js';

export const memoryRouter = router({
  get: agentRoute('memory.get', { summary: 'MEMORY.md and USER.md: their content (each up to 100,000 characters), size and last change' })
    .output(MemoryFiles)
    .query(async ({ ctx }) => ({ files: await readMemoryFiles(ctx.services.config.workspace) })),

  write: agentRoute('memory.write', { summary: 'Replace the content of MEMORY.md or USER.md (creating it)', errors: ['QUOTA_EXCEEDED', 'FORBIDDEN_PATH'] })
    .output(MemoryFile)
    .mutation(({ input, ctx }) => writeMemoryFile(ctx.services.config.workspace, ctx.services.quota, input.name, input.content)),

  delete: agentRoute('memory.delete', {
    summary: 'Delete MEMORY.md or USER.md (204); 404 when there is none',
    rest: { kind: 'empty' },
    errors: ['FILE_NOT_FOUND', 'NOT_A_FILE'],
  })
    .output(z.void())
    .mutation(({ input, ctx }) => deleteMemoryFile(ctx.services.config.workspace, ctx.services.quota, input.name)),
});
