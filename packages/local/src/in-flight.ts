import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

/** Counts work still running (requests, table calls), so that a stop can wait for it before DynamoDB Local goes. */
export class InFlight {
  private count = 0;
  private readonly waiters = new Set<() => void>();

  get size(): number {
    return this.count;
  }

  track<T>(work: Promise<T>): Promise<T> {
    this.count++;
    return work.finally(() => {
      this.count--;
      if (this.count === 0) for (const wake of [...this.waiters]) wake();
    });
  }

  /** Resolves once nothing is in flight, or after `timeoutMs`; says which. */
  idle(timeoutMs: number): Promise<boolean> {
    if (this.count === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (idle: boolean) => {
        clearTimeout(timer);
        this.waiters.delete(wake);
        resolve(idle);
      };
      const wake = () => done(true);
      const timer = setTimeout(() => done(false), timeoutMs);
      this.waiters.add(wake);
    });
  }

  /**
   * Resolves once nothing has been in flight for `quietMs`, or after `timeoutMs`: work that was cut off (a
   * request whose client went away) may still make one more call right after the one in flight.
   */
  async quiet(quietMs: number, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0 || !(await this.idle(left))) return false;
      await sleep(quietMs);
      if (this.count === 0) return true;
    }
  }
}

/** Counts the client's calls in flight (the document client shares the client's middleware). */
export function countCalls(client: DynamoDBClient, calls: InFlight): void {
  client.middlewareStack.add((next) => (args) => calls.track(next(args)), {
    step: 'initialize',
    name: 'keyhavenCallsInFlight',
  });
}

/**
 * The server's responses still to be written. A response streamed without a length (the event stream) counts
 * as written once its headers are out: it would never end by itself, and is closed with the connection.
 */
export function unansweredRequests(server: Server): { drained(timeoutMs: number): Promise<void> } {
  const open = new Set<ServerResponse>();
  server.on('request', (_request: IncomingMessage, response: ServerResponse) => {
    open.add(response);
    response.once('close', () => open.delete(response));
  });
  const pending = () =>
    [...open].filter(
      (response) => !response.writableFinished && !(response.headersSent && !response.hasHeader('content-length')),
    );
  return {
    async drained(timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      while (pending().length > 0 && Date.now() < deadline) await sleep(20);
    },
  };
}
