/**
 * An allocation's directory, laid out as Nomad's (`client/allocdir`): under the agent's data directory,
 * `alloc/<alloc id>/alloc/{logs,data,tmp}` shared by the group's tasks and `alloc/<alloc id>/<task>/{local,secrets,tmp}`
 * per task, the task's output in `alloc/logs/<task>.stdout.0` and `.stderr.0`. Every name that becomes a path is
 * checked first: the allocation ID must be a UUID and a task name one plain path segment (not `alloc`, `.`, `..`, nor
 * anything with a slash, backslash or NUL), so no job can steer the agent's writes outside its own allocation's
 * folder; a folder found to be a symbolic link (left by a task) is refused rather than followed (and the log files
 * are opened without following one: `executor.ts`).
 */
import { lstatSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export class AllocDirError extends Error {}

/** Why `name` cannot be a task's folder, or undefined when it can. */
export function badTaskName(name: string): string | undefined {
  if (name === '') return 'the task has no name';
  if (name === '.' || name === '..' || name === 'alloc') return `a task cannot be named ${JSON.stringify(name)}`;
  if (/[/\\\0]/.test(name)) return `task name ${JSON.stringify(name)} holds a slash, backslash or NUL`;
  if (Buffer.byteLength(name) > 200) return 'the task name is longer than 200 bytes';
  return undefined;
}

/** A folder made (or found) as a real directory, never through a symbolic link. */
function ensureDir(folder: string, mode: number): void {
  mkdirSync(folder, { recursive: true, mode });
  const found = lstatSync(folder);
  if (!found.isDirectory() || found.isSymbolicLink())
    throw new AllocDirError(`${folder} is not a directory of the agent's (a link or a file is in its place)`);
}

export interface TaskDirs {
  /** `alloc/<id>/<task>`: the task's working directory. */
  dir: string;
  local: string;
  secrets: string;
  tmp: string;
  /** `alloc/logs/<task>`: its output goes to `<logBase>.stdout.<n>` and `.stderr.<n>` (rotated by the supervisor). */
  logBase: string;
  /** The first of them. */
  stdout: string;
  stderr: string;
}

export class AllocDir {
  /** `<data dir>/alloc/<alloc id>`. */
  readonly root: string;
  /** `<root>/alloc`, shared by the tasks (`NOMAD_ALLOC_DIR`). */
  readonly shared: string;

  constructor(
    dataDir: string,
    readonly allocId: string,
  ) {
    if (!uuid.test(allocId)) throw new AllocDirError(`allocation ID ${JSON.stringify(allocId)} is not a UUID`);
    this.root = path.join(path.resolve(dataDir), 'alloc', allocId);
    this.shared = path.join(this.root, 'alloc');
  }

  /** Makes the shared folders (idempotent). */
  build(): void {
    ensureDir(path.dirname(this.root), 0o711);
    ensureDir(this.root, 0o711);
    ensureDir(this.shared, 0o777);
    for (const sub of ['logs', 'data', 'tmp']) ensureDir(path.join(this.shared, sub), 0o777);
  }

  /** The task's folders (made when `make`), refusing a name that is not one plain path segment. */
  task(name: string, make = true): TaskDirs {
    const problem = badTaskName(name);
    if (problem) throw new AllocDirError(problem);
    const dir = path.join(this.root, name);
    if (path.dirname(dir) !== this.root) throw new AllocDirError(`task ${JSON.stringify(name)} leaves its allocation`);
    const dirs: TaskDirs = {
      dir,
      local: path.join(dir, 'local'),
      secrets: path.join(dir, 'secrets'),
      tmp: path.join(dir, 'tmp'),
      logBase: path.join(this.shared, 'logs', name),
      stdout: path.join(this.shared, 'logs', `${name}.stdout.0`),
      stderr: path.join(this.shared, 'logs', `${name}.stderr.0`),
    };
    if (make) {
      this.build();
      ensureDir(dir, 0o777);
      ensureDir(dirs.local, 0o777);
      ensureDir(dirs.secrets, 0o700);
      ensureDir(dirs.tmp, 0o777);
    }
    return dirs;
  }

  /** Removes the whole allocation folder (Nomad's garbage collection of a terminal allocation). */
  destroy(): void {
    rmSync(this.root, { recursive: true, force: true });
  }
}

/** Nomad's `gc_max_allocs`: how many allocation folders a node keeps once their allocations are done. */
export const keptAllocDirs = 50;

/**
 * Removes the folders of allocations this agent no longer runs beyond the newest `keep` (by modification time), as
 * Nomad's client garbage collection does; the folders of `live` allocations are never touched. Answers the IDs removed.
 */
export function collectAllocDirs(dataDir: string, live: Set<string>, keep = keptAllocDirs): string[] {
  const root = path.join(path.resolve(dataDir), 'alloc');
  let names: string[];
  try {
    names = readdirSync(root);
  } catch {
    return [];
  }
  const done = names
    .filter((name) => uuid.test(name) && !live.has(name))
    .map((name) => ({ name, time: lstatSync(path.join(root, name)).mtimeMs }))
    .sort((a, b) => b.time - a.time);
  const removed = done.slice(keep).map((entry) => entry.name);
  for (const name of removed) rmSync(path.join(root, name), { recursive: true, force: true });
  return removed;
}
