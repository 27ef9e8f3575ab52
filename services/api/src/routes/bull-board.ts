import type { RequestHandler, Router } from 'express';
import type * as BullBoardApi from '@bull-board/api';
import type * as BullBoardBullMQ from '@bull-board/api/bullMQAdapter';
import type { ApiDeps } from '../deps';
import { BULL_BOARD_PATH } from '../http/paths';
import type * as BoardAdapter from './self-contained-board-adapter';
import type * as LinesAdapter from './scheduler-lines-adapter';
import { TASK_KINDS } from '@taskapi/task-kinds';

/** The board's router over every task queue and the webhook queue, with no third-party assets. */
function buildBoard(deps: ApiDeps): Router {
  // Loaded on the first authenticated request, not at start: Bull Board and its Express adapter
  // are 4 MB of heap and start time in every API replica, and most replicas never serve it.
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { createBullBoard } = require('@bull-board/api') as typeof BullBoardApi;
  const { BullMQAdapter } = require('@bull-board/api/bullMQAdapter') as typeof BullBoardBullMQ;
  const { SelfContainedBoardAdapter } = require('./self-contained-board-adapter') as typeof BoardAdapter;
  const { SchedulerLinesAdapter } = require('./scheduler-lines-adapter') as typeof LinesAdapter;
  /* eslint-enable @typescript-eslint/no-require-imports */
  const serverAdapter = new SelfContainedBoardAdapter();
  serverAdapter.setBasePath(BULL_BOARD_PATH);
  const redisInfo = () => deps.queueRedis.info() as Promise<string>;
  createBullBoard({
    // Each kind's line (its tasks not released yet) beside its queue (released and running jobs).
    queues: [
      ...TASK_KINDS.flatMap((kind) => [new BullMQAdapter(deps.taskQueues.queues[kind]), new SchedulerLinesAdapter(kind, deps.taskLifecycle.queueFigures, redisInfo)]),
      new BullMQAdapter(deps.webhooks.queue),
    ],
    serverAdapter,
    options: { uiConfig: { boardTitle: 'Task API queues' } },
  });
  return serverAdapter.getRouter() as Router;
}

/** Bull Board behind operator auth; the board itself is built on the first request that passes it. */
export function bullBoardRoutes(deps: ApiDeps, auth: RequestHandler): [RequestHandler, RequestHandler] {
  let board: Router | undefined;
  return [
    auth,
    (req, res, next) => {
      board ??= buildBoard(deps);
      board(req, res, next);
    },
  ];
}
