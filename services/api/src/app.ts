import express from 'express';
import { MODEL_WEBHOOK_PATH } from '@taskapi/domain';
import { consolePages } from './console/pages';
import type { ApiDeps } from './deps';
import { adminAuth } from './http/admin-auth';
import { apiKeyAuth } from './http/api-key-auth';
import { apiVersionLayer } from './http/api-version';
import { errorHandler, notFoundHandler } from './http/error-handler';
import { mountRoutes } from './http/mount-routes';
import { observe } from './http/observe';
import { publicCors } from './http/public-cors';
import { readTokenAuth } from './http/read-token-auth';
import { BULL_BOARD_PATH } from './http/paths';
import { responseDefaults } from './http/response-defaults';
import { sessionAuth } from './http/session-auth';
import { bullBoardRoutes } from './routes/bull-board';
import { modelWebhookHandler } from './routes/model-webhooks';
import { docsPages } from './routes/docs';
import { AUTH_SCOPES, ROUTES } from './routes';

/** Builds the API's Express app from its dependencies (no listening, no globals: tests build many). */
export function createApp(deps: ApiDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  // JSON responses are small and uncacheable; computing ETags would only cost CPU.
  app.set('etag', false);
  // A hop count: req.ip is the X-Forwarded-For entry that many proxies from the right, so a
  // client's own (forged) entries never become its address. (`true` is refused in production.)
  app.set('trust proxy', deps.config.trustProxy);

  app.use(observe(deps.logger, deps.metrics));
  app.use(responseDefaults(deps.lifecycle));
  // Before everything that can answer: a page of an allowed origin can read even a refusal.
  app.use(publicCors(deps.config.corsAllowedOrigins));
  // Before authentication: a bad TaskApi-Version is refused even with a bad key.
  app.use(apiVersionLayer(deps.apiVersions));

  mountRoutes(app, ROUTES, deps, AUTH_SCOPES, {
    apiKey: apiKeyAuth(deps),
    readToken: readTokenAuth(deps),
    session: sessionAuth({ sessions: deps.sessions, accounts: deps.repos.accounts, publicBaseUrl: deps.config.publicBaseUrl, apiVersions: deps.apiVersions }),
  });

  // Model servers' prediction updates (not part of the public API; each URL carries its own token).
  app.post(`${MODEL_WEBHOOK_PATH}/:predictionId/:token`, modelWebhookHandler(deps));

  // Pages for people, not API: Swagger UI, the console, and the operators' queue board.
  app.use(docsPages(deps.config.publicBaseUrl));
  app.use(BULL_BOARD_PATH, ...bullBoardRoutes(deps, adminAuth(deps.config, deps.logger, BULL_BOARD_PATH)));
  app.use('/app', consolePages());

  app.use(notFoundHandler);
  app.use(errorHandler(deps.logger));
  return app;
}
