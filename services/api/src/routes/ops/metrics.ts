import { defineRoute } from '../../http/route';

export const metricsRoute = defineRoute({
  operationId: 'metrics',
  method: 'get',
  path: '/metrics',
  tag: 'Operations',
  summary: 'Prometheus metrics',
  description:
    'HTTP request counts and durations by route template, tasks created, rate-limit rejections, cancelled tasks\' ' +
    'end-to-end time, the queue depth and oldest waiting age per task kind (read from Redis at scrape time, the same on ' +
    'every replica), and process metrics.',
  auth: 'none',
  responses: { 200: { description: 'Prometheus text exposition format.', content: { 'text/plain': { schema: { type: 'string' } } } } },
  errors: ['INTERNAL'],
  async handler(_input, { deps, res }) {
    res.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics());
    return { sent: true };
  },
});
