import type { RequestHandler } from 'express';
import type { Config } from '@taskapi/config';
import { safeEqual } from '@taskapi/crypto';
import type { Logger } from '@taskapi/logger';
import { ApiError } from '../errors';

/**
 * Operator basic auth for `/admin/*`. Always required: the login is `ADMIN_USER`/`ADMIN_PASSWORD`,
 * or in development the one generated into the development secrets file. Without a login
 * (production or tests with the variables unset) every request gets 403.
 */
export function adminAuth(config: Config, logger: Logger, mountPath: string): RequestHandler {
  const admin = config.admin;
  if (!admin) {
    logger.warn(`Bull Board at ${mountPath} is disabled: ADMIN_USER and ADMIN_PASSWORD are not set`);
    return (_req, _res, next) => next(new ApiError('OPERATOR_LOGIN_DISABLED'));
  }
  if (admin.generatedIn) {
    // The file, never the password: log lines end up in shared log stores.
    logger.warn(
      `ADMIN_USER/ADMIN_PASSWORD are not set: Bull Board at ${mountPath} uses the generated development login (user "${admin.user}") kept in ${admin.generatedIn}`,
    );
  }
  const expected = `Basic ${Buffer.from(`${admin.user}:${admin.password}`, 'utf8').toString('base64')}`;
  return (req, res, next) => {
    const given = req.get('authorization') ?? '';
    if (safeEqual(given, expected)) return next();
    res.setHeader('WWW-Authenticate', 'Basic realm="Task API operators", charset="UTF-8"');
    next(new ApiError('OPERATOR_LOGIN_REQUIRED'));
  };
}
