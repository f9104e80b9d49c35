import { type Core, createCore } from '../../packages/core/src/composition/secrets-core.ts';
import { createSecretsApp } from '../../packages/core/src/http/secrets-app.ts';
import { ManualClock } from '../../packages/core/src/lib/clock.ts';
import { silentLogger } from '../../packages/core/src/lib/log.ts';
import { createSchedulerApp } from '../../packages/core/src/scheduler/composition/scheduler-app.ts';
import { allSecretsFamilies, backendsOf } from '../../packages/core/src/secrets/families.ts';
import { fileKeySource } from '../../packages/core/src/storage/keyring.ts';
import type { MemoryStore } from '../../packages/core/src/storage/memory-store.ts';

/**
 * One process of a service over a table that several share (the replay attacks: a table writer puts old items back
 * while more than one process runs): its own core, and so its own keyring cache and epoch, from one key file, and
 * its app called in process. `call` sends the token in the service's own header and reads JSON back (text when the
 * answer is not JSON).
 */
export interface ServiceProcess {
  core: Core;
  call(
    method: string,
    url: string,
    token?: string,
    body?: unknown,
    // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary response JSON
  ): Promise<{ status: number; body: any }>;
}

export async function serviceProcess(
  service: 'secrets' | 'scheduler',
  store: MemoryStore,
  keyFile: string,
  startsAt: number,
): Promise<ServiceProcess> {
  const core = await createCore({
    store,
    keySource: fileKeySource(keyFile),
    backends: service === 'secrets' ? backendsOf(allSecretsFamilies) : [],
    clock: new ManualClock(startsAt),
    log: silentLogger,
  });
  const appOptions = { core: async () => core, clientIp: () => '127.0.0.1' };
  const app = service === 'secrets' ? createSecretsApp(appOptions) : createSchedulerApp(appOptions);
  const tokenHeader = service === 'secrets' ? 'X-Vault-Token' : 'X-Scheduler-Token';
  return {
    core,
    async call(method, url, token, body) {
      const response = await app.request(url, {
        method,
        headers: {
          ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
          ...(token ? { [tokenHeader]: token } : {}),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await response.text();
      try {
        return { status: response.status, body: text ? JSON.parse(text) : undefined };
      } catch {
        return { status: response.status, body: text };
      }
    },
  };
}
