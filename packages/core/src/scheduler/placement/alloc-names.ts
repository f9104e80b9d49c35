/**
 * Allocation names, `<job>.<group>[<index>]`, and the index of names a task group uses (Nomad's `AllocNameIndex`,
 * `scheduler/reconciler/allocs.go`): new placements take the lowest free indexes below the count, a scale-down stops
 * the highest ones, and an index held twice is remembered so that a placement reusing it can be renamed.
 */

export const allocName = (jobId: string, group: string, index: number): string => `${jobId}.${group}[${index}]`;

/** The index in an allocation's name, as Nomad's AllocIndexFromName reads it (0 when there is none). */
export function allocIndex(name: string, jobId: string, group: string): number {
  const prefix = jobId.length + group.length + 2;
  if (name.length <= 3 || name.length <= prefix) return 0;
  const digits = name.slice(prefix, -1);
  return /^[+-]?\d+$/.test(digits) ? Math.max(0, Number.parseInt(digits, 10)) : 0;
}

export class AllocNameIndex {
  private readonly used = new Set<number>();
  /** Index → how many allocations beyond the first hold it. */
  private readonly duplicates = new Map<number, number>();

  constructor(
    private readonly jobId: string,
    private readonly group: string,
    private readonly count: number,
    names: Iterable<string>,
  ) {
    for (const name of names) {
      const index = allocIndex(name, jobId, group);
      if (this.used.has(index)) this.duplicates.set(index, (this.duplicates.get(index) ?? 0) + 1);
      else this.used.add(index);
    }
  }

  private name(index: number): string {
    return allocName(this.jobId, this.group, index);
  }

  /** Removes and returns the `n` highest names in use (fewer if fewer are in use). */
  highest(n: number): Set<string> {
    const found = new Set<string>();
    const inUse = [...this.used].sort((a, b) => b - a);
    for (const index of inUse) {
      if (found.size >= n) break;
      this.used.delete(index);
      found.add(this.name(index));
    }
    return found;
  }

  isDuplicate(index: number): boolean {
    return (this.duplicates.get(index) ?? 0) > 0;
  }

  /** Marks the index free (or one fewer duplicate of it). */
  unsetIndex(index: number): void {
    const duplicates = this.duplicates.get(index);
    if (duplicates !== undefined) {
      if (duplicates <= 1) this.duplicates.delete(index);
      else this.duplicates.set(index, duplicates - 1);
    } else this.used.delete(index);
  }

  /** The next `n` names for new placements, taken: the free indexes below the count, then overlapping from 0. */
  next(n: number): string[] {
    const names: string[] = [];
    for (let index = 0; index < this.count && names.length < n; index++) {
      if (this.used.has(index)) continue;
      this.used.add(index);
      names.push(this.name(index));
    }
    for (let index = 0; names.length < n; index++) {
      this.used.add(index);
      names.push(this.name(index));
    }
    return names;
  }

  /**
   * The next `n` names for canaries: first the indexes of the allocations being destructively updated, then the free
   * ones below the count, skipping names existing canaries hold; beyond those, indexes from the count upwards.
   */
  nextCanaries(n: number, existingCanaryNames: Set<string>, destructiveNames: Iterable<string>): string[] {
    const names: string[] = [];
    const destructive = new Set<number>();
    for (const name of destructiveNames) destructive.add(allocIndex(name, this.jobId, this.group));
    const take = (index: number) => {
      const name = this.name(index);
      if (existingCanaryNames.has(name) || names.includes(name)) return;
      names.push(name);
      this.used.add(index);
    };
    for (let index = 0; index < this.count && names.length < n; index++) if (destructive.has(index)) take(index);
    for (let index = 0; index < this.count && names.length < n; index++) if (!this.used.has(index)) take(index);
    for (let index = this.count; names.length < n; index++) names.push(this.name(index));
    return names;
  }
}
