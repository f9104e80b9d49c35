/**
 * What the agent keeps of its allocations across its own restarts (Nomad keeps it in the client's `state.db`):
 * one JSON file per allocation under `<data dir>/client/allocs/<alloc id>.json` holding the allocation as last
 * fetched and, per task, its state (with its events), restart count within the interval and the running process's
 * handle (supervisor pid and start time, task pid, exit file). Each write is whole or not at all (a temporary file
 * renamed over the old one); the folder is private (0700), as the rest of `client/`.
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ProcessHandle } from './executor.ts';
import type { RestartTrackerState } from './restarts.ts';
import type { Allocation, TaskState } from './types.ts';

export interface SavedTask {
  State: TaskState;
  Handle: ProcessHandle | null;
  Restart: RestartTrackerState;
}

export interface SavedAlloc {
  Alloc: Allocation;
  Tasks: Record<string, SavedTask>;
}

export class AllocStateStore {
  readonly folder: string;

  constructor(dataDir: string) {
    this.folder = path.join(path.resolve(dataDir), 'client', 'allocs');
  }

  private file(allocId: string): string {
    return path.join(this.folder, `${allocId}.json`);
  }

  /** Where a task's supervisor records its exit (beside the state, out of the task's folders). */
  exitFile(allocId: string, task: string): string {
    mkdirSync(path.join(this.folder, allocId), { recursive: true, mode: 0o700 });
    return path.join(this.folder, allocId, `${Buffer.from(task).toString('base64url')}.exit`);
  }

  save(saved: SavedAlloc): void {
    mkdirSync(this.folder, { recursive: true, mode: 0o700 });
    const file = this.file(saved.Alloc.ID);
    const temporary = `${file}.${process.pid}.tmp`;
    writeFileSync(temporary, JSON.stringify(saved), { mode: 0o600 });
    renameSync(temporary, file);
  }

  /** Every allocation saved (a file that cannot be read is skipped and named in `unreadable`). */
  loadAll(): { saved: SavedAlloc[]; unreadable: string[] } {
    const saved: SavedAlloc[] = [];
    const unreadable: string[] = [];
    let names: string[] = [];
    try {
      names = readdirSync(this.folder).filter((name) => name.endsWith('.json'));
    } catch {
      return { saved, unreadable };
    }
    for (const name of names) {
      try {
        const parsed = JSON.parse(readFileSync(path.join(this.folder, name), 'utf8')) as SavedAlloc;
        if (parsed?.Alloc?.ID && parsed.Tasks) saved.push(parsed);
        else unreadable.push(name);
      } catch {
        unreadable.push(name);
      }
    }
    return { saved, unreadable };
  }

  remove(allocId: string): void {
    rmSync(this.file(allocId), { force: true });
    rmSync(path.join(this.folder, allocId), { recursive: true, force: true });
  }
}
