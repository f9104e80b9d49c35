/**
 * Which glob rule of a policy set applies to a name (a namespace, a node pool) when no rule names it exactly: Nomad's
 * `findClosestMatchingGlob` (`acl/acl.go`). Every glob that matches is taken in the order Nomad's radix tree walks them
 * (byte order of the pattern), scored `len(name) - len(glob) + stars(glob)` (bytes: the characters the stars stand
 * for), and Go's `sort.SliceStable` is run over them with Nomad's comparison `a <= b`. That comparison is not a strict
 * order, so which of two equally close globs wins depends on the sort's exact steps (for a handful of globs, the one
 * last in byte order): the sort below is Go's (insertion sort of blocks of 20, then SymMerge), step for step, so the
 * winner is Nomad's in every case. The first after sorting applies.
 */

interface Scored<T> {
  glob: string;
  difference: number;
  value: T;
}

const utf8Length = (text: string): number => Buffer.byteLength(text, 'utf8');

/** The value of the glob closest to `name`, or undefined when none matches. */
export function closestGlob<T>(
  globs: ReadonlyMap<string, T>,
  name: string,
  matches: (glob: string, name: string) => boolean,
): T | undefined {
  const found: Scored<T>[] = [];
  const walkOrder = [...globs.keys()].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  for (const glob of walkOrder) {
    if (!matches(glob, name)) continue;
    const stars = glob.split('*').length - 1;
    found.push({ glob, difference: utf8Length(name) - utf8Length(glob) + stars, value: globs.get(glob) as T });
  }
  if (found.length === 0) return undefined;
  if (found.length === 1) return found[0]?.value;
  goStableSort(found, (a, b) => a.difference <= b.difference);
  return found[0]?.value;
}

/** Go's sort.SliceStable (`sort/zsortfunc.go` stable_func) with the caller's `less`, in place. */
export function goStableSort<T>(data: T[], less: (a: T, b: T) => boolean): void {
  const lessAt = (i: number, j: number) => less(data[i] as T, data[j] as T);
  const swap = (i: number, j: number) => {
    const held = data[i] as T;
    data[i] = data[j] as T;
    data[j] = held;
  };
  const insertionSort = (a: number, b: number) => {
    for (let i = a + 1; i < b; i++) for (let j = i; j > a && lessAt(j, j - 1); j--) swap(j, j - 1);
  };
  const swapRange = (a: number, b: number, n: number) => {
    for (let i = 0; i < n; i++) swap(a + i, b + i);
  };
  const rotate = (a: number, m: number, b: number) => {
    let i = m - a;
    let j = b - m;
    while (i !== j) {
      if (i > j) {
        swapRange(m - i, m, j);
        i -= j;
      } else {
        swapRange(m - i, m + j - i, i);
        j -= i;
      }
    }
    swapRange(m - i, m, i);
  };
  const symMerge = (a: number, m: number, b: number): void => {
    if (m - a === 1) {
      let i = m;
      let j = b;
      while (i < j) {
        const h = (i + j) >>> 1;
        if (lessAt(h, a)) i = h + 1;
        else j = h;
      }
      for (let k = a; k < i - 1; k++) swap(k, k + 1);
      return;
    }
    if (b - m === 1) {
      let i = a;
      let j = m;
      while (i < j) {
        const h = (i + j) >>> 1;
        if (!lessAt(m, h)) i = h + 1;
        else j = h;
      }
      for (let k = m; k > i; k--) swap(k, k - 1);
      return;
    }
    const mid = (a + b) >>> 1;
    const n = mid + m;
    let start: number;
    let r: number;
    if (m > mid) {
      start = n - b;
      r = mid;
    } else {
      start = a;
      r = m;
    }
    const p = n - 1;
    while (start < r) {
      const c = (start + r) >>> 1;
      if (!lessAt(p - c, c)) start = c + 1;
      else r = c;
    }
    const end = n - start;
    if (start < m && m < end) rotate(start, m, end);
    if (a < start && start < mid) symMerge(a, start, mid);
    if (mid < end && end < b) symMerge(mid, end, b);
  };
  const n = data.length;
  let blockSize = 20;
  let a = 0;
  let b = blockSize;
  while (b <= n) {
    insertionSort(a, b);
    a = b;
    b += blockSize;
  }
  insertionSort(a, n);
  while (blockSize < n) {
    a = 0;
    b = 2 * blockSize;
    while (b <= n) {
      symMerge(a, a + blockSize, b);
      a = b;
      b += 2 * blockSize;
    }
    const m = a + blockSize;
    if (m < n) symMerge(a, m, n);
    blockSize *= 2;
  }
}
