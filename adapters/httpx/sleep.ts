import { errors } from '../../lib/errors.ts';

/** Waits between polls; a cancelled caller stops the wait at once (as provider_unavailable "cancelled"). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted === true) {
      reject(errors.providerUnavailable('cancelled'));
      return;
    }
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(errors.providerUnavailable('cancelled'));
      },
      { once: true },
    );
  });
}
