import type { StreamedRoute } from '../http/streamed-routes.ts';

/**
 * Where the E2B-compatible API is served (docs/e2b.md): what the control plane routes by and the CDK app
 * declares, apart from the facade itself, which is imported on the first request under the prefix, so an
 * api container that serves only the REST API never compiles it or builds its schemas.
 */
export const e2bPrefix = '/e2b';

/**
 * The facade's routes on the response-streaming function: envd's process.Start and Connect (a process's
 * output), WatchDir (a folder's events) and the code interpreter's execute (a cell's messages as they come).
 */
const streamedEnvdPaths = [
  '/process.Process/Start',
  '/process.Process/Connect',
  '/filesystem.Filesystem/WatchDir',
  '/execute',
];
/** ... under the prefix, and at the root for the same calls reaching the API by a sandbox's host. */
export const e2bStreamedRoutes: readonly StreamedRoute[] = [
  ...streamedEnvdPaths.map((path) => ({ method: 'POST' as const, path: `${e2bPrefix}${path}` })),
  ...streamedEnvdPaths.map((path) => ({ method: 'POST' as const, path })),
];

/**
 * `<port>-<sandboxId>.<domain>` (config e2b.sandboxDomain) as the sandbox and port it names: the host a
 * sandbox's `domain` makes the SDK use (getHost, envd without E2B_SANDBOX_URL). Host names arrive in
 * lower case from browsers, so the id's ULID is read in upper case; a domain given without a port matches
 * a host with any.
 */
export function sandboxHostMatcher(
  domain: string | undefined,
): (host: string | undefined) => { sandboxId: string; port: string } | undefined {
  if (domain === undefined) return () => undefined;
  const escaped = domain.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const pattern = new RegExp(
    `^(\\d{1,5})-([a-z]+)_([0-9a-z]{26})\\.${escaped}${domain.includes(':') ? '' : '(?::\\d{1,5})?'}$`,
    'i',
  );
  return (host) => {
    const match = host === undefined ? null : pattern.exec(host);
    if (match === null) return undefined;
    return {
      port: match[1] ?? '',
      sandboxId: `${(match[2] ?? '').toLowerCase()}_${(match[3] ?? '').toUpperCase()}`,
    };
  };
}
