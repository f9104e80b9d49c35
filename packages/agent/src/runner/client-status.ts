/**
 * An allocation's client status from its tasks' states, as Nomad's allocation runner derives it (`getClientStatus`):
 * any task failed → `failed`; else any running → `running`; else any pending → `pending`; else all dead →
 * `complete`.
 */
import type { ClientStatus, TaskState } from './types.ts';

export function clientStatus(states: Record<string, TaskState>): { status: ClientStatus; description: string } {
  let pending = false;
  let running = false;
  let dead = false;
  let failed = false;
  for (const state of Object.values(states)) {
    if (state.State === 'running') running = true;
    else if (state.State === 'pending') pending = true;
    else if (state.Failed) failed = true;
    else dead = true;
  }
  if (failed) return { status: 'failed', description: 'Failed tasks' };
  if (running) return { status: 'running', description: 'Tasks are running' };
  if (pending) return { status: 'pending', description: 'No tasks have started' };
  if (dead) return { status: 'complete', description: 'All tasks have completed' };
  return { status: 'pending', description: 'No tasks have started' };
}
