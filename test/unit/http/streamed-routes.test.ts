import { describe, expect, it } from 'vitest';
import { declaredStreamedRoutes } from '../../../infra/declared-routes.ts';
import { streamedRouteMatcher } from '../../../lib/http/streamed-routes.ts';

describe('the streamed routes, from the route declarations', () => {
  it('are the routes that declare `streamed` and the E2B facade’s process.Start', () => {
    expect(declaredStreamedRoutes().map((route) => `${route.method} ${route.path}`)).toEqual([
      'POST /v1/sandboxes/{id}/exec',
      'POST /v1/sandboxes/{id}/processes/{pid}/attach',
      'POST /v1/mcp',
      'POST /e2b/process.Process/Start',
      'POST /e2b/process.Process/Connect',
      'POST /e2b/filesystem.Filesystem/WatchDir',
      'POST /e2b/execute',
      'POST /process.Process/Start',
      'POST /process.Process/Connect',
      'POST /filesystem.Filesystem/WatchDir',
      'POST /execute',
    ]);
  });

  it('match a request by method and path template, a parameter being one segment', () => {
    const streams = streamedRouteMatcher(declaredStreamedRoutes());
    expect(streams('POST', '/v1/sandboxes/sbx_1/exec')).toBe(true);
    expect(streams('post', '/v1/sandboxes/sbx_1/exec/')).toBe(true);
    expect(streams('GET', '/v1/sandboxes/sbx_1/exec')).toBe(false);
    expect(streams('POST', '/v1/sandboxes/a/b/exec')).toBe(false);
    expect(streams('POST', '/v1/sandboxes//exec')).toBe(false);
    expect(streams('POST', '/v1/mcp')).toBe(true);
    expect(streams('POST', '/v1/mcp/x')).toBe(false);
    expect(streams('POST', '/e2b/process.Process/Start')).toBe(true);
    // The dot is a dot, not any character.
    expect(streams('POST', '/e2b/processXProcess/Start')).toBe(false);
    expect(streams('POST', '/v1/sandboxes')).toBe(false);
  });
});
