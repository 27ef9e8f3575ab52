import { createHmac, createSecretKey, hkdfSync, timingSafeEqual, type KeyObject } from 'node:crypto';

/**
 * Signs the webhook URL of one model-server prediction: the worker puts the token in the URL it
 * gives the model server, and the API accepts a prediction update only with the token of that
 * prediction id. Its own key, derived from SECRETS_KEY, so the token doubles as nothing else.
 */
export class ModelWebhookTokens {
  private readonly key: KeyObject;

  constructor(secretsKey: Buffer) {
    this.key = createSecretKey(Buffer.from(hkdfSync('sha256', secretsKey, Buffer.alloc(0), 'taskapi model webhook v1', 32)));
  }

  /** The token of `predictionId`, base64url (43 characters). */
  token(predictionId: string): string {
    return createHmac('sha256', this.key).update(predictionId).digest('base64url');
  }

  /** Whether `token` is that of `predictionId` (constant time). */
  verify(predictionId: string, token: string): boolean {
    const expected = Buffer.from(this.token(predictionId));
    const given = Buffer.from(token);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }
}
