-- Steering tasks (docs/api.md, "Order, lifetime and fairness inside an account"): three optional fields of a
-- creation, stored with the task. `priority` (seconds, -86400..86400) places the task within its
-- account and kind as if created that much earlier; `ttl_seconds` (1..604800) expires it (status 40,
-- error_code `expired`, refunded) when it has not started that long after its creation
-- (`expires_at`, set once at creation); `fairness_key` makes the account's tasks of a kind take
-- turns across its end users. New columns are nullable without defaults: catalog-only changes.
ALTER TABLE "tasks" ADD COLUMN "priority" INTEGER,
                    ADD COLUMN "ttl_seconds" INTEGER,
                    ADD COLUMN "expires_at" TIMESTAMPTZ(3),
                    ADD COLUMN "fairness_key" TEXT;
ALTER TABLE "tasks" ADD CONSTRAINT "tasks_priority_in_range" CHECK (priority BETWEEN -86400 AND 86400) NOT VALID;
ALTER TABLE "tasks" ADD CONSTRAINT "tasks_ttl_in_range" CHECK (ttl_seconds BETWEEN 1 AND 604800) NOT VALID;
ALTER TABLE "tasks" ADD CONSTRAINT "tasks_fairness_key_format" CHECK (fairness_key ~ '^[A-Za-z0-9._:@-]{1,64}$') NOT VALID;
-- Validated in the next migration (a lock that lets reads and writes go on); their indexes are
-- built CONCURRENTLY in the two after it.

-- create_tasks takes the three fields (defaults NULL: a replica of the previous release, calling
-- with its arguments, still creates tasks). The old signature goes first, or its calls would be
-- ambiguous between the two.
DROP FUNCTION "create_tasks"(TEXT, TEXT, TEXT[], TEXT[], "task_kind"[], JSON[], JSON[], TEXT[], INTEGER[], TEXT[], BYTEA[], TEXT[], BOOLEAN);

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
    p_trace_parents TEXT[] DEFAULT NULL,
    p_all_or_nothing BOOLEAN DEFAULT FALSE,
    p_priorities INTEGER[] DEFAULT NULL,
    p_ttls INTEGER[] DEFAULT NULL,
    p_fairness_keys TEXT[] DEFAULT NULL
) RETURNS TABLE ("ordinal" INTEGER, "task_id" BIGINT, "created_at" TIMESTAMPTZ, "available" INTEGER, "grant_expired" BOOLEAN,
                 "spend_limit" INTEGER, "spend_period" TEXT, "spent" BIGINT)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_available INTEGER;
    v_expired BOOLEAN := FALSE;
    v_today DATE := (now() AT TIME ZONE 'UTC')::date;
    v_n INTEGER := COALESCE(cardinality(p_public_ids), 0);
    v_accepted BOOLEAN[] := '{}';
    v_remaining INTEGER[] := '{}';
    -- Per creation refused by a spend limit: the limit's chain (below) and its spent before it; else NULL.
    v_limited INTEGER[] := '{}';
    v_limited_spent BIGINT[] := '{}';
    v_total INTEGER := 0;
    -- Each distinct key of the call, and the index of its spend chain.
    v_keys TEXT[] := '{}';
    v_key_chain INTEGER[] := '{}';
    -- Each spend chain (a key and the keys reissued from it): its limit, the credits spent in the
    -- limit's current period before this call, and what this call adds.
    v_chains TEXT[] := '{}';
    v_limits INTEGER[] := '{}';
    v_periods TEXT[] := '{}';
    v_spent BIGINT[] := '{}';
    v_added BIGINT[] := '{}';
    v_sum BIGINT;
    v_refused INTEGER;
    v_all BOOLEAN;
    k RECORD;
    i INTEGER;
    c INTEGER;
BEGIN
    -- NO KEY UPDATE: serializes charges against this payer without blocking the foreign-key
    -- (KEY SHARE) locks that inserting tasks takes on the account row. Every key of a spend chain
    -- draws on the same payer, so this lock also makes the spend-limit checks below exact.
    IF p_grant_id IS NULL THEN
        SELECT a.paid_balance INTO v_available FROM accounts a WHERE a.id = p_account_id FOR NO KEY UPDATE;
    ELSE
        SELECT g.quota_remaining, g.expires_at <= now() INTO v_available, v_expired
          FROM trial_grants g WHERE g.id = p_grant_id AND g.account_id = p_account_id FOR NO KEY UPDATE;
    END IF;
    v_available := COALESCE(v_available, 0);
    v_expired := COALESCE(v_expired, FALSE);

    -- The keys' spend limits, read after the lock: a limit changed a moment ago applies at once.
    FOR k IN SELECT ak.id, COALESCE(ak.spend_key_id, ak.id) AS chain, ak.spend_limit_credits AS lim, ak.spend_limit_period::text AS period
               FROM api_keys ak WHERE ak.id = ANY(p_api_key_ids) LOOP
        c := array_position(v_chains, k.chain);
        IF c IS NULL THEN
            v_sum := 0;
            IF k.lim IS NOT NULL THEN
                SELECT COALESCE(sum(s.spent), 0) INTO v_sum FROM api_key_spend s
                 WHERE s.key_id = k.chain
                   AND s.day >= CASE WHEN k.period = 'day' THEN v_today ELSE date_trunc('month', v_today)::date END;
            END IF;
            v_chains := v_chains || k.chain;
            v_limits := v_limits || k.lim;
            v_periods := v_periods || k.period;
            v_spent := v_spent || v_sum;
            v_added := v_added || 0::BIGINT;
            c := cardinality(v_chains);
        END IF;
        v_keys := v_keys || k.id;
        v_key_chain := v_key_chain || c;
    END LOOP;

    IF p_all_or_nothing THEN
        -- One decision for every creation of the call: each chain's sum against its limit (the
        -- limit's refusal comes first), then the total against the payer's credits.
        FOR i IN 1 .. v_n LOOP
            c := v_key_chain[array_position(v_keys, p_api_key_ids[i])];
            IF c IS NOT NULL THEN v_added[c] := v_added[c] + p_costs[i]; END IF;
            v_total := v_total + p_costs[i];
        END LOOP;
        IF NOT v_expired THEN
            FOR c IN 1 .. cardinality(v_chains) LOOP
                IF v_limits[c] IS NOT NULL AND v_spent[c] + v_added[c] > v_limits[c] THEN
                    v_refused := c;
                    EXIT;
                END IF;
            END LOOP;
        END IF;
        v_all := NOT v_expired AND v_refused IS NULL AND v_available >= v_total;
        IF NOT v_all THEN
            v_total := 0;
            FOR c IN 1 .. cardinality(v_chains) LOOP v_added[c] := 0; END LOOP;
        END IF;
        FOR i IN 1 .. v_n LOOP
            IF v_all THEN v_available := v_available - p_costs[i]; END IF;
            v_accepted := v_accepted || v_all;
            v_remaining := v_remaining || v_available;
            v_limited := v_limited || v_refused;
            v_limited_spent := v_limited_spent || v_spent[v_refused];
        END LOOP;
    ELSE
        -- Each creation in turn, as if it had come alone.
        FOR i IN 1 .. v_n LOOP
            c := v_key_chain[array_position(v_keys, p_api_key_ids[i])];
            IF v_expired THEN
                v_accepted := v_accepted || FALSE;
                v_limited := v_limited || NULL::INTEGER;
                v_limited_spent := v_limited_spent || NULL::BIGINT;
            ELSIF c IS NOT NULL AND v_limits[c] IS NOT NULL AND v_spent[c] + v_added[c] + p_costs[i] > v_limits[c] THEN
                v_accepted := v_accepted || FALSE;
                v_limited := v_limited || c;
                v_limited_spent := v_limited_spent || (v_spent[c] + v_added[c]);
            ELSIF v_available >= p_costs[i] THEN
                v_available := v_available - p_costs[i];
                v_total := v_total + p_costs[i];
                IF c IS NOT NULL THEN v_added[c] := v_added[c] + p_costs[i]; END IF;
                v_accepted := v_accepted || TRUE;
                v_limited := v_limited || NULL::INTEGER;
                v_limited_spent := v_limited_spent || NULL::BIGINT;
            ELSE
                v_accepted := v_accepted || FALSE;
                v_limited := v_limited || NULL::INTEGER;
                v_limited_spent := v_limited_spent || NULL::BIGINT;
            END IF;
            v_remaining := v_remaining || v_available;
        END LOOP;
    END IF;

    IF v_total > 0 THEN
        IF p_grant_id IS NULL THEN
            UPDATE accounts SET paid_balance = paid_balance - v_total WHERE id = p_account_id;
        ELSE
            UPDATE trial_grants SET quota_remaining = quota_remaining - v_total WHERE id = p_grant_id;
        END IF;
        -- Every key's spend is counted, limited or not: a limit set later starts from the truth.
        INSERT INTO api_key_spend AS s (key_id, day, spent)
        SELECT u.chain, v_today, u.amount FROM unnest(v_chains, v_added) AS u(chain, amount) WHERE u.amount > 0
        ON CONFLICT (key_id, day) DO UPDATE SET spent = s.spent + EXCLUDED.spent;
    END IF;

    RETURN QUERY
    WITH req AS (
        SELECT *
          FROM unnest(p_public_ids, p_api_key_ids, p_kinds, p_inputs, p_payloads, p_callback_urls, p_costs,
                      v_accepted, v_remaining, p_upload_types, p_upload_data, p_trace_parents, v_limited, v_limited_spent,
                      p_priorities, p_ttls, p_fairness_keys)
               WITH ORDINALITY AS r(public_id, api_key_id, kind, input, payload, callback_url, cost,
                                    accepted, remaining, upload_type, upload_data, trace_parent, limited, limited_spent,
                                    priority, ttl_seconds, fairness_key, ord)
    ), inserted AS (
        -- A task with a ttl expires that long after its creation (by the same clock as created_at).
        INSERT INTO tasks (public_id, account_id, api_key_id, grant_id, kind, input, payload, callback_url, cost, trace_parent,
                           priority, ttl_seconds, expires_at, fairness_key)
        SELECT public_id, p_account_id, api_key_id, p_grant_id, kind, input, payload, callback_url, cost, trace_parent,
               priority, ttl_seconds, CASE WHEN ttl_seconds IS NULL THEN NULL ELSE now() + make_interval(secs => ttl_seconds) END, fairness_key
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
    SELECT r.ord::INTEGER, t.id, t.created_at, r.remaining, v_expired, v_limits[r.limited], v_periods[r.limited], r.limited_spent
      FROM req r LEFT JOIN inserted t ON t.public_id = r.public_id
     ORDER BY r.ord;
END;
$$;
