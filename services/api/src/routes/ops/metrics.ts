import { defineRoute } from '../../http/route';

export const metricsRoute = defineRoute({
  operationId: 'metrics',
  method: 'get',
  path: '/metrics',
  tag: 'Operations',
  summary: 'Prometheus metrics',
  description: 'HTTP request counts and durations by route, tasks created, rate-limit rejections, and process metrics.',
  auth: 'none',
  responses: { 200: { description: 'Prometheus text exposition format.', content: { 'text/plain': { schema: { type: 'string' } } } } },
  errors: ['INTERNAL'],
  async handler(_input, { deps, res }) {
    res.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics());
    return { sent: true };
  },
});
