/**
 * Wire shapes of the workspace-files API (spec: "File tree node", "Upload result",
 * `GET /files/{path}`, `POST /files/upload`, `GET /workspace/tree`), shared by tRPC, the bridge
 * and OpenAPI. One schema per shape.
 */
import { z } from 'zod';

/** Tree `max_depth` (docs/api.md, "Bounds"): default 5, 1..20, above the bound clamped, below or non-integer 400. */
export const TREE_DEFAULT_DEPTH = 5;
export const TREE_MAX_DEPTH = 20;

/** A workspace-relative path; every rule beyond "is a string" is the guard's (guard.ts). */
export const WorkspacePath = z.string().describe('Workspace-relative path');

export const FilePathInput = z.object({ path: WorkspacePath });

/** What `files.get` answers: what the bridge needs for the headers of `GET /files/{path}`. */
export const FileInfo = z
  .object({
    path: z.string().describe('Workspace-relative path (symlinks resolved)'),
    name: z.string(),
    size: z.number().int().nonnegative(),
    content_type: z.string(),
    modified: z.string().describe('ISO 8601, UTC'),
    etag: z.string().describe('Strong entity tag, quoted'),
  })
  .meta({ id: 'FileInfo' });
export type FileInfo = z.infer<typeof FileInfo>;

/** `files.read`: an inclusive byte range of a file, optionally pinned to the ETag seen by `files.get`. */
export const FileReadInput = z
  .object({
    path: WorkspacePath,
    start: z.number().int().nonnegative().optional(),
    end: z.number().int().nonnegative().optional(),
    etag: z.string().max(200).optional(),
  })
  .refine((r) => r.start === undefined || r.end === undefined || r.start <= r.end, { message: 'start must not exceed end', path: ['start'] });

export const TreeInput = z.object({
  max_depth: z.coerce
    .number()
    .int('max_depth must be an integer')
    .min(1, 'max_depth must be at least 1')
    .describe(`Levels below the root to list: 1..${TREE_MAX_DEPTH} (larger values are clamped), default ${TREE_DEFAULT_DEPTH}`)
    .transform((depth) => Math.min(depth, TREE_MAX_DEPTH))
    .optional(),
});

export interface TreeNode {
  name: string;
  path: string;
  type: 'dir' | 'file';
  children?: TreeNode[];
  size?: number;
}

export const TreeNode: z.ZodType<TreeNode> = z
  .object({
    name: z.string(),
    path: z.string().describe('Workspace-relative'),
    type: z.enum(['dir', 'file']),
    get children() {
      return z.array(TreeNode).optional().describe('Present for `dir`');
    },
    size: z.number().int().nonnegative().optional().describe('Present for `file`'),
  })
  .meta({ id: 'FileTreeNode' });

export const TreeOutput = z.object({
  tree: z.array(TreeNode),
  truncated: z.literal(true).optional().describe('Present when the node bound was reached; see docs/agent.md, "Workspace files"'),
});
export type TreeOutput = z.infer<typeof TreeOutput>;

export const UploadResult = z
  .object({
    path: z.string().describe('Workspace-relative, `<dir>/<filename>`'),
    size: z.number().int().nonnegative(),
    name: z.string(),
  })
  .meta({ id: 'UploadResult' });
export type UploadResult = z.infer<typeof UploadResult>;

/** The multipart body of `POST /files/upload`, for the OpenAPI document. */
export const UploadForm = z.object({
  file: z.string().meta({ format: 'binary' }).describe('The file (required)'),
  path: z.string().optional().describe('Target directory, workspace-relative; default `uploads`'),
});

/** `POST /files/delete`: one file (or symbolic link) of the workspace. */
export const FileDeleteInput = z.object({ path: WorkspacePath.describe('Workspace-relative path of the file to delete') });
export const FileDeleted = z
  .object({
    path: z.string().describe('Workspace-relative path that was deleted'),
    deleted: z.literal(true),
  })
  .meta({ id: 'FileDeleted' });
export type FileDeleted = z.infer<typeof FileDeleted>;

/** `POST /files/move`: rename or move one file; never over an existing one unless `overwrite`. */
export const FileMoveInput = z.object({
  from: WorkspacePath.describe('Workspace-relative path of the file'),
  to: WorkspacePath.describe('Its new workspace-relative path (missing parent directories are created)'),
  overwrite: z.boolean().optional().describe('Replace a file that has the new name (default false: 409 FILE_EXISTS)'),
});
export type FileMoveInput = z.infer<typeof FileMoveInput>;
export const FileMoved = z
  .object({
    from: z.string().describe('Workspace-relative path it had'),
    path: z.string().describe('Workspace-relative path it has now'),
    name: z.string(),
  })
  .meta({ id: 'FileMoved' });
export type FileMoved = z.infer<typeof FileMoved>;
