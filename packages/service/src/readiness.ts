/** What `/readyz` answers: each dependency `ok` or `unavailable`. */
export interface Readiness {
  ready: boolean;
  body: { status: 'ready' | 'not_ready'; checks: Record<string, 'ok' | 'unavailable'> };
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
      const state = await Promise.race([check(), deadline]).then(
        () => 'ok' as const,
        () => 'unavailable' as const,
      );
      clearTimeout(timer);
      return [name, state] as const;
    }),
  );
  const ready = entries.every(([, state]) => state === 'ok');
  return { ready, body: { status: ready ? 'ready' : 'not_ready', checks: Object.fromEntries(entries) } };
}
