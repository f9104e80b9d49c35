/**
 * The real agent process (`npm run agent`'s entry point) running allocations over the client protocol, against a
 * recording stand-in for the server's side (`test/support/protocol-double.ts`): a placed allocation is fetched when the
 * heartbeat's `AllocIndex` moves, its raw_exec task runs (`python3 -m http.server` on its port), its state is reported
 * with `PUT /v1/client/node/:id/allocations`, its group service registered with the node's address and the port of
 * its label, and a stop from the server kills it, reports it complete and deregisters the service. Killed with
 * SIGKILL mid-task, the agent started again re-attaches (no second start); a task that died while the agent was down
 * is reported so and restarted per policy.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { signalGroup } from '../../packages/agent/src/runner/executor.ts';
import { AllocStateStore } from '../../packages/agent/src/runner/state-store.ts';
import { allocation, nomadVar, rawExec, until } from '../support/alloc-fixtures.ts';
import { freePort, killLeftovers, launch } from '../support/npm-start.ts';
import { ProtocolDouble } from '../support/protocol-double.ts';

let work: string;
let double: ProtocolDouble;

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), 'keyhaven-agent-allocs-'));
  writeFileSync(path.join(work, 'agent.json'), JSON.stringify({ plugin: { raw_exec: { config: { enabled: true } } } }));
});

beforeEach(async () => {
  double = new ProtocolDouble();
  await double.start();
});

afterEach(async () => {
  await double.close();
});

afterAll(async () => {
  killLeftovers();
  for (const folder of ['one', 'two']) {
    const store = new AllocStateStore(path.join(work, folder));
    for (const saved of store.loadAll().saved)
      for (const task of Object.values(saved.Tasks)) if (task.Handle) signalGroup(task.Handle, 'SIGKILL');
  }
  rmSync(work, { recursive: true, force: true });
});

function startAgent(dataDir: string) {
  return launch({}, 'packages/agent/src/main.ts', [
    '-data-dir',
    dataDir,
    '-servers',
    double.url,
    '-client-intro-token',
    'intro',
    '-config',
    path.join(work, 'agent.json'),
  ]);
}

const lastUpdate = (allocId: string) => double.updates.filter((update) => update.ID === allocId).at(-1);

async function killAgent(agent: ReturnType<typeof startAgent>) {
  process.kill(agent.child.pid as number, 'SIGKILL');
  await agent.exited;
}

describe('the agent runs its allocations', () => {
  it('runs a placed allocation, reports it, registers its service, and stops it when the server says so', {
    timeout: 60_000,
  }, async () => {
    const agent = startAgent(path.join(work, 'one'));
    await until('the node to register', () => double.nodeId || undefined);
    const port = await freePort();
    const alloc = allocation({
      type: 'service',
      ports: [{ Label: 'http', Value: port, To: 0, HostIP: '' }],
      tasks: [
        rawExec('server', 'python3', [
          '-m',
          'http.server',
          nomadVar('NOMAD_PORT_http'),
          '--bind',
          nomadVar('NOMAD_IP_http'),
        ]),
      ],
      groupExtra: {
        Services: [
          { Name: 'web', PortLabel: 'http', Provider: 'nomad', Tags: [`index-${nomadVar('NOMAD_ALLOC_INDEX')}`] },
          { Name: 'elsewhere', PortLabel: 'http', Provider: 'consul' },
        ],
      },
    });
    double.place(alloc);
    const running = await until('the allocation reported running', () =>
      lastUpdate(alloc.ID)?.ClientStatus === 'running' ? lastUpdate(alloc.ID) : undefined,
    ).catch((error: Error) => {
      throw new Error(`${error.message}\n${agent.stdout()}\n${agent.stderr()}`);
    });
    expect(running?.ClientDescription).toBe('Tasks are running');
    expect(running?.TaskStates.server?.State).toBe('running');
    expect(running?.TaskStates.server?.Events?.map((event) => event.Type)).toEqual([
      'Received',
      'Task Setup',
      'Started',
    ]);

    const serviceId = `_nomad-task-${alloc.ID}-group-web-web-http`;
    const service = await until('the service registered', () => double.services.get(serviceId));
    expect(service).toMatchObject({
      ServiceName: 'web',
      Namespace: 'default',
      NodeID: double.nodeId,
      Datacenter: 'dc1',
      JobID: 'example',
      AllocID: alloc.ID,
      Tags: ['index-0'],
      Port: port,
    });
    // Only the nomad provider's services are the agent's to register.
    expect([...double.services.keys()]).toEqual([serviceId]);
    const answer = await until('the server to answer at the registered address', async () => {
      try {
        return await fetch(`http://${service.Address}:${service.Port}/`);
      } catch {
        return undefined;
      }
    });
    expect(answer.status).toBe(200);

    double.stop(alloc.ID);
    const complete = await until('the allocation reported complete', () =>
      lastUpdate(alloc.ID)?.ClientStatus === 'complete' ? lastUpdate(alloc.ID) : undefined,
    );
    expect(complete?.TaskStates.server?.Events?.map((event) => event.Type).slice(-3)).toEqual([
      'Killing',
      'Terminated',
      'Killed',
    ]);
    await until('the service deregistered', () => !double.services.has(serviceId));
    expect(double.serviceCalls).toContain(`delete ${serviceId}`);
    await expect(fetch(`http://${service.Address}:${service.Port}/`)).rejects.toThrow();
    expect(double.refused).toEqual([]);
    await killAgent(agent);
  });

  it('killed mid-task and started again, re-attaches without a second start; reports a task that died meanwhile', {
    timeout: 60_000,
  }, async () => {
    const dataDir = path.join(work, 'two');
    let agent = startAgent(dataDir);
    await until('the node to register', () => double.nodeId || undefined);
    const alloc = allocation({
      type: 'service',
      restart: { Attempts: 2, Delay: 10e6 },
      tasks: [rawExec('t', 'sh', ['-c', 'echo $$ >> "$NOMAD_ALLOC_DIR/data/runs"; exec sleep 300'])],
    });
    double.place(alloc);
    await until('the allocation reported running', () => lastUpdate(alloc.ID)?.ClientStatus === 'running');
    const runs = () =>
      readFileSync(path.join(dataDir, 'alloc', alloc.ID, 'alloc/data/runs'), 'utf8')
        .trim()
        .split('\n');
    const first = await until('the task to write its pid', () => runs()[0] || undefined);
    const startedAt = lastUpdate(alloc.ID)?.TaskStates.t?.StartedAt;

    await killAgent(agent);
    expect(() => process.kill(Number(first), 0)).not.toThrow();
    const before = double.updates.length;
    agent = startAgent(dataDir);
    await until('the restarted agent to read its allocations', () => agent.stdout().includes('allocation map read'));
    // Give the restored runner a batch to report, if it were to report anything new.
    await until('a heartbeat after the restart', () => agent.stdout().includes('node status ready'));
    expect(runs()).toEqual([first]);
    const after = double.updates.slice(before).filter((update) => update.ID === alloc.ID);
    for (const update of after) {
      expect(update.ClientStatus).toBe('running');
      expect(update.TaskStates.t?.StartedAt).toBe(startedAt);
    }

    await killAgent(agent);
    process.kill(Number(first), 'SIGTERM');
    await until('the task to be gone', () => {
      try {
        process.kill(Number(first), 0);
        return undefined;
      } catch {
        return true;
      }
    });
    agent = startAgent(dataDir);
    const restarted = await until('the task reported restarted', () => {
      const update = lastUpdate(alloc.ID);
      return update?.TaskStates.t?.Restarts === 1 && update.ClientStatus === 'running' ? update : undefined;
    });
    const events = restarted.TaskStates.t?.Events ?? [];
    expect(events.map((event) => event.Type)).toEqual([
      'Received',
      'Task Setup',
      'Started',
      'Terminated',
      'Restarting',
      'Started',
    ]);
    expect(events[3]).toMatchObject({
      ExitCode: 143,
      Signal: 15,
      Message: 'the task ended while the agent was not running',
    });
    expect(runs()).toHaveLength(2);
    await killAgent(agent);
  });
});
