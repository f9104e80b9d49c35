/**
 * A job asking for `raw_exec` on an agent whose operator has not enabled it (`docs/security.md`, the client agent):
 * the real agent process (no `-config`, so raw_exec off) is handed such an allocation by a stand-in for the server
 * (`test/support/protocol-double.ts`). It never runs the command, reports the allocation failed with a
 * `Driver Failure` naming the setting, registers none of its services, and its node never offers the driver.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allocation, rawExec, until } from '../support/alloc-fixtures.ts';
import { killLeftovers, launch } from '../support/npm-start.ts';
import { ProtocolDouble } from '../support/protocol-double.ts';

let work: string;
let double: ProtocolDouble;

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), 'keyhaven-agent-rawexec-'));
  double = new ProtocolDouble();
  await double.start();
});

afterAll(async () => {
  killLeftovers();
  await double.close();
  rmSync(work, { recursive: true, force: true });
});

describe('raw_exec on an agent that has not enabled it', () => {
  it('runs nothing, reports the allocation failed, registers no service', { timeout: 60_000 }, async () => {
    const agent = launch({}, 'packages/agent/src/main.ts', [
      '-data-dir',
      path.join(work, 'agent'),
      '-servers',
      double.url,
      '-client-intro-token',
      'intro',
    ]);
    await until('the node to register', () => double.nodeId || undefined);
    expect(double.node?.Drivers.raw_exec).toMatchObject({ Detected: false, Healthy: false });
    expect(double.node?.Attributes).not.toHaveProperty('driver.raw_exec');
    const marker = path.join(work, 'ran');
    const alloc = allocation({
      type: 'service',
      restart: { Attempts: 3, Delay: 10e6 },
      tasks: [rawExec('evil', 'sh', ['-c', `touch ${marker}`])],
      groupExtra: { Services: [{ Name: 'evil', Provider: 'nomad' }] },
    });
    double.place(alloc);
    const failed = await until('the allocation reported failed', () =>
      double.updates.find((update) => update.ID === alloc.ID && update.ClientStatus === 'failed'),
    ).catch((error: Error) => {
      throw new Error(`${error.message}\n${agent.stdout()}`);
    });
    const events = failed.TaskStates.evil?.Events ?? [];
    expect(events.map((event) => event.Type)).toEqual(['Received', 'Task Setup', 'Driver Failure', 'Not Restarting']);
    expect(events[2]?.DriverError).toMatch(/raw_exec is disabled on this agent/);
    expect(failed.TaskStates.evil?.StartedAt).toBeNull();
    expect(existsSync(marker)).toBe(false);
    expect(
      double.updates.filter((update) => update.ID === alloc.ID).map((update) => update.ClientStatus),
    ).not.toContain('running');
    expect(double.serviceCalls.filter((call) => call.startsWith('upsert'))).toEqual([]);
  });
});
