import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

export interface Loaded<T> {
  value: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
}

/**
 * Loads `load()` now, again on `reload()`, and every `everyMs` while the page shows it (a live view). A
 * failed poll keeps the last value and shows the error until a poll succeeds.
 */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[], everyMs?: number): Loaded<T> {
  const [value, setValue] = useState<T | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  const latest = useRef(0);
  const reload = useCallback(() => setTick((n) => n + 1), []);
  // The caller names what the load depends on (deps); `tick` is a reload or the next poll.
  useEffect(() => {
    const call = ++latest.current;
    setLoading(true);
    load().then(
      (loaded) => {
        if (call !== latest.current) return;
        setValue(loaded);
        setError(undefined);
        setLoading(false);
      },
      (failed: unknown) => {
        if (call !== latest.current) return;
        setError(failed);
        setLoading(false);
      },
    );
    if (everyMs === undefined) return;
    const timer = setTimeout(reload, everyMs);
    return () => clearTimeout(timer);
  }, [...deps, tick]);
  return { value, error, loading, reload };
}

/** An action's state: running, and the error of its last run. */
export function useAction(): {
  busy: boolean;
  error: unknown;
  run: (work: () => Promise<unknown>) => Promise<void>;
} {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const run = useCallback(async (work: () => Promise<unknown>) => {
    setBusy(true);
    setError(undefined);
    try {
      await work();
    } catch (failed) {
      setError(failed);
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, run };
}
