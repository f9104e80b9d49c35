/**
 * `make`'s promise, made on the first call and shared by every call after it, unless it rejects: then the next call
 * makes it anew. What a function builds once per process on first use (its core, its pipeline, its scheduler), so that
 * a cold start whose table or key could not be reached yet tries again on the next request.
 */
export function sharedUntilRejected<T>(make: () => Promise<T>): () => Promise<T> {
  let made: Promise<T> | undefined;
  return () => {
    if (!made) {
      const attempt = make();
      made = attempt;
      attempt.catch(() => {
        if (made === attempt) made = undefined;
      });
    }
    return made;
  };
}
