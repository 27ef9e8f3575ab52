import express from 'express';
import { consolePages } from './console/pages';
import type { ApiDeps } from './deps';
import { adminAuth } from './http/admin-auth';
import { errorHandler, notFoundHandler } from './http/error-handler';
import { observe } from './http/observe';
import { securityHeaders } from './http/security-headers';
import { sessionAuth } from './http/session-auth';
import { accountRoutes } from './routes/account';
import { authRoutes } from './routes/auth';
import { BULL_BOARD_PATH, bullBoardRoutes } from './routes/bull-board';
import { consoleTaskRoutes } from './routes/console-tasks';
import { docsRoutes } from './routes/docs';
import { healthRoutes } from './routes/health';
import { keyRoutes } from './routes/keys';
import { taskRoutes } from './routes/tasks';
import { webhookDeliveryRoutes } from './routes/webhook-deliveries';

/** Builds the API's Express app from its dependencies (no listening, no globals: tests build many). */
export function createApp(deps: ApiDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  // JSON responses are small and uncacheable; computing ETags would only cost CPU.
  app.set('etag', false);
  app.set('trust proxy', deps.config.trustProxy);

  app.use(observe(deps.logger, deps.metrics));
  app.use((_req, res, next) => {
    // Draining before shutdown: each connection ends after its response, so keep-alive clients
    // reconnect to a replica that is staying.
    if (deps.lifecycle.draining) res.setHeader('Connection', 'close');
    next();
  });
  app.use(securityHeaders);
  // The task API first: it carries nearly all traffic, so it should match after the fewest layers.
  app.use('/api/tasks', taskRoutes(deps));
  app.use(healthRoutes(deps));
  app.use(docsRoutes());

  app.use('/api/auth', authRoutes(deps));
  const requireSession = sessionAuth({ sessions: deps.sessions, prisma: deps.db.prisma, publicBaseUrl: deps.config.publicBaseUrl });
  app.use('/api/keys', keyRoutes(deps, requireSession));
  app.use('/api/console/tasks', consoleTaskRoutes(deps, requireSession));
  app.use('/api/webhook-deliveries', webhookDeliveryRoutes(deps, requireSession));
  app.use('/api', accountRoutes(deps, requireSession));
  app.use(BULL_BOARD_PATH, ...bullBoardRoutes(deps, adminAuth(deps.config, deps.logger, BULL_BOARD_PATH)));
  app.use('/app', consolePages());

  app.use(notFoundHandler);
  app.use(errorHandler(deps.logger));
  return app;
}
