// After the chaos: what the database, the customers' webhook endpoint and the clients say,
// checked against each other. Every figure is a row of the final table; `fails` rows must be 0.
import { webhookSignature } from '@taskapi/crypto';
import type { ReceivedRequest } from '@taskapi/testing';
import type pg from 'pg';
import type { Payer } from './accounts';
import type { Creation, LoadFigures } from './load';
import type { SupervisedService } from './supervisor';
import type { ChaosEvent } from './timeline';

export interface Figure {
  label: string;
  value: number;
  /** A non-zero value fails the run. */
  fails: boolean;
  note?: string;
  /** A few examples, printed when the value is not zero. */
  examples?: string[];
}

interface TaskRow {
  public_id: string;
  account_id: string;
  grant_id: string | null;
  status: number;
  error_code: string | null;
  error_message: string | null;
  attempts: number;
  cost: number;
  callback_url: string | null;
}

interface Hook {
  publicId: string;
  status: number;
  errorCode: string | null;
  payload: unknown;
  webhookId: string;
  attempt: string;
  signatureOk: boolean;
}

const TERMINAL_WITH_WEBHOOK = new Set([20, 30]);
const REFUNDED = new Set([30, 40]);
/** 503s this long after a disruption ended still count as "while a dependency was down". */
const DISRUPTION_TAIL_MS = 5_000;

export interface AuditInput {
  db: pg.Pool;
  payers: Payer[];
  creations: Creation[];
  load: LoadFigures;
  accepted: ReceivedRequest[];
  refusedOnPurpose: number;
  services: SupervisedService[];
  events: ChaosEvent[];
  windowStart: number;
}

function figure(label: string, items: string[], fails: boolean, note?: string): Figure {
  return { label, value: items.length, fails, note, examples: items.slice(0, 5) };
}

export async function audit(input: AuditInput): Promise<Figure[]> {
  const { db, payers, creations, load } = input;
  const tasks = (
    await db.query<TaskRow>('SELECT public_id, account_id, grant_id, status, error_code, error_message, attempts, cost, callback_url FROM tasks')
  ).rows;
  const byId = new Map(tasks.map((t) => [t.public_id, t]));
  const ledger = (
    await db.query<{ public_id: string; entry_type: string; amount: number }>(
      'SELECT t.public_id, l.entry_type::text AS entry_type, l.amount FROM credit_ledger l JOIN tasks t ON t.id = l.task_id',
    )
  ).rows;
  const deliveries = (
    await db.query<{ public_id: string; id: string; state: string }>(
      'SELECT t.public_id, d.id, d.state::text AS state FROM webhook_deliveries d JOIN tasks t ON t.id = d.task_id',
    )
  ).rows;
  const attemptRows = (await db.query<{ delivery_id: string; attempt_number: number }>('SELECT delivery_id, attempt_number FROM webhook_attempts')).rows;

  // Creations: what the clients hold against what the database has.
  const held = new Map(creations.filter((c) => c.publicId).map((c) => [c.publicId as string, c]));
  const lost = [...held.keys()].filter((id) => !byId.has(id));
  const unanswered = creations.filter((c) => c.gaveUp).map((c) => `#${c.seq} ${c.kind}: ${c.gaveUp}`);
  const orphans = tasks.filter((t) => !held.has(t.public_id)).map((t) => t.public_id);
  const unfinished = tasks.filter((t) => t.status === 0 || t.status === 10).map((t) => `${t.public_id} status ${t.status}`);

  // Outcomes against the fate the load chose.
  const outcome = (s: number, code: string | null) => (s === 20 ? 'completed' : s === 40 ? 'cancelled' : s === 30 ? `failed (${code})` : `status ${s}`);
  const outcomes = new Map<string, number>();
  const wrongOutcomes: string[] = [];
  const cancelMismatches: string[] = [];
  const readMismatches: string[] = [];
  // The only failures the run injects are its [fail] videos' predictions (engine_error); any other
  // failed task failed for a fault of the platform's own (docs/testing.md, "Chaos run").
  const platformFailures: string[] = [];
  // Attempts beyond what a task's fate needs (one run; two for a [flaky] video whose first
  // prediction is cancelled): spent on the faults the run injects, not on the task.
  let extraAttempts = 0;
  const extraAttemptExamples: string[] = [];
  for (const c of held.values()) {
    const t = byId.get(c.publicId as string);
    if (!t) continue;
    const o = outcome(t.status, t.error_code);
    outcomes.set(o, (outcomes.get(o) ?? 0) + 1);
    if (c.fate === 'fail' && t.status === 20) wrongOutcomes.push(`${t.public_id}: meant to fail, completed`);
    // The model takes every input the load sends: a [fail] task fails by its prediction (engine_error).
    if (t.status === 30 && t.error_code === 'invalid_input') wrongOutcomes.push(`${t.public_id}: failed with invalid_input`);
    const needed = t.status === 40 ? t.attempts : c.fate === 'flaky' ? 2 : 1;
    if (t.attempts > needed) {
      extraAttempts += t.attempts - needed;
      extraAttemptExamples.push(`${t.public_id} (${c.fate}, ${o}): ${t.attempts} attempts`);
    }
    if (t.status === 30 && !(c.fate === 'fail' && t.error_code === 'engine_error')) platformFailures.push(`${t.public_id} (${c.fate}): ${t.error_code}: ${t.error_message ?? ''}`);
    if (c.cancelAnswer === 200 && t.status !== 40) cancelMismatches.push(`${t.public_id}: cancel answered 200, task ended ${o}`);
    if (c.readStatus !== undefined && c.readStatus >= 20 && c.readStatus !== t.status) readMismatches.push(`${t.public_id}: read ${c.readStatus}, ended ${t.status}`);
  }

  // Ledger, per task: one charge of -cost; one refund of +cost exactly when failed or cancelled.
  const entries = new Map<string, Array<{ entry_type: string; amount: number }>>();
  for (const l of ledger) entries.set(l.public_id, [...(entries.get(l.public_id) ?? []), l]);
  const taskLedgerMismatches: string[] = [];
  const doubleRefunds: string[] = [];
  for (const t of tasks) {
    const rows = entries.get(t.public_id) ?? [];
    const charges = rows.filter((r) => r.entry_type === 'charge');
    const refunds = rows.filter((r) => r.entry_type === 'refund');
    if (refunds.length > 1) doubleRefunds.push(`${t.public_id}: ${refunds.length} refunds`);
    const chargeOk = charges.length === 1 && charges[0]?.amount === -t.cost;
    const refundOk = REFUNDED.has(t.status) ? refunds.length === 1 && refunds[0]?.amount === t.cost : refunds.length === 0;
    if (!chargeOk || (!refundOk && refunds.length <= 1)) {
      taskLedgerMismatches.push(`${t.public_id} (status ${t.status}, cost ${t.cost}): ${rows.map((r) => `${r.entry_type} ${r.amount}`).join(', ') || 'no ledger rows'}`);
    }
  }
  // Ledger, per payer: balance = opening - charges + refunds (from the tasks) = the sum of its ledger rows.
  const payerMismatches: string[] = [];
  for (const p of payers) {
    const own = tasks.filter((t) => t.account_id === p.accountId && t.grant_id === p.grantId);
    const expected = p.opening - own.reduce((sum, t) => sum + t.cost, 0) + own.filter((t) => REFUNDED.has(t.status)).reduce((sum, t) => sum + t.cost, 0);
    const { rows } =
      p.grantId === null
        ? await db.query<{ balance: number; ledger: string }>(
            `SELECT a.paid_balance AS balance, (SELECT COALESCE(SUM(amount), 0) FROM credit_ledger WHERE account_id = a.id AND grant_id IS NULL)::text AS ledger
               FROM accounts a WHERE a.id = $1`,
            [p.accountId],
          )
        : await db.query<{ balance: number; ledger: string }>(
            `SELECT g.quota_remaining AS balance, (SELECT COALESCE(SUM(amount), 0) FROM credit_ledger WHERE grant_id = g.id)::text AS ledger
               FROM trial_grants g WHERE g.id = $1`,
            [p.grantId],
          );
    const balance = rows[0]?.balance;
    const sum = Number(rows[0]?.ledger);
    if (balance !== expected || sum !== expected) payerMismatches.push(`${p.email} (${p.type}): balance ${balance}, ledger sum ${sum}, expected ${expected}`);
  }

  // Webhooks: what the customers' endpoint accepted.
  const secretOf = new Map(payers.map((p) => [p.accountId, p.webhookSecret]));
  const hooks = new Map<string, Hook[]>();
  const unreadable: string[] = [];
  for (const r of input.accepted) {
    try {
      const body = JSON.parse(r.body.toString()) as { public_id: string; status: number; error_code: string | null; payload: unknown };
      const account = byId.get(body.public_id)?.account_id;
      const secret = account === undefined ? undefined : secretOf.get(account);
      hooks.set(body.public_id, [
        ...(hooks.get(body.public_id) ?? []),
        {
          publicId: body.public_id,
          status: body.status,
          errorCode: body.error_code,
          payload: body.payload,
          webhookId: String(r.headers['webhook-id']),
          attempt: String(r.headers['x-webhook-attempt']),
          signatureOk: secret !== undefined && r.headers['x-signature'] === webhookSignature(secret, r.body),
        },
      ]);
    } catch {
      unreadable.push(r.body.toString().slice(0, 120));
    }
  }
  const missing: string[] = [];
  const wrongHooks: string[] = [...unreadable.map((b) => `unreadable body ${b}`)];
  let duplicates = 0;
  const duplicateExamples: string[] = [];
  for (const t of tasks) {
    const got = hooks.get(t.public_id) ?? [];
    const wanted = t.callback_url !== null && TERMINAL_WITH_WEBHOOK.has(t.status);
    if (wanted && !got.some((h) => h.status === t.status)) missing.push(`${t.public_id} (status ${t.status}): ${deliveries.filter((d) => d.public_id === t.public_id).map((d) => d.state).join(', ') || 'no delivery row'}`);
    if (!wanted && got.length > 0) wrongHooks.push(`${t.public_id}: ${got.length} webhook(s) for status ${t.status}${t.callback_url ? '' : ' without callback_url'}`);
    const seq = held.get(t.public_id)?.seq;
    for (const h of got) {
      if (h.status !== t.status || (t.status === 30 ? h.errorCode !== t.error_code : h.errorCode !== null)) wrongHooks.push(`${t.public_id}: announced ${h.status}/${h.errorCode}, task is ${t.status}/${t.error_code}`);
      if (!h.signatureOk) wrongHooks.push(`${t.public_id}: X-Signature does not verify with the account's secret`);
      if ((h.payload as { chaos_seq?: unknown } | null)?.chaos_seq !== seq) wrongHooks.push(`${t.public_id}: payload ${JSON.stringify(h.payload)} is not the one sent`);
    }
    const series = new Set(got.map((h) => h.webhookId));
    if (series.size > 1) wrongHooks.push(`${t.public_id}: ${series.size} delivery series (webhook-id ${[...series].join(', ')})`);
    if (got.length > 1) {
      duplicates += got.length - 1;
      duplicateExamples.push(`${t.public_id}: ${got.length}× (attempts ${got.map((h) => h.attempt).join(', ')}, webhook-id ${got[0]?.webhookId})`);
    }
  }
  for (const id of hooks.keys()) if (!byId.has(id)) wrongHooks.push(`${id}: webhook for a task not in the database`);
  const unsettled = deliveries.filter((d) => d.state === 'pending').map((d) => `${d.id} of ${d.public_id}`);
  const givenUp = deliveries.filter((d) => d.state === 'failed').map((d) => `${d.id} of ${d.public_id}`);

  // Attempt log: numbered 1..n without gaps.
  const numbers = new Map<string, number[]>();
  for (const a of attemptRows) numbers.set(a.delivery_id, [...(numbers.get(a.delivery_id) ?? []), a.attempt_number]);
  const attemptGaps = [...numbers].filter(([, ns]) => ns.sort((a, b) => a - b).some((n, i) => n !== i + 1)).map(([id, ns]) => `${id}: attempts ${ns.join(', ')}`);

  // Answers.
  const statusCount = (pred: (s: number) => boolean) =>
    Object.values(load.statuses).reduce((sum, m) => sum + [...m].filter(([s]) => s !== 'network' && pred(s)).reduce((n, [, c]) => n + c, 0), 0);
  const fiveHundreds = statusCount((s) => s === 500);
  const otherServerErrors = statusCount((s) => s > 500 && s !== 503);
  const unhandled = input.services.flatMap((s) => s.logs.unhandled);
  const disruptions = input.events.map((e) => [input.windowStart + e.startedMs, input.windowStart + (e.recoveredMs ?? Number.MAX_SAFE_INTEGER / 2) + DISRUPTION_TAIL_MS] as const);
  const strayUnavailable = load.answered503At.filter((at) => !disruptions.some(([from, to]) => at >= from && at <= to)).length;
  const network = Object.values(load.statuses).reduce((n, m) => n + (m.get('network') ?? 0), 0);

  return [
    { label: 'tasks created (201 to a client)', value: held.size, fails: false },
    ...[...outcomes].sort().map(([o, n]) => ({ label: `  ${o}`, value: n, fails: false })),
    { label: 'creations answered by an idempotent replay (retries)', value: load.replayed, fails: false },
    figure('tasks lost (201 answered, not in the database)', lost, true),
    figure('creations never answered (client gave up)', unanswered, true),
    figure('tasks no client knows of (charged, never answered)', orphans, true),
    figure('tasks unfinished (status 0 or 10)', unfinished, true),
    figure('tasks with the wrong outcome', wrongOutcomes, true, 'a [fail] task completed, or any task failed invalid_input'),
    figure('tasks failed by platform faults', platformFailures, true, 'failed, and not a [fail] video ending engine_error'),
    {
      label: 'attempts spent beyond what the tasks needed',
      value: extraAttempts,
      fails: false,
      note: 'only an engine failure spends an attempt: a crash or an outage spends none',
      examples: extraAttemptExamples.slice(0, 5),
    },
    figure('cancels answered 200 for a task that did not end cancelled', cancelMismatches, true),
    figure('reads showing a terminal status the task does not have', readMismatches, true),
    figure('ledger mismatches (per task)', taskLedgerMismatches, true, 'one charge of -cost; a refund of +cost iff failed/cancelled'),
    figure('ledger mismatches (per account / grant)', payerMismatches, true, 'balance = opening - charges + refunds = sum of ledger rows'),
    figure('double refunds', doubleRefunds, true),
    figure('webhooks missing (completed/failed with callback_url)', missing, true),
    figure('webhooks wrong (status, signature, payload, 2nd series, unwanted)', wrongHooks, true),
    figure('deliveries still pending', unsettled, true),
    figure('deliveries given up', givenUp, true),
    { label: 'webhooks accepted', value: input.accepted.length, fails: false },
    { label: 'duplicate deliveries (same webhook-id, at-least-once)', value: duplicates, fails: false, note: 'by design after a crash mid-attempt', examples: duplicateExamples.slice(0, 5) },
    { label: 'webhook requests refused on purpose (500, retried)', value: input.refusedOnPurpose, fails: false },
    figure('webhook attempt numbers with gaps', attemptGaps, true),
    { label: '500s answered', value: fiveHundreds, fails: true },
    figure("API 'unhandled error' log lines", unhandled, true),
    { label: 'other 5xx answered (not 503)', value: otherServerErrors, fails: true },
    figure('unexpected answers (4xx other than 409 on cancel, 429)', load.unexpected.map((u) => `${u.op} ${u.status}: ${u.message}`), true),
    { label: '503s answered (dependency down: by design)', value: load.answered503At.length, fails: false },
    { label: `  of which outside disruptions (+${DISRUPTION_TAIL_MS / 1000} s)`, value: strayUnavailable, fails: false },
    { label: 'requests that met a network error (retried)', value: network, fails: false, note: [...load.networkCauses].map(([c, n]) => `${c} ${n}`).join(', ') },
    ...input.services.map((s) => ({
      label: `${s.name}: exits we did not cause`,
      value: s.unexpected.crashes + s.unexpected.failedStarts,
      fails: false,
      note: s.unexpected.crashes + s.unexpected.failedStarts ? `${s.unexpected.crashes} after ready, ${s.unexpected.failedStarts} while starting` : undefined,
    })),
  ];
}
