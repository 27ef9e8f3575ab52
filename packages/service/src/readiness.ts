/** What `/readyz` answers: each dependency `ok` or `unavailable`, and what is wrong where we can say. */
export interface Readiness {
  ready: boolean;
  body: { status: 'ready' | 'not_ready'; checks: Record<string, 'ok' | 'unavailable'>; problems?: Record<string, string> };
}

/**
 * A failed check's explanation for operators (`problems` in `/readyz`): written by our own checks
 * from what they found (e.g. which Redis Sentinel said what), never a dependency's raw error, which
 * could carry a connection string.
 */
export class ReadinessProblem extends Error {
  override name = 'ReadinessProblem';
}

/**
 * Runs every check at once; one that fails or takes longer than `timeoutMs` counts as unavailable
 * (a Redis client that queues commands while disconnected would otherwise never answer).
 */
export async function checkReadiness(checks: Record<string, () => Promise<unknown>>, timeoutMs = 2_000): Promise<Readiness> {
  const entries = await Promise.all(
    Object.entries(checks).map(async ([name, check]) => {
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), timeoutMs);
      });
      const result = await Promise.race([check(), deadline]).then(
        () => ({ state: 'ok' as const }),
        (err: unknown) => ({ state: 'unavailable' as const, problem: err instanceof ReadinessProblem ? err.message : undefined }),
      );
      clearTimeout(timer);
      return [name, result] as const;
    }),
  );
  const ready = entries.every(([, r]) => r.state === 'ok');
  const problems = Object.fromEntries(entries.flatMap(([name, r]) => ('problem' in r && r.problem ? [[name, r.problem]] : [])));
  return {
    ready,
    body: {
      status: ready ? 'ready' : 'not_ready',
      checks: Object.fromEntries(entries.map(([name, r]) => [name, r.state])),
      ...(Object.keys(problems).length ? { problems } : {}),
    },
  };
}
