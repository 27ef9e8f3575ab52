import type { RequestHandler } from 'express';
import type { Config } from '@taskapi/config';
import { safeEqual } from '@taskapi/crypto';
import type { Logger } from '@taskapi/logger';

export const ADMIN_DISABLED = 'Bull Board is disabled: set ADMIN_USER and ADMIN_PASSWORD.';

/**
 * Operator basic auth for `/admin/*` (`ADMIN_USER` / `ADMIN_PASSWORD`). Without credentials the
 * board is refused in production and open in development and tests (with a warning at start).
 */
export function adminAuth(config: Config, logger: Logger): RequestHandler {
  const admin = config.admin;
  if (!admin) {
    if (config.nodeEnv === 'production') {
      return (_req, res) => void res.status(403).json({ message: ADMIN_DISABLED });
    }
    logger.warn('ADMIN_USER/ADMIN_PASSWORD are not set: Bull Board at /admin/queues is open (refused in production)');
    return (_req, _res, next) => next();
  }
  const expected = `Basic ${Buffer.from(`${admin.user}:${admin.password}`, 'utf8').toString('base64')}`;
  return (req, res, next) => {
    const given = req.get('authorization') ?? '';
    if (safeEqual(given, expected)) return next();
    res.setHeader('WWW-Authenticate', 'Basic realm="Task API operators", charset="UTF-8"');
    res.status(401).json({ message: 'Operator credentials required.' });
  };
}
