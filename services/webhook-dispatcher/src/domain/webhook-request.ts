// The body and headers live in @taskapi/domain: the API's test webhooks build them the same way.
export { webhookBody, webhookHeaders } from '@taskapi/domain';
