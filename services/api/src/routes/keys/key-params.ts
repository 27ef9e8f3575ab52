import { API_ERRORS } from '../../errors';
import { z } from 'zod';
import { prefixedId } from '../../schemas/common';

export const keyParams = {
  schema: z.object({ keyId: prefixedId('key', 'key_5Jd8Qw2Er6Ty1Ui9Op3As7') }),
  invalid: 'KEY_NOT_FOUND',
  describe: { keyId: `The key's \`id\`. A malformed id, an unknown id and another account's key all give 404 \`${API_ERRORS.KEY_NOT_FOUND.message}\`` },
} as const;
