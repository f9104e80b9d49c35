/** Which changes of a task group need a restart (Nomad's tasksUpdated): those answer a label, the rest in place. */
import { describe, expect, it } from 'vitest';
import type { Job } from '../../../packages/core/src/scheduler/cluster/jobs/model.ts';
import { tasksUpdated } from '../../../packages/core/src/scheduler/placement/tasks-updated.ts';
import { makeJob } from './reconcile-fixtures.ts';

type Loose = Record<string, unknown>;

const base = (): Job =>
  makeJob({
    Meta: { owner: 'ops' },
    TaskGroups: [
      {
        Name: 'web',
        Count: 2,
        Networks: [{ Mode: 'host', DynamicPorts: [{ Label: 'http', Value: 0, To: 0 }] }],
        Services: [{ Name: 'web', PortLabel: 'http', Tags: ['a'] }],
        Tasks: [
          {
            Name: 'server',
            Driver: 'raw_exec',
            Config: { command: 'python3' },
            Env: { A: '1' },
            Resources: { CPU: 100, MemoryMB: 128 },
          },
        ],
      },
    ],
  });

/** The base job with `edit` applied to a copy of it. */
function edited(edit: (job: Job, group: Loose, task: Loose) => void): Job {
  const job = base();
  const group = job.TaskGroups[0] as Loose;
  edit(job, group, (group.Tasks as Loose[])[0] as Loose);
  return job;
}

describe('tasksUpdated', () => {
  it.each([
    ['task driver', (_j: Job, _g: Loose, t: Loose) => Object.assign(t, { Driver: 'exec' })],
    ['task config', (_j: Job, _g: Loose, t: Loose) => Object.assign(t, { Config: { command: 'python' } })],
    ['task env', (_j: Job, _g: Loose, t: Loose) => Object.assign(t, { Env: { A: '2' } })],
    ['task cpu', (_j: Job, _g: Loose, t: Loose) => Object.assign(t.Resources as Loose, { CPU: 200 })],
    ['task memory', (_j: Job, _g: Loose, t: Loose) => Object.assign(t.Resources as Loose, { MemoryMB: 256 })],
    ['task meta', (j: Job) => Object.assign(j, { Meta: { owner: 'dev' } })],
    ['task meta', (_j: Job, g: Loose) => Object.assign(g, { Meta: { tier: 'front' } })],
    ['task deleted', (_j: Job, _g: Loose, t: Loose) => Object.assign(t, { Name: 'other' })],
    ['number of tasks', (_j: Job, g: Loose) => (g.Tasks as Loose[]).push({ Name: 'side', Driver: 'raw_exec' })],
    ['ephemeral disk', (_j: Job, g: Loose) => Object.assign(g.EphemeralDisk as Loose, { SizeMB: 500 })],
    [
      'network port map',
      (_j: Job, g: Loose) => Object.assign(g, { Networks: [{ Mode: 'host', DynamicPorts: [{ Label: 'web' }] }] }),
    ],
    [
      'network mode',
      (_j: Job, g: Loose) => Object.assign(g, { Networks: [{ Mode: 'bridge', DynamicPorts: [{ Label: 'http' }] }] }),
    ],
    ['task log disabled', (_j: Job, _g: Loose, t: Loose) => Object.assign(t.LogConfig as Loose, { Disabled: true })],
  ])('%s needs a restart', (label, edit) => {
    expect(tasksUpdated(base(), edited(edit), 'web')).toBe(label);
  });

  it.each([
    ['kill timeout', (_j: Job, _g: Loose, t: Loose) => Object.assign(t, { KillTimeout: 30e9 })],
    [
      'a service tag',
      (_j: Job, g: Loose) => Object.assign(g, { Services: [{ Name: 'web', PortLabel: 'http', Tags: ['b'] }] }),
    ],
    ['the count', (_j: Job, g: Loose) => Object.assign(g, { Count: 5 })],
    [
      'a dynamic port value',
      (_j: Job, g: Loose) =>
        Object.assign(g, { Networks: [{ Mode: 'host', DynamicPorts: [{ Label: 'http', Value: 25000 }] }] }),
    ],
    ['the restart attempts', (_j: Job, g: Loose) => Object.assign(g.RestartPolicy as Loose, { Attempts: 5 })],
    ['log file sizes', (_j: Job, _g: Loose, t: Loose) => Object.assign(t.LogConfig as Loose, { MaxFiles: 3 })],
    ['the job priority', (j: Job) => Object.assign(j, { Priority: 80 })],
  ])('%s does not', (_label, edit) => {
    expect(tasksUpdated(base(), edited(edit), 'web')).toBeUndefined();
  });

  it('treats a task’s unset, null and empty maps alike', () => {
    const none = edited((_j, _g, t) => Object.assign(t, { Env: null }));
    const empty = edited((_j, _g, t) => Object.assign(t, { Env: {} }));
    expect(tasksUpdated(none, empty, 'web')).toBeUndefined();
  });

  it('compares networks as Nomad stores them: a job kept before they were canonicalised is the same job', () => {
    // As this service stored a job's networks before `cluster/jobs/networks.ts`: every field as sent, empty ones too.
    const kept = edited((_j, g, t) => {
      Object.assign(g, {
        Networks: [
          {
            Mode: '',
            Device: '',
            CIDR: '',
            IP: '',
            MBits: 0,
            DNS: null,
            ReservedPorts: [],
            DynamicPorts: [{ Label: 'http', Value: 0, To: 0, HostNetwork: '', IgnoreCollision: false }],
          },
        ],
      });
      Object.assign(t.Resources as Loose, { Networks: [] });
    });
    const canonical = edited((_j, g, t) => {
      Object.assign(g, { Networks: [{ DynamicPorts: [{ Label: 'http', HostNetwork: 'default' }] }] });
      Object.assign(t.Resources as Loose, { Networks: null });
    });
    expect(tasksUpdated(kept, canonical, 'web')).toBeUndefined();
    expect(tasksUpdated(canonical, kept, 'web')).toBeUndefined();
    // A port moved to another host network, or a mode set, is a change.
    const moved = edited((_j, g) =>
      Object.assign(g, { Networks: [{ DynamicPorts: [{ Label: 'http', HostNetwork: 'public' }] }] }),
    );
    expect(tasksUpdated(canonical, moved, 'web')).toBe('network port map');
    const bridged = edited((_j, g) =>
      Object.assign(g, { Networks: [{ Mode: 'bridge', DynamicPorts: [{ Label: 'http' }] }] }),
    );
    expect(tasksUpdated(kept, bridged, 'web')).toBe('network mode');
  });

  it('sees a connect block added to a service, and a sidecar port change', () => {
    const connect = (port: string) =>
      edited((_j, g) =>
        Object.assign(g, {
          Services: [{ Name: 'web', PortLabel: 'http', Connect: { SidecarService: { Port: port } } }],
        }),
      );
    expect(tasksUpdated(connect('a'), connect('b'), 'web')).toBe('connect port');
    expect(tasksUpdated(connect('a'), connect('a'), 'web')).toBeUndefined();
    // Nomad compares the new job's services against the old ones: a connect block added reads as removed.
    expect(tasksUpdated(base(), connect('a'), 'web')).toBe('connect removed');
  });
});
