/**
 * Builds a value once per container on first use; a failed build is retried on the next call (a cold
 * start's wiring, a surface imported on its first request).
 */
export function once<T>(build: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | undefined;
  return () => {
    pending ??= build().catch((error: unknown) => {
      pending = undefined;
      throw error;
    });
    return pending;
  };
}
