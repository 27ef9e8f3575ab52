// `POST /internal/model-webhooks/{prediction_id}/{token}`: where Cog model servers post the
// updates of the predictions workers create (docs/models.md). Not part of the public API: it is
// served beside the registry, unauthenticated but for the prediction's token, and takes bodies
// as large as a model's output (streamed to the file store past 1 MiB, never parsed whole here).
import type { RequestHandler } from 'express';
import { MAX_PREDICTION_OUTPUT_FILES } from '@taskapi/domain';
import type { ApiDeps } from '../deps';
import { authorizeModelWebhook, recordModelWebhook } from '../domain/model-webhooks';
import { ApiError } from '../errors';

/** The handler of `POST MODEL_WEBHOOK_PATH/:predictionId/:token` (@taskapi/domain). */
export function modelWebhookHandler(deps: ApiDeps): RequestHandler {
  // The largest output (as many files as a prediction may return, each at the cap, as base64), and
  // room for the prediction's other fields (logs, metrics). Past 1 MiB a body with a length is
  // streamed to the file store, never held here.
  const maxBodyBytes = Math.ceil((deps.config.cogOutputMaxBytes * 4) / 3) * MAX_PREDICTION_OUTPUT_FILES + 16 * 1024 * 1024;
  return (req, res, next) => {
    void (async () => {
      const { predictionId, token } = req.params as { predictionId: string; token: string };
      const publicId = authorizeModelWebhook(deps.modelWebhookTokens, predictionId, token);
      const type = req.headers['content-type'] ?? '';
      if (!/^application\/json\s*(;|$)/i.test(type)) throw new ApiError('CONTENT_TYPE_NOT_JSON');
      const declared = req.headers['content-length'];
      const length = declared === undefined ? undefined : Number(declared);
      const outcome = await recordModelWebhook({ redis: deps.redis, store: deps.store, tokens: deps.modelWebhookTokens, maxBodyBytes }, publicId, predictionId, req, length);
      if (outcome === 'ignored') deps.logger.debug('model webhook for a prediction that is not its task\'s current one; ignored', { public_id: publicId, prediction_id: predictionId });
      res.status(204).end();
    })().catch(next);
  };
}
