/**
 * Workspace-file procedures, each at its row of the route table (@contracts/agent/routes.ts).
 * REST: the JSON routes are placed from those rows;
 * `GET /files/{path}` (files.get + files.read) and `POST /files/upload` (files.upload) are
 * bridge adapters in server/agent/rest-routes.ts (raw file body, multipart).
 *
 * tRPC clients: `files.tree` and `files.get` are plain queries. `files.read` returns the bytes
 * as an async iterable (in process, and over httpBatchStreamLink); browsers should load bytes
 * from `GET /files/{path}`, which also does Range and conditional requests. `files.upload` takes
 * an `application/octet-stream` body (streamed, never buffered) with the file name in the
 * `X-File-Name` header and the target directory in `X-Upload-Path`, both percent-encoded UTF-8.
 */
import { badRequest } from '../../common/errors.js';
import { agentProcedure, agentRoute, router } from '../trpc.js';
import { readWorkspaceFile, statWorkspaceFile } from './download.js';
import { FileDeleted, FileInfo, FileMoved, TREE_DEFAULT_DEPTH, TreeOutput, UploadResult } from '@contracts/agent/files.js';
import { deleteWorkspaceFile, moveWorkspaceFile } from './manage.js';
import { listTree } from './tree.js';
import { UploadInput, uploadFile, uploadParts } from './upload.js';

/** One header value, percent-decoded exactly once. */
function headerValue(headers: Record<string, string | string[] | undefined> | undefined, name: string): string | undefined {
  const raw = headers?.[name];
  if (raw === undefined) return undefined;
  if (Array.isArray(raw)) throw badRequest(`Header ${name} given more than once`);
  try {
    return decodeURIComponent(raw);
  } catch {
    throw badRequest(`Header ${name} is not valid percent-encoded UTF-8`);
  }
}

export const filesRouter = router({
  tree: agentRoute('files.tree', {
    summary: 'Workspace file tree (directories first, sorted by name)',
    errors: ['INVALID_PATH', 'FORBIDDEN_PATH', 'FILE_NOT_FOUND'],
  })
    .output(TreeOutput)
    .query(({ ctx, input }) => listTree(ctx.services.config.workspace, input.max_depth ?? TREE_DEFAULT_DEPTH)),

  get: agentRoute('files.get')
    .output(FileInfo)
    .query(({ ctx, input }) => statWorkspaceFile(ctx.services.config.workspace, input.path)),

  read: agentRoute('files.read').query(({ ctx, input }) => readWorkspaceFile(ctx.services.config.workspace, input)),

  delete: agentRoute('files.delete', {
    summary: 'Delete a workspace file (not a directory)',
    errors: ['INVALID_PATH', 'FORBIDDEN_PATH', 'FILE_NOT_FOUND', 'NOT_A_FILE'],
  })
    .output(FileDeleted)
    .mutation(({ ctx, input }) => deleteWorkspaceFile(ctx.services.config.workspace, input.path, ctx.services.quota)),

  move: agentRoute('files.move', {
    summary: 'Rename or move a workspace file; never over an existing one unless overwrite',
    errors: ['INVALID_PATH', 'FORBIDDEN_PATH', 'FILE_NOT_FOUND', 'NOT_A_FILE', 'NOT_A_DIRECTORY', 'FILE_EXISTS'],
  })
    .output(FileMoved)
    .mutation(({ ctx, input }) => moveWorkspaceFile(ctx.services.config.workspace, input, ctx.services.quota)),

  // Its row (`files.upload`) has no input: the agent's own parser takes a multipart form (REST) or an octet stream (tRPC).
  upload: agentProcedure
    .input(UploadInput)
    .output(UploadResult)
    .mutation(async ({ ctx, input, signal }) => {
      const meta = { filename: headerValue(ctx.headers, 'x-file-name'), path: headerValue(ctx.headers, 'x-upload-path') };
      const result = await uploadFile(ctx.services.config.workspace, uploadParts(input, meta), { signal, quota: ctx.services.quota });
      ctx.services.metrics.uploaded(result.size);
      return result;
    }),
});
