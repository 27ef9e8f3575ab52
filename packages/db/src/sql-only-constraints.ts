/**
 * Rules enforced by the database that the Prisma schema language cannot express (CHECK constraints).
 * They are created in migration SQL; the migration test asserts each exists with this definition.
 */
export const SQL_ONLY_CONSTRAINTS: ReadonlyArray<{ table: string; name: string; check: string }> = [
  { table: 'accounts', name: 'accounts_paid_balance_non_negative', check: 'paid_balance >= 0' },
  { table: 'accounts', name: 'accounts_email_lower_case', check: 'email = lower(email)' },
  { table: 'accounts', name: 'accounts_max_running_in_range', check: 'max_running >= 1 AND max_running <= 10000' },
  { table: 'accounts', name: 'accounts_api_version_is_date', check: "api_version ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'" },
  { table: 'trial_grants', name: 'trial_grants_quota_total_positive', check: 'quota_total > 0' },
  {
    table: 'trial_grants',
    name: 'trial_grants_quota_remaining_in_range',
    check: 'quota_remaining >= 0 AND quota_remaining <= quota_total',
  },
  { table: 'api_keys', name: 'api_keys_grant_matches_type', check: "(type = 'trial') = (grant_id IS NOT NULL)" },
  { table: 'api_keys', name: 'api_keys_spend_limit_in_range', check: 'spend_limit_credits >= 1 AND spend_limit_credits <= 1000000000' },
  { table: 'api_keys', name: 'api_keys_spend_limit_complete', check: '(spend_limit_credits IS NULL) = (spend_limit_period IS NULL)' },
  { table: 'tasks', name: 'tasks_status_known', check: 'status IN (0, 10, 20, 30, 40)' },
  { table: 'tasks', name: 'tasks_cost_non_negative', check: 'cost >= 0' },
  { table: 'tasks', name: 'tasks_progress_in_range', check: 'progress >= 0 AND progress <= 1' },
  { table: 'tasks', name: 'tasks_priority_in_range', check: 'priority BETWEEN -86400 AND 86400' },
  { table: 'tasks', name: 'tasks_ttl_in_range', check: 'ttl_seconds BETWEEN 1 AND 604800' },
  { table: 'tasks', name: 'tasks_fairness_key_format', check: "fairness_key ~ '^[A-Za-z0-9._:@-]{1,64}$'" },
  {
    table: 'credit_ledger',
    name: 'credit_ledger_amount_sign',
    check: "(entry_type = 'charge' AND amount < 0) OR (entry_type <> 'charge' AND amount > 0)",
  },
  {
    table: 'credit_ledger',
    name: 'credit_ledger_task_entries_have_task',
    check: "(entry_type IN ('charge', 'refund')) = (task_id IS NOT NULL)",
  },
  { table: 'webhook_deliveries', name: 'webhook_deliveries_task_status_terminal', check: 'task_status IN (20, 30)' },
  { table: 'task_inputs', name: 'task_inputs_bytes_somewhere', check: 'in_store OR data IS NOT NULL' },
];

/** Functions created by migration SQL (the schema language has no functions). */
export const SQL_ONLY_FUNCTIONS: readonly string[] = ['create_tasks'];
