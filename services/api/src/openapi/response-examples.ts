// Example bodies of the success responses, by operationId and status, for routes whose declaration
// does not carry its own (`ResponseSpec.examples` wins). Values are shaped like real answers: the
// OpenAPI test parses every one with the route's response schema, and Redocly checks them against
// the JSON Schema.

type Examples = Record<string, { summary?: string; value: unknown }>;

const TASK_ID = 'task_3kT9xQ2mLp7Vn4Rb8Yc1Zd';
const SIGNED = 'expires=1767229200&signature=Qm9vdGggdGhlIHNpZ25hdHVyZSBpcyA0M2NoYXJzLg';

const queuedImage = {
  public_id: TASK_ID,
  kind: 'image-generation',
  status: 0,
  error_code: null,
  error_message: null,
  input: { prompt: 'a lighthouse at dawn', width: 512, height: 512 },
  payload: { order_id: 'A-1001' },
  callback_url: 'https://example.com/webhooks/taskapi',
  cost: 2,
  created_at: '2026-01-01T00:00:00.000Z',
  started_at: null,
  finished_at: null,
  result: null,
  files: [],
  files_expired_at: null,
  priority: null,
  ttl_seconds: null,
  fairness_key: null,
  progress: null,
  queue: { ahead: 3, held_by_account_cap: false },
};

const runningImage = { ...queuedImage, status: 10, started_at: '2026-01-01T00:00:00.412Z', progress: 0.42, queue: null };

const completedImage = {
  ...runningImage,
  status: 20,
  finished_at: '2026-01-01T00:00:01.274Z',
  result: { width: 512, height: 512 },
  files: [{ name: 'image.png', content_type: 'image/png', size: 48213, url: `https://api.example.com/api/files/${TASK_ID}/image.png?${SIGNED}` }],
  progress: 1,
};

const queuedVideo = {
  ...queuedImage,
  public_id: 'task_8Ws2Ed4Rf6Tg8Yh1Uj3Ik5',
  kind: 'video-generation',
  input: { prompt: 'waves rolling onto a beach', duration_seconds: 4 },
  cost: 10,
  priority: 600,
  ttl_seconds: 3600,
  fairness_key: 'user-42',
  queue: { ahead: 0, held_by_account_cap: true },
};

const failedVideo = {
  ...queuedVideo,
  status: 30,
  error_code: 'engine_error',
  error_message: 'The engine failed to process the task.',
  started_at: '2026-01-01T00:00:00.380Z',
  finished_at: '2026-01-01T00:00:02.915Z',
  progress: 0.35,
  queue: null,
};

const completedFaces = {
  ...queuedImage,
  public_id: 'task_1Az2Sx3Dc4Fv5Gb6Hn7Jm8',
  kind: 'face-detection',
  status: 20,
  input: { image_url: 'https://example.com/photos/team.jpg' },
  payload: null,
  callback_url: null,
  cost: 1,
  started_at: '2026-01-01T00:00:00.120Z',
  finished_at: '2026-01-01T00:00:00.655Z',
  result: { face_coordinates: [{ x: 120, y: 64, width: 88, height: 96, score: 0.97 }] },
  progress: 1,
  queue: null,
};

const cancelledImage = { ...queuedImage, status: 40, finished_at: '2026-01-01T00:00:00.250Z', queue: null };
const queuedFaces = { ...completedFaces, status: 0, started_at: null, finished_at: null, result: null, files: [], progress: null, queue: { ahead: 0, held_by_account_cap: false } };

const taskExamples = (created: unknown, finished: unknown): Examples => ({
  queued: { summary: 'Created and queued (status 0)', value: created },
  finished: { summary: 'With `Prefer: wait=N`: finished within the wait', value: finished },
});

const getTask: Examples = {
  completed: { summary: 'Image generation completed, with its signed file link', value: completedImage },
  failed: { summary: 'Video generation failed (credits refunded)', value: failedVideo },
  faces: { summary: 'Face detection completed', value: completedFaces },
  running: { summary: 'Processing: the progress the engine reported', value: runningImage },
  queued: { summary: 'Still queued (or a `Prefer: wait=N` that ran out first)', value: queuedImage },
};

/** Server-sent events as they arrive: one `event: task` per change, a keep-alive comment between. */
const event = (task: unknown) => `event: task\ndata: ${JSON.stringify(task)}\n\n`;
const taskEvents: Examples = {
  completed: {
    summary: 'Queued, running, progress, completed; then the server closes the stream',
    value:
      event(queuedImage) +
      event({ ...runningImage, progress: null }) +
      event({ ...runningImage, progress: 0.5 }) +
      ': keep-alive\n\n' +
      event(completedImage),
  },
};

const taskList = (next: string | null): Examples => ({
  page: { summary: 'A page, newest first', value: { data: [completedImage, failedVideo], next_cursor: next } },
});

const paidKey = {
  id: 'key_5Jd8Qw2Er6Ty1Ui9Op3As7',
  type: 'paid',
  key_prefix: 'sk-live-Ab12Cd34',
  status: 'active',
  grant_id: null,
  created_at: '2026-01-01T00:00:00.000Z',
  last_used_at: '2026-01-02T09:14:00.000Z',
  revoked_at: null,
  spend_limit: { credits: 500, period: 'day' },
  spent: 120,
};

const trialKey = {
  ...paidKey,
  id: 'key_9Kf3Ws7Xe1Rc5Tv2Bg8Nh4',
  type: 'trial',
  key_prefix: 'sk-test-Ab12Cd34',
  grant_id: 'grant_7Hq2Lm9Xc4Vb1Nz8Kp3Rt6',
  last_used_at: null,
  spend_limit: null,
  spent: 0,
};

const revokedPaidKey = { ...paidKey, status: 'revoked', revoked_at: '2026-01-03T10:00:00.000Z' };
const newPaidKey = { ...paidKey, id: 'key_2Mn7Bv4Cx9Zl1Kj6Hg3Fd8', key_prefix: 'sk-live-Qr56St78', created_at: '2026-01-03T10:00:00.000Z', last_used_at: null };

const grant = {
  id: 'grant_7Hq2Lm9Xc4Vb1Nz8Kp3Rt6',
  quota_total: 100,
  quota_remaining: 42,
  expires_at: '2026-01-31T00:00:00.000Z',
  created_at: '2026-01-01T00:00:00.000Z',
  usable: true,
  bound_key_id: 'key_9Kf3Ws7Xe1Rc5Tv2Bg8Nh4',
  bound_key_prefix: 'sk-test-Ab12Cd34',
};

const delivery = {
  id: 'whd_8Hs2Kd9Lq4Wm1Xn7Bv3Cz6',
  public_id: TASK_ID,
  url: 'https://example.com/webhooks/taskapi',
  task_status: 20,
  state: 'succeeded',
  attempt_count: 2,
  next_attempt_at: null,
  created_at: '2026-01-01T00:00:01.274Z',
  completed_at: '2026-01-01T00:01:01.402Z',
  attempts: [
    { attempt_number: 1, started_at: '2026-01-01T00:00:01.290Z', duration_ms: 212, status_code: 500, error: 'HTTP 500', response_excerpt: 'upstream unavailable', trace_id: '4bf92f3577b34da6a3ce929d0e0e4736' },
    { attempt_number: 2, started_at: '2026-01-01T00:01:01.301Z', duration_ms: 101, status_code: 204, error: null, response_excerpt: null, trace_id: '4bf92f3577b34da6a3ce929d0e0e4736' },
  ],
};

const secret = { webhook_secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw8Ybk5AS2BYA=', rotated_at: '2026-01-01T00:00:00.000Z' };

const METRICS_SAMPLE = `# HELP taskapi_queue_depth Task jobs waiting to be picked up (wait + prioritized), by kind; queue-wide, the same on every API replica
# TYPE taskapi_queue_depth gauge
taskapi_queue_depth{kind="image-generation"} 3
taskapi_queue_depth{kind="video-generation"} 0
taskapi_queue_depth{kind="face-detection"} 0
`;

const day = (date: string, figures: Record<string, unknown>) => ({ date, ...figures });
const noTasks = {
  created: 0,
  by_kind: { 'video-generation': 0, 'image-generation': 0, 'face-detection': 0 },
  completed: 0,
  failed: 0,
  cancelled: 0,
  in_progress: 0,
  credits_spent: 0,
  failure_rate: null,
};
const usage = {
  days: 3,
  from: '2026-01-01',
  to: '2026-01-03',
  data: [
    day('2026-01-01', {
      created: 5,
      by_kind: { 'video-generation': 1, 'image-generation': 3, 'face-detection': 1 },
      completed: 4,
      failed: 1,
      cancelled: 0,
      in_progress: 0,
      credits_spent: 7,
      failure_rate: 0.2,
    }),
    day('2026-01-02', noTasks),
    day('2026-01-03', {
      created: 4,
      by_kind: { 'video-generation': 0, 'image-generation': 4, 'face-detection': 0 },
      completed: 2,
      failed: 0,
      cancelled: 1,
      in_progress: 1,
      credits_spent: 6,
      failure_rate: 0,
    }),
  ],
  totals: {
    created: 9,
    by_kind: { 'video-generation': 1, 'image-generation': 7, 'face-detection': 1 },
    completed: 6,
    failed: 1,
    cancelled: 1,
    in_progress: 1,
    credits_spent: 13,
    failure_rate: 0.1429,
  },
};

export const RESPONSE_EXAMPLES: Record<string, Record<number, Examples>> = {
  createVideoTask: { 201: taskExamples(queuedVideo, failedVideo) },
  createImageTask: { 201: taskExamples(queuedImage, completedImage) },
  createFaceDetectionTask: { 201: taskExamples(queuedFaces, completedFaces) },
  createVideoTaskBatch: { 201: { created: { summary: 'Two tasks, in request order', value: { data: [queuedVideo, { ...queuedVideo, public_id: 'task_5Rt7Yu9Io2Pa4Sd6Fg8Hj1' }] } } } },
  createImageTaskBatch: { 201: { created: { summary: 'Two tasks, in request order', value: { data: [queuedImage, { ...queuedImage, public_id: 'task_5Rt7Yu9Io2Pa4Sd6Fg8Hj1' }] } } } },
  createFaceDetectionTaskBatch: {
    201: {
      created: {
        summary: 'Two tasks, in request order',
        value: { data: [0, 1].map((i) => ({ ...queuedFaces, public_id: `task_5Rt7Yu9Io2Pa4Sd6Fg8Hj${i}`, queue: { ahead: i, held_by_account_cap: false } })) },
      },
    },
  },
  listTasks: { 200: taskList('task_8Ws2Ed4Rf6Tg8Yh1Uj3Ik5') },
  getTask: { 200: getTask },
  getTaskEvents: { 200: taskEvents },
  getPublicTask: { 200: getTask },
  getPublicTaskEvents: { 200: taskEvents },
  createReadToken: {
    201: {
      minted: {
        summary: 'A 15-minute token (the default)',
        value: { token: 'trt_3q9ZpX2mLv7Nn4Rb8Yc1ZdJ0kT6wE5rA2sD4fG6hJ8kL0zX2cV4bN6mQ8wE0rT2yU4iO6', expires_at: '2026-01-01T00:15:00.000Z' },
      },
    },
  },
  cancelTask: { 200: { cancelled: { summary: 'Cancelled (status 40, cost refunded)', value: cancelledImage } } },
  cancelTasks: {
    200: {
      ids: {
        summary: 'By ids: what became of each, in their order',
        value: {
          cancelled: 1,
          results: [
            { public_id: TASK_ID, outcome: 'cancelled' },
            { public_id: 'task_1Az2Sx3Dc4Fv5Gb6Hn7Jm8', outcome: 'already_finished' },
            { public_id: 'task_0Qw1Er2Ty3Ui4Op5As6Df7', outcome: 'not_found' },
          ],
        },
      },
      filter: { summary: 'By filter: how many', value: { cancelled: 312 } },
    },
  },
  health: { 200: { ok: { value: { status: 'ok' } } } },
  metrics: { 200: { sample: { summary: 'An excerpt', value: METRICS_SAMPLE } } },
  openApiDocument: { 200: { excerpt: { summary: 'The start of this document', value: { openapi: '3.1.0', info: { title: 'Task API', version: '1.0.0' } } } } },
  login: { 200: { session: { value: { token: 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJhY2N0XzJXYzhOdjVMcDFReDdSYjRUeTlaczMifQ.c2lnbmF0dXJl', expires_at: '2026-01-01T12:00:00.000Z' } } } },
  getSession: { 200: { session: { value: { account_id: 'acct_2Wc8Nv5Lp1Qx7Rb4Ty9Zs3', email: 'dev@example.com', api_version: '2026-11-01', expires_at: '2026-01-01T12:00:00.000Z' } } } },
  listApiKeys: { 200: { keys: { value: { data: [trialKey, paidKey] } } } },
  createApiKey: {
    201: {
      paid: { summary: 'A paid key with a daily spend limit', value: { key: { ...paidKey, last_used_at: null, spent: 0 }, plaintext_key: 'sk-live-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90' } },
      trial: { summary: 'A trial key bound to a grant', value: { key: trialKey, plaintext_key: 'sk-test-Ab12Cd34Xy98Wv76Ut54Sr32Qp10On98Ml76Kj54' } },
    },
  },
  updateApiKey: {
    200: {
      limited: { summary: 'A monthly limit set', value: { ...paidKey, spend_limit: { credits: 10000, period: 'month' }, spent: 2480 } },
      cleared: { summary: 'The limit removed (`spent` is then the month\'s)', value: { ...paidKey, spend_limit: null, spent: 2480 } },
    },
  },
  revokeApiKey: { 200: { revoked: { value: revokedPaidKey } } },
  reissueApiKey: { 201: { reissued: { value: { key: newPaidKey, plaintext_key: 'sk-live-Qr56St78Uv90Wx12Yz34Ab56Cd78Ef90Gh12Ij34', replaced_key: revokedPaidKey } } } },
  revealApiKey: { 200: { revealed: { value: { plaintext_key: 'sk-live-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90' } } } },
  listConsoleTasks: { 200: taskList(null) },
  getConsoleTask: { 200: getTask },
  getConsoleTaskEvents: { 200: taskEvents },
  getConsoleConcurrency: {
    200: {
      at_cap: { summary: 'At the cap: 12 tasks wait for a running one to end', value: { running: 10, max_running: 10, waiting: 12, held_by_cap: 12 } },
      room: { summary: 'Under the cap: waiting tasks start as workers free up', value: { running: 2, max_running: 10, waiting: 3, held_by_cap: 0 } },
    },
  },
  getConsoleFairnessKeys: {
    200: {
      keys: {
        summary: "One end user's burst holds most of the cap; the others take turns",
        value: {
          data: [
            { kind: 'image-generation', fairness_key: 'user-7', waiting: 11, running: 5 },
            { kind: 'image-generation', fairness_key: null, waiting: 1, running: 4 },
            { kind: 'video-generation', fairness_key: 'user-42', waiting: 0, running: 1 },
          ],
        },
      },
    },
  },
  getUsage: {
    200: {
      by_day: {
        summary: '`group_by=day` over three days: a failed (refunded) video on the first, a quiet second day',
        value: {
          data: [
            { date: '2026-11-01', tasks: 5, completed: 3, failed: 1, cancelled: 1, credits: 4 },
            { date: '2026-11-02', tasks: 0, completed: 0, failed: 0, cancelled: 0, credits: 0 },
            { date: '2026-11-03', tasks: 2, completed: 1, failed: 0, cancelled: 0, credits: 12 },
          ],
        },
      },
      by_kind: {
        summary: '`group_by=kind`',
        value: {
          data: [
            { kind: 'video-generation', tasks: 2, completed: 1, failed: 1, cancelled: 0, credits: 10 },
            { kind: 'image-generation', tasks: 3, completed: 2, failed: 0, cancelled: 0, credits: 6 },
            { kind: 'face-detection', tasks: 2, completed: 1, failed: 0, cancelled: 1, credits: 1 },
          ],
        },
      },
      by_key: {
        summary: '`group_by=key`',
        value: {
          data: [
            { key_prefix: 'sk-live-Ab12Cd34', tasks: 6, completed: 4, failed: 1, cancelled: 1, credits: 15 },
            { key_prefix: 'sk-test-Xy98Wv76', tasks: 1, completed: 0, failed: 0, cancelled: 0, credits: 2 },
          ],
        },
      },
    },
  },
  getConsoleUsage: { 200: { three_days: { summary: '`?days=3`: a failed video on the first day, a quiet second day', value: usage } } },
  listWebhookDeliveries: { 200: { deliveries: { summary: 'Delivered on the first retry', value: { data: [delivery] } } } },
  resendWebhookDelivery: {
    202: {
      resent: {
        summary: 'A third attempt is queued',
        value: { delivery: { ...delivery, state: 'pending', next_attempt_at: '2026-01-02T08:00:00.000Z', completed_at: null } },
      },
    },
  },
  sendTestWebhook: {
    200: {
      delivered: { summary: 'The receiver answered 204', value: { public_id: 'task_testQ8f2Lm9Xc4Vb1Nz8Kp', status_code: 204, duration_ms: 84, error: null, response_excerpt: null } },
      refused: {
        summary: 'The receiver answered 401',
        value: { public_id: 'task_testQ8f2Lm9Xc4Vb1Nz8Kp', status_code: 401, duration_ms: 61, error: 'HTTP 401', response_excerpt: '{"error":"bad signature"}' },
      },
    },
  },
  getCreditBalance: { 200: { balance: { value: { paid_balance: 1250, trial_grants: [grant] } } } },
  listTrialGrants: { 200: { grants: { value: { data: [grant] } } } },
  getWebhookSecret: { 200: { secret: { value: secret } } },
  rotateWebhookSecret: { 200: { rotated: { value: { ...secret, webhook_secret: 'whsec_3nV8cQ1xZ7rT4yU2iO9pA6sD5fG0hJ8kL1zX3cV7bN4=', rotated_at: '2026-01-05T16:20:00.000Z' } } } },
};
