import { API_ERRORS } from '../../errors';
import { z } from 'zod';
import { taskFileSchema, taskIdSchema } from '../../schemas/tasks';

/** `{publicId}`: an id that cannot exist is simply not found (it never reaches the database). */
export const taskParams = {
  schema: z.object({ publicId: taskIdSchema }),
  invalid: 'TASK_NOT_FOUND',
  describe: { publicId: `The task's \`public_id\`. A malformed id, an unknown id and another account's task all give 404 \`${API_ERRORS.TASK_NOT_FOUND.message}\`` },
} as const;

/** `{publicId}/files/{name}`: a name that no file can have is a missing file. */
export const taskFileParams = {
  schema: z.object({ publicId: taskIdSchema, name: z.string() }),
  invalid: 'TASK_NOT_FOUND',
  describe: { ...taskParams.describe, name: "A `name` from the task's `files`." },
} as const;

export const FILE_NAME_SCHEMA = taskFileSchema.shape.name;
