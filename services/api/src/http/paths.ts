// Where the app mounts what is not a registry route, for the middleware that treats it apart
// (access-log levels) and for the code that mounts it (app.ts, routes/bull-board.ts).

/** Bull Board, the operators' queue UI. */
export const BULL_BOARD_PATH = '/admin/queues';
