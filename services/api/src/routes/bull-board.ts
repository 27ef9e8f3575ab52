import type { RequestHandler, Router } from 'express';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import type { ApiDeps } from '../deps';
import { SelfContainedBoardAdapter } from './self-contained-board-adapter';

export const BULL_BOARD_PATH = '/admin/queues';

/** Bull Board over every task queue and the webhook queue, behind operator auth, with no third-party assets. */
export function bullBoardRoutes(deps: ApiDeps, auth: RequestHandler): [RequestHandler, Router] {
  const serverAdapter = new SelfContainedBoardAdapter();
  serverAdapter.setBasePath(BULL_BOARD_PATH);
  createBullBoard({
    queues: [...Object.values(deps.taskQueues.queues), deps.webhooks.queue].map((q) => new BullMQAdapter(q)),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'Task API queues' } },
  });
  return [auth, serverAdapter.getRouter() as Router];
}
