import { isDatabaseUnavailable } from '@taskapi/db';
import type { NewTask as SchedulerTask } from '@taskapi/scheduler';
import { BatchedStatement } from '@taskapi/service';
import { newId } from '@taskapi/ids';
import { TaskStatus } from '@taskapi/domain';
import { sha256Hex } from '@taskapi/crypto';
import { inputKey, type FileStore } from '@taskapi/file-store';
import { ApiError } from '../errors';
import type { IdempotencyRepository } from '../repositories/idempotency';
import type { CreationOutcome, NewTask, Payer, TaskRepository, TaskRow } from '../repositories/tasks';
import type { KeyPrincipal } from './principal';
import type { TaskDraft } from './task-input';


export interface IdempotencyRequest {
  key: string;
  /** Hash of what makes two requests "the same" (kind and body). */
  fingerprint: string;
}

export interface CreateTaskResult {
  row: TaskRow;
  /** True when an earlier request with the same Idempotency-Key created this task. */
  replayed: boolean;
}

/** Canonical fingerprint of a creation request: key order and whitespace do not matter. */
export function requestFingerprint(kind: string, body: unknown): string {
  const canonical = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(canonical);
    if (v && typeof v === 'object') {
      return Object.fromEntries(
        Object.keys(v)
          .sort()
          .map((k) => [k, canonical((v as Record<string, unknown>)[k])]),
      );
    }
    return v;
  };
  return sha256Hex(`${kind}\n${JSON.stringify(canonical(body))}`);
}

interface Creation {
  principal: KeyPrincipal;
  task: NewTask;
}

/** Who pays: an account's paid balance, or one trial grant. Creations for one payer are batched. */
function payerKey(p: KeyPrincipal): string {
  return p.type === 'trial' && p.grantId ? `grant:${p.grantId}` : `paid:${p.accountId}`;
}

function payerOf(p: KeyPrincipal): Payer {
  return { accountId: p.accountId, grantId: p.type === 'trial' ? p.grantId : null };
}

/** One task of a batch request: its draft and its cost. */
export interface BatchItem {
  draft: TaskDraft;
  cost: number;
}

export interface CreateBatchResult {
  rows: TaskRow[];
  /** True when an earlier request with the same Idempotency-Key created these tasks. */
  replayed: boolean;
}

export interface TaskCreatorRepositories {
  tasks: Pick<TaskRepository, 'create' | 'createAll' | 'createWithIdempotencyKey' | 'getById' | 'getManyById'>;
  idempotency: Pick<IdempotencyRepository, 'find'>;
}

/**
 * Charges the caller and records tasks. Concurrent creations for the same payer are decided
 * together in one database call (see `create_tasks`), in arrival order: never an overdraft, and
 * one balance-row lock and one commit per batch instead of per task.
 */
export class TaskCreator {
  private readonly creations: BatchedStatement<string, Creation, CreationOutcome>;

  private readonly tasks: TaskCreatorRepositories['tasks'];
  private readonly idempotency: TaskCreatorRepositories['idempotency'];

  constructor(
    repos: TaskCreatorRepositories,
    /** Where uploaded face-detection images go (`inputs/<public_id>/image`), out of PostgreSQL. */
    private readonly store: FileStore,
    /** Prefixes for the expired-trial 401, when a grant expires between authentication and charge. */
    private readonly activeTrialPrefixes: (accountId: string, exceptKeyId: string) => Promise<string[]>,
  ) {
    this.tasks = repos.tasks;
    this.idempotency = repos.idempotency;
    // Uploaded images go to the file store before the batch: the batch carries no image bytes. If a
    // batch fails, each creation is tried alone, so one bad request fails only itself (unless the
    // database is unreachable: then each would fail alike).
    this.creations = new BatchedStatement((_payer, batch) => this.tasks.create(payerOf((batch[0] as Creation).principal), batch.map((c) => c.task)), {
      maxItems: 100,
      failsEveryItem: isDatabaseUnavailable,
    });
  }

  /**
   * Throws 402 when credits are short. With an idempotency key, the same key and body within 24 h
   * returns the first task (charged once) and a different body is a 409. `traceParent` is stored
   * with the task (`tasks.trace_parent`): its trace continues in the worker and each webhook attempt.
   */
  async create(principal: KeyPrincipal, draft: TaskDraft, cost: number, idempotency?: IdempotencyRequest, traceParent?: string): Promise<CreateTaskResult> {
    const task = newTask(principal, draft, cost, traceParent);
    let outcome: CreationOutcome;
    if (!idempotency) {
      task.upload = await this.storeUpload(task.publicId, draft);
      // On an error the creation may still have committed (a connection lost after COMMIT): the
      // image stays. Only a definite refusal, below, deletes it.
      outcome = await this.creations.call(payerKey(principal), { principal, task });
    } else {
      const earlier = await this.findIdempotent(principal.accountId, idempotency);
      if (earlier) return earlier;
      task.upload = await this.storeUpload(task.publicId, draft);
      outcome = await this.tasks.createWithIdempotencyKey(payerOf(principal), task, idempotency);
      if (!outcome.task_id) {
        await this.dropUpload(task);
        // Either a concurrent twin won the key, or credits ran out (possibly spent by that twin).
        const twin = await this.findIdempotent(principal.accountId, idempotency);
        if (twin) return twin;
      }
    }
    if (!outcome.task_id || !outcome.created_at) {
      await this.dropUpload(task);
      throw await this.refusal(principal, cost, outcome);
    }
    return { replayed: false, row: createdRow(task, outcome.task_id, outcome.created_at) };
  }

  /**
   * Creates every task of a batch request with one charge in one transaction, or none: a refusal
   * (spend limit first, then credits, for the batch's total) is thrown. Not batched with other
   * creations: the request is already its own batch. With an idempotency key, the same key and body
   * within 24 h returns the first batch's tasks (charged once); a different body is a 409.
   */
  async createBatch(principal: KeyPrincipal, items: readonly BatchItem[], idempotency?: IdempotencyRequest, traceParent?: string): Promise<CreateBatchResult> {
    if (idempotency) {
      const earlier = await this.findIdempotentBatch(principal.accountId, idempotency);
      if (earlier) return earlier;
    }
    const tasks = items.map((item) => newTask(principal, item.draft, item.cost, traceParent));
    await Promise.all(tasks.map(async (task, i) => (task.upload = await this.storeUpload(task.publicId, (items[i] as BatchItem).draft))));
    const outcomes = await this.tasks.createAll(payerOf(principal), tasks, idempotency);
    if (outcomes.some((o) => !o.task_id || !o.created_at)) {
      await Promise.all(tasks.map((task) => this.dropUpload(task)));
      if (idempotency) {
        // Either a concurrent twin won the key, or the batch was refused (possibly after that twin spent).
        const twin = await this.findIdempotentBatch(principal.accountId, idempotency);
        if (twin) return twin;
      }
      const total = items.reduce((sum, item) => sum + item.cost, 0);
      throw await this.refusal(principal, total, outcomes[0] as CreationOutcome);
    }
    return { replayed: false, rows: tasks.map((task, i) => createdRow(task, outcomes[i]!.task_id!, outcomes[i]!.created_at!)) };
  }

  /**
   * Puts an uploaded image in the file store before its task row exists, so a worker never sees a
   * task whose image is not stored yet; the row then only says `in_store`. (An unreachable store is a
   * 503 through the error middleware.)
   */
  private async storeUpload(publicId: string, draft: TaskDraft): Promise<NewTask['upload']> {
    if (!draft.upload) return null;
    await this.store.put(inputKey(publicId), draft.upload.data, draft.upload.contentType);
    return { contentType: draft.upload.contentType, data: null };
  }

  /** The image of a creation that was refused (credits, idempotency twin, error): nothing refers to it. */
  private async dropUpload(task: NewTask): Promise<void> {
    if (!task.upload) return;
    // Best effort: an orphan left by an unreachable store is harmless (no row points at it).
    await this.store.deleteMany([inputKey(task.publicId)]).catch(() => undefined);
  }

  private async findIdempotent(accountId: string, req: IdempotencyRequest): Promise<CreateTaskResult | null> {
    const found = await this.idempotency.find(accountId, req.key);
    if (!found) return null;
    if (found.fingerprint !== req.fingerprint) throw new ApiError('IDEMPOTENCY_KEY_REUSED');
    const task = await this.tasks.getById(found.task_id);
    if (!task) return null;
    return { replayed: true, row: asCreated(task) };
  }

  private async findIdempotentBatch(accountId: string, req: IdempotencyRequest): Promise<CreateBatchResult | null> {
    const found = await this.idempotency.find(accountId, req.key);
    if (!found) return null;
    // A key first used for one task (or another batch) has another fingerprint: a 409 either way.
    if (found.fingerprint !== req.fingerprint || !found.batch_task_ids) throw new ApiError('IDEMPOTENCY_KEY_REUSED');
    const rows = await this.tasks.getManyById(found.batch_task_ids);
    if (rows.length !== found.batch_task_ids.length) return null;
    return { replayed: true, rows: rows.map(asCreated) };
  }

  private async refusal(principal: KeyPrincipal, cost: number, outcome: CreationOutcome): Promise<ApiError> {
    if (outcome.grant_expired) {
      const prefixes = await this.activeTrialPrefixes(principal.accountId, principal.keyId);
      return new ApiError('TRIAL_KEY_EXPIRED', { fields: { active_key_prefixes: prefixes } });
    }
    if (outcome.spend_limit !== null) {
      return new ApiError('SPEND_LIMIT_REACHED', { fields: { limit: outcome.spend_limit, period: outcome.spend_period, spent: outcome.spent } });
    }
    return new ApiError('INSUFFICIENT_CREDITS', { fields: { required: cost, available: outcome.available } });
  }
}

function newTask(principal: KeyPrincipal, draft: TaskDraft, cost: number, traceParent: string | undefined): NewTask {
  return {
    publicId: newId('task'),
    apiKeyId: principal.keyId,
    kind: draft.kind,
    inputText: JSON.stringify(draft.input),
    payloadText: draft.payloadText,
    callbackUrl: draft.callbackUrl,
    cost,
    upload: null,
    traceParent: traceParent ?? null,
    priority: draft.priority,
    ttlSeconds: draft.ttlSeconds,
    fairnessKey: draft.fairnessKey,
  };
}

/** What the scheduler needs of a task just created (its place: order, priority, deadline, fairness key). */
export function scheduledTask(row: TaskRow, accountId: string, traceParent: string | undefined): SchedulerTask {
  return {
    publicId: row.public_id,
    accountId,
    order: row.id,
    createdAt: row.created_at,
    traceParent,
    priority: row.priority,
    expiresAt: row.expires_at,
    fairnessKey: row.fairness_key,
  };
}

/** The row of a task just inserted: queued, nothing run yet. */
function createdRow(task: NewTask, id: string, createdAt: Date): TaskRow {
  return {
    id,
    public_id: task.publicId,
    kind: task.kind,
    status: TaskStatus.queued,
    error_code: null,
    error_message: null,
    progress: null,
    input: task.inputText,
    payload: task.payloadText,
    callback_url: task.callbackUrl,
    cost: task.cost,
    created_at: createdAt,
    started_at: null,
    finished_at: null,
    result: null,
    files: '[]',
    files_expired_at: null,
    priority: task.priority,
    ttl_seconds: task.ttlSeconds,
    // As create_tasks sets it: by the same clock as created_at.
    expires_at: task.ttlSeconds === null ? null : new Date(createdAt.getTime() + task.ttlSeconds * 1000),
    fairness_key: task.fairnessKey,
  };
}

/** A replay is the first response again: the task as it was created. */
function asCreated(task: TaskRow): TaskRow {
  return { ...task, status: TaskStatus.queued, error_code: null, error_message: null, started_at: null, finished_at: null, result: null, files: '[]', files_expired_at: null, progress: null };
}
