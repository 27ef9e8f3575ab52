-- Tracing (docs/architecture.md, "Tracing"): a task keeps the `traceparent` of its creation
-- request's span, so its worker runs (retries and sweeper re-enqueues included) and its webhook
-- attempts join that trace; each attempt records the trace id it was sent in. Both columns are
-- nullable without a default: catalog-only changes, and NULL whenever tracing is off.
ALTER TABLE "tasks" ADD COLUMN "trace_parent" TEXT;
ALTER TABLE "webhook_attempts" ADD COLUMN "trace_id" TEXT;

-- create_tasks takes the traceparents as a 12th argument that defaults to NULL. The 11-argument
-- function is dropped in the same transaction, so a replica of the previous release, which calls
-- it with 11 arguments, gets this one (its tasks have no traceparent) with no moment in between.
DROP FUNCTION "create_tasks"(TEXT, TEXT, TEXT[], TEXT[], "task_kind"[], JSON[], JSON[], TEXT[], INTEGER[], TEXT[], BYTEA[]);

CREATE OR REPLACE FUNCTION "create_tasks"(
    p_account_id TEXT,
    p_grant_id TEXT,
    p_public_ids TEXT[],
    p_api_key_ids TEXT[],
    p_kinds "task_kind"[],
    p_inputs JSON[],
    p_payloads JSON[],
    p_callback_urls TEXT[],
    p_costs INTEGER[],
    p_upload_types TEXT[],
    p_upload_data BYTEA[],
    p_trace_parents TEXT[] DEFAULT NULL
) RETURNS TABLE ("ordinal" INTEGER, "task_id" BIGINT, "created_at" TIMESTAMPTZ, "available" INTEGER, "grant_expired" BOOLEAN)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_available INTEGER;
    v_expired BOOLEAN := FALSE;
    v_accepted BOOLEAN[] := '{}';
    v_remaining INTEGER[] := '{}';
    v_total INTEGER := 0;
    i INTEGER;
BEGIN
    -- NO KEY UPDATE: serializes charges against this payer without blocking the foreign-key
    -- (KEY SHARE) locks that inserting tasks takes on the account row.
    IF p_grant_id IS NULL THEN
        SELECT a.paid_balance INTO v_available FROM accounts a WHERE a.id = p_account_id FOR NO KEY UPDATE;
    ELSE
        SELECT g.quota_remaining, g.expires_at <= now() INTO v_available, v_expired
          FROM trial_grants g WHERE g.id = p_grant_id AND g.account_id = p_account_id FOR NO KEY UPDATE;
    END IF;
    v_available := COALESCE(v_available, 0);
    v_expired := COALESCE(v_expired, FALSE);

    FOR i IN 1 .. COALESCE(cardinality(p_public_ids), 0) LOOP
        IF NOT v_expired AND v_available >= p_costs[i] THEN
            v_available := v_available - p_costs[i];
            v_total := v_total + p_costs[i];
            v_accepted := v_accepted || TRUE;
        ELSE
            v_accepted := v_accepted || FALSE;
        END IF;
        v_remaining := v_remaining || v_available;
    END LOOP;

    IF v_total > 0 THEN
        IF p_grant_id IS NULL THEN
            UPDATE accounts SET paid_balance = paid_balance - v_total WHERE id = p_account_id;
        ELSE
            UPDATE trial_grants SET quota_remaining = quota_remaining - v_total WHERE id = p_grant_id;
        END IF;
    END IF;

    RETURN QUERY
    WITH req AS (
        SELECT *
          FROM unnest(p_public_ids, p_api_key_ids, p_kinds, p_inputs, p_payloads, p_callback_urls, p_costs,
                      v_accepted, v_remaining, p_upload_types, p_upload_data, p_trace_parents)
               WITH ORDINALITY AS r(public_id, api_key_id, kind, input, payload, callback_url, cost,
                                    accepted, remaining, upload_type, upload_data, trace_parent, ord)
    ), inserted AS (
        INSERT INTO tasks (public_id, account_id, api_key_id, grant_id, kind, input, payload, callback_url, cost, trace_parent)
        SELECT public_id, p_account_id, api_key_id, p_grant_id, kind, input, payload, callback_url, cost, trace_parent
          FROM req WHERE accepted ORDER BY ord
        RETURNING id, public_id, created_at
    ), ledger AS (
        INSERT INTO credit_ledger (account_id, grant_id, task_id, entry_type, amount)
        SELECT p_account_id, p_grant_id, t.id, 'charge', -r.cost
          FROM inserted t JOIN req r ON r.public_id = t.public_id
    ), uploads AS (
        INSERT INTO task_inputs (task_id, content_type, data, in_store)
        SELECT t.id, r.upload_type, r.upload_data, r.upload_data IS NULL
          FROM inserted t JOIN req r ON r.public_id = t.public_id
         WHERE r.upload_type IS NOT NULL
    )
    SELECT r.ord::INTEGER, t.id, t.created_at, r.remaining, v_expired
      FROM req r LEFT JOIN inserted t ON t.public_id = r.public_id
     ORDER BY r.ord;
END;
$$;
