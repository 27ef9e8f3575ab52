import type { RequestHandler } from 'express';
import type { AppViewRoute } from '@bull-board/api/typings/app';
import { ExpressAdapter } from '@bull-board/express';

/**
 * Bull Board's page: scripts only from us; its inline loading spinner needs inline styles; data
 * calls, the locale files and its syntax-highlighting worker are all on this origin.
 */
export const BULL_BOARD_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self'",
  "object-src 'none'",
  "frame-ancestors 'none'",
  "base-uri 'self'",
  "form-action 'self'",
].join('; ');

// Absolute (`https://…`) or protocol-relative (`//…`) URLs: anything not served by us.
const FOREIGN_LINK = /<link\b[^>]*\bhref\s*=\s*["']?(?:https?:)?\/\/[^>]*>\s*/gi;
const FOREIGN_SCRIPT = /<script\b[^>]*\bsrc\s*=\s*["']?(?:https?:)?\/\/[^>]*>\s*<\/script>\s*/gi;

/**
 * Removes stylesheets, preconnects and scripts loaded from other origins. Upstream's page pulls its
 * typeface from Google Fonts, which would tell a third party who opens the board and from where;
 * without it the board falls back to the system font.
 */
export function withoutForeignAssets(html: string): string {
  return html.replace(FOREIGN_LINK, '').replace(FOREIGN_SCRIPT, '');
}

/**
 * The Express adapter with a self-contained entry page: the same template and parameters as
 * upstream, rendered, stripped of third-party assets and sent with `BULL_BOARD_CSP`.
 */
export class SelfContainedBoardAdapter extends ExpressAdapter {
  override setEntryRoute(routeDef: AppViewRoute): this {
    const page: RequestHandler = (_req, res, next) => {
      const { name, params } = routeDef.handler({ basePath: this.basePath, uiConfig: this.uiConfig });
      this.app.render(name, params, (err, html) => {
        if (err) return next(err);
        res.setHeader('Content-Security-Policy', BULL_BOARD_CSP);
        res.setHeader('Cache-Control', 'no-store');
        res.type('html').send(withoutForeignAssets(html));
      });
    };
    this.app[routeDef.method](routeDef.route, page);
    return this;
  }
}
