import { stringify } from 'csv-stringify/sync';
import { usageExport } from '../../domain/usage';
import { downgradeResponse } from '../../http/api-version';
import { defineRoute } from '../../http/route';
import { MAX_EXPORT_DAYS, usageExportQuerySchema, usageExportSchema } from '../../schemas/usage';

const CSV_TYPE = 'text/csv; charset=utf-8';

/** The export as CSV: a header row, then one row per entry of `data`, RFC 4180 quoting. */
function toCsv(rows: ReadonlyArray<Record<string, unknown>>, groupColumn: string): string {
  // The columns of the JSON answer as the request's version shaped it, so both formats always agree.
  const columns = rows[0] ? Object.keys(rows[0]) : [groupColumn, 'tasks', 'completed', 'failed', 'cancelled', 'credits'];
  return stringify(rows as Array<Record<string, unknown>>, { header: true, columns, record_delimiter: 'windows' });
}

const GROUP_COLUMN = { day: 'date', kind: 'kind', key: 'key_prefix' } as const;

/** `GET /api/usage`: usage for the integrator's own billing, as JSON or CSV (docs/api.md, "Usage"). */
export const getUsageRoute = defineRoute({
  operationId: 'getUsage',
  method: 'get',
  path: '/api/usage',
  tag: 'Account',
  summary: 'Usage per day, kind or key (JSON or CSV)',
  description:
    'The tasks the account created from `from` to `to` (UTC days, both included, at most ' +
    `${MAX_EXPORT_DAYS} days), grouped by day, kind or key: how many, what became of them so far, and the net credits they cost ` +
    '(charges less refunds: failed and cancelled tasks are refunded in full). `Accept: text/csv` answers the same rows as CSV ' +
    'with a header row, as an attachment; otherwise JSON. The console\'s usage charts read the same query.',
  auth: 'session',
  query: usageExportQuerySchema,
  responses: {
    200: {
      description: 'The usage rows.',
      schema: usageExportSchema,
      content: {
        'text/csv': {
          schema: { type: 'string', description: 'A header row (`date|kind|key_prefix,tasks,completed,failed,cancelled,credits`), then one line per row, CRLF line ends.' },
          example: 'date,tasks,completed,failed,cancelled,credits\r\n2026-11-01,5,3,1,1,4\r\n2026-11-02,0,0,0,0,0\r\n2026-11-03,2,1,0,0,12\r\n',
        },
      },
      headers: ['Content-Disposition-Csv'],
    },
  },
  invalidExamples: [
    ['malformed date', 'from', 'must be a date as YYYY-MM-DD'],
    ['reversed range', 'to', 'must not be before from'],
    ['range too long', 'to', `must be at most ${MAX_EXPORT_DAYS - 1} days after from (a range of at most ${MAX_EXPORT_DAYS} days)`],
    ['unknown grouping', 'group_by', 'must be one of "day", "kind", "key"'],
  ],
  async handler({ query }, { deps, principal, req, res }) {
    const data = await usageExport(deps.repos.tasks, principal.accountId, query);
    if (req.accepts(['application/json', 'text/csv']) !== 'text/csv') return { status: 200, json: { data } };
    const shaped = downgradeResponse(req, res, 200, { data }) as { data: Array<Record<string, unknown>> };
    const text = toCsv(shaped.data, GROUP_COLUMN[query.group_by]);
    res.statusCode = 200;
    res.setHeader('Content-Type', CSV_TYPE);
    res.setHeader('Content-Disposition', `attachment; filename="usage-${query.from}-to-${query.to}-by-${query.group_by}.csv"`);
    res.setHeader('Content-Length', Buffer.byteLength(text));
    res.end(text);
    return { sent: true };
  },
});
