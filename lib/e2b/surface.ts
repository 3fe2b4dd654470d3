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
export const e2bStreamedRoutes: readonly StreamedRoute[] = [
  { method: 'POST', path: `${e2bPrefix}/process.Process/Start` },
  { method: 'POST', path: `${e2bPrefix}/process.Process/Connect` },
  { method: 'POST', path: `${e2bPrefix}/filesystem.Filesystem/WatchDir` },
  { method: 'POST', path: `${e2bPrefix}/execute` },
];
