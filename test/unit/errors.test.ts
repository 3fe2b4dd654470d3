import { describe, expect, it } from 'vitest';
import { ApiError, type ErrorCode, errorCodes, httpStatusOf, toErrorResponse } from '../../lib/errors.ts';

describe('error model', () => {
  const expected: Record<ErrorCode, number> = {
    invalid_request: 400,
    unauthenticated: 401,
    forbidden: 403,
    not_found: 404,
    method_not_allowed: 405,
    invalid_state: 409,
    conflict: 409,
    payload_too_large: 413,
    unsupported_capability: 422,
    quota_exceeded: 429,
    unsupported_operation: 501,
    provider_unavailable: 503,
    insufficient_capacity: 503,
    sandbox_failed: 503,
    internal: 500,
  };

  it.each(errorCodes)('maps %s to its HTTP status', (code) => {
    expect(httpStatusOf(code)).toBe(expected[code]);
  });

  it('wraps an ApiError in the envelope with its code, message and details', () => {
    const response = toErrorResponse(
      new ApiError('invalid_state', 'sandbox is paused', { status: 'paused' }),
    );
    expect(response).toEqual({
      status: 409,
      masked: false,
      body: { error: { code: 'invalid_state', message: 'sandbox is paused', details: { status: 'paused' } } },
    });
  });

  it('shows adapter-only codes to clients as provider_unavailable, keeping the reason', () => {
    const response = toErrorResponse(new ApiError('insufficient_capacity', 'node full'));
    expect(response.status).toBe(503);
    expect(response.body.error.code).toBe('provider_unavailable');
    expect(response.body.error.details).toEqual({ reason: 'insufficient_capacity' });
  });

  it('masks unknown errors: no message, no stack', () => {
    const response = toErrorResponse(new Error('db password is hunter2'));
    expect(response.status).toBe(500);
    expect(response.masked).toBe(true);
    expect(JSON.stringify(response.body)).not.toContain('hunter2');
    expect(response.body.error).toEqual({ code: 'internal', message: 'internal error', details: {} });
  });
});
