import type { Logger } from '@taskapi/logger';
import type { RedisClient } from './redis-client';

/** What a listener hears: a message for its key, or `recheck` after a reconnect (messages published meanwhile are lost). */
export type FanoutEvent = { kind: 'message'; channel: string; message: string } | { kind: 'recheck' };

/**
 * A process's pub/sub connection, its messages routed by key (e.g. a task's public id) to the
 * listeners registered for that key: one subscription per process, however many listeners. Classic
 * PUBLISH reaches every node's subscribers, so this works on Redis Cluster too. After a reconnect,
 * once the subscription is confirmed again, every listener hears `recheck` and should read the
 * state it waits for afresh.
 */
export class PubSubFanout {
  private readonly listeners = new Map<string, Set<(event: FanoutEvent) => void>>();
  private subscribed = false;

  constructor(
    private readonly subscriber: RedisClient,
    private readonly channels: readonly string[],
    /** The key a message is for; null to ignore it. */
    private readonly keyOf: (channel: string, message: string) => string | null,
    private readonly logger: Logger,
  ) {}

  /** Subscribes; resolves once the subscription is live. */
  async start(): Promise<void> {
    this.subscriber.on('message', (channel: string, message: string) => {
      if (!this.channels.includes(channel)) return;
      const key = this.keyOf(channel, message);
      if (key === null) return;
      const set = this.listeners.get(key);
      if (set) for (const listener of [...set]) listener({ kind: 'message', channel, message });
    });
    let connectedBefore = this.subscriber.status === 'ready';
    this.subscriber.on('ready', () => {
      if (!connectedBefore) {
        connectedBefore = true;
        return;
      }
      // ioredis resubscribes before 'ready'; this SUBSCRIBE's reply comes after that one's.
      this.subscriber.subscribe(...this.channels).then(
        () => {
          this.subscribed = true;
          for (const set of [...this.listeners.values()]) for (const listener of [...set]) listener({ kind: 'recheck' });
        },
        (err: unknown) => this.logger.warn('could not subscribe again after a Redis reconnect', { channels: this.channels, error: (err as Error).message }),
      );
    });
    this.subscriber.on('close', () => {
      this.subscribed = false;
    });
    await this.subscriber.subscribe(...this.channels);
    this.subscribed = true;
  }

  /** True while the subscription is live (messages may be missed otherwise). */
  get live(): boolean {
    return this.subscribed;
  }

  /** Listens for `key`'s messages until the returned function is called. */
  listen(key: string, listener: (event: FanoutEvent) => void): () => void {
    const set = this.listeners.get(key) ?? new Set();
    set.add(listener);
    this.listeners.set(key, set);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.listeners.get(key) === set) this.listeners.delete(key);
    };
  }
}
