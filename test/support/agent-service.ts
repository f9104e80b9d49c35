import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect, inject } from 'vitest';
import { signalGroup } from '../../packages/agent/src/runner/executor.ts';
import { AllocStateStore } from '../../packages/agent/src/runner/state-store.ts';
import { freePort, killLeftovers, launch, type Started, start } from './npm-start.ts';

/**
 * The service a real agent joins in the agent's end-to-end tests: `npm start` on the run's DynamoDB Local in a
 * fresh work directory (the service's data in `<work>/service`; the agent's data directories go beside it), its
 * scheduler's ACL bootstrapped over HTTP as an operator does, and the scheduler API called with that management token.
 */
export interface AgentService {
  work: string;
  service: Started;
  /** The scheduler's management token. */
  management: string;
  /** One call to the scheduler (`url` from `/v1/…`), JSON read back when the answer is JSON. */
  // biome-ignore lint/suspicious/noExplicitAny: the tests read Nomad's JSON as it comes
  api(method: string, url: string, body?: unknown): Promise<{ status: number; body: any }>;
}

/** Starts the service for the test file named `label` (its work directory's and table's name). */
export async function startServiceForAgent(label: string): Promise<AgentService> {
  const work = await mkdtemp(path.join(tmpdir(), `keyhaven-${label}-`));
  const service = await start({
    KEYHAVEN_DATA_DIR: path.join(work, 'service'),
    KEYHAVEN_DYNAMODB_ENDPOINT: inject('dynamoEndpoint'),
    KEYHAVEN_TABLE: `${label}-${process.pid}`,
    KEYHAVEN_SECRETS_PORT: String(await freePort()),
    KEYHAVEN_SCHEDULER_PORT: String(await freePort()),
  });
  const bootstrap = await fetch(`${service.scheduler}/v1/acl/bootstrap`, { method: 'POST' });
  if (bootstrap.status !== 200) throw new Error(`ACL bootstrap: ${bootstrap.status} ${await bootstrap.text()}`);
  const management = ((await bootstrap.json()) as { SecretID: string }).SecretID;
  const api: AgentService['api'] = async (method, url, body) => {
    const response = await fetch(`${service.scheduler}${url}`, {
      method,
      headers: { 'X-Nomad-Token': management, 'Content-Type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text.startsWith('{') || text.startsWith('[') ? JSON.parse(text) : text };
  };
  return { work, service, management, api };
}

/**
 * The end of a test file whose agent ran tasks (its data directory `<work>/agent`): what it started is killed (npm
 * start, the agent), then the tasks the agent left running, and the work directory is removed.
 */
export async function stopServiceForAgent(work: string | undefined): Promise<void> {
  killLeftovers();
  if (!work) return;
  const store = new AllocStateStore(path.join(work, 'agent'));
  for (const saved of store.loadAll().saved)
    for (const task of Object.values(saved.Tasks)) if (task.Handle) signalGroup(task.Handle, 'SIGKILL');
  await rm(work, { recursive: true, force: true });
}

/** A wait for `probe`'s first answer that is not undefined, asked every `everyMs` for at most `forMs`; the agent's output (`log`) in the error. */
export const untilWithin =
  (forMs: number, everyMs: number) =>
  async <T>(what: string, probe: () => Promise<T | undefined>, log: () => string): Promise<T> => {
    const deadline = Date.now() + forMs;
    for (;;) {
      const found = await probe();
      if (found !== undefined) return found;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n--- agent:\n${log()}`);
      await sleep(everyMs);
    }
  };

/**
 * The real agent with `raw_exec` enabled in its configuration, introduced with a token minted by the management
 * token, its data in `<work>/agent`; answered once it says its node is ready. `log` is its output so far.
 */
export async function startRawExecAgent(
  { work, service, api }: Pick<AgentService, 'work' | 'service' | 'api'>,
  until: ReturnType<typeof untilWithin>,
): Promise<{ agent: ReturnType<typeof launch>; log: () => string }> {
  const config = path.join(work, 'agent.json');
  await writeFile(config, JSON.stringify({ plugin: { raw_exec: { config: { enabled: true } } } }));
  const minted = await api('PUT', '/v1/acl/identity/client-introduction-token', { TTL: '10m' });
  expect(minted.status).toBe(200);
  const agent = launch({}, 'packages/agent/src/main.ts', [
    '-data-dir',
    path.join(work, 'agent'),
    '-config',
    config,
    '-servers',
    service.scheduler,
    '-client-intro-token',
    minted.body.JWT as string,
  ]);
  const log = () => `${agent.stdout()}\n${agent.stderr()}`;
  await until('the node to be ready', async () => (/node status ready/.test(agent.stdout()) ? true : undefined), log);
  return { agent, log };
}
