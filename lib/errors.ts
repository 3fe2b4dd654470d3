/**
 * One error model for the whole control plane. Every failure that reaches a client or a worker is an
 * `ApiError` carrying one of the seeds' codes; `httpStatusOf` is the single place codes become statuses.
 */

import type { ErrorEnvelope } from './schemas/common.ts';

export const errorCodes = [
  'invalid_request',
  'unauthenticated',
  'forbidden',
  'not_found',
  'method_not_allowed',
  'invalid_state',
  'conflict',
  'payload_too_large',
  'unsupported_capability',
  'quota_exceeded',
  'unsupported_operation',
  'provider_unavailable',
  // Adapter-level codes: they steer the scheduler, and are shown to API clients as provider_unavailable.
  'insufficient_capacity',
  'sandbox_failed',
  'internal',
] as const;

export type ErrorCode = (typeof errorCodes)[number];

export type ErrorDetails = Record<string, unknown>;

const statusByCode: Record<ErrorCode, number> = {
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

export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly code: ErrorCode;
  readonly details: ErrorDetails;

  constructor(code: ErrorCode, message: string, details: ErrorDetails = {}, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
    this.details = details;
  }
}

export function isErrorCode(code: string): code is ErrorCode {
  return (errorCodes as readonly string[]).includes(code);
}

export function isApiError(error: unknown): error is ApiError {
  return error instanceof ApiError;
}

export function httpStatusOf(code: ErrorCode): number {
  return statusByCode[code];
}

/** The code a public API client sees: adapter-only codes are folded into provider_unavailable. */
export function publicCodeOf(code: ErrorCode): ErrorCode {
  return code === 'insufficient_capacity' || code === 'sandbox_failed' ? 'provider_unavailable' : code;
}

/**
 * Turns any thrown value into the status and envelope a client may see. Unknown errors are masked
 * as `internal`: their message and stack never leave the process (the caller logs the cause).
 */
export function toErrorResponse(error: unknown): { status: number; body: ErrorEnvelope; masked: boolean } {
  if (isApiError(error)) {
    const code = publicCodeOf(error.code);
    const details = code === error.code ? error.details : { ...error.details, reason: error.code };
    return {
      status: httpStatusOf(code),
      body: { error: { code, message: error.message, details } },
      masked: false,
    };
  }
  return {
    status: 500,
    body: { error: { code: 'internal', message: 'internal error', details: {} } },
    masked: true,
  };
}

export const errors = {
  invalidRequest: (message: string, details?: ErrorDetails) =>
    new ApiError('invalid_request', message, details),
  unauthenticated: (message = 'a valid API key is required: send Authorization: Bearer <key>') =>
    new ApiError('unauthenticated', message),
  forbidden: (message: string) => new ApiError('forbidden', message),
  notFound: (kind: string, id: string) => new ApiError('not_found', `${kind} ${id} not found`, { kind, id }),
  invalidState: (message: string, details?: ErrorDetails) => new ApiError('invalid_state', message, details),
  conflict: (message: string, details?: ErrorDetails) => new ApiError('conflict', message, details),
  payloadTooLarge: (limitBytes: number) =>
    new ApiError('payload_too_large', `the request body is larger than the limit of ${limitBytes} bytes`, {
      limitBytes,
    }),
  unsupportedOperation: (operation: string, details?: ErrorDetails) =>
    new ApiError('unsupported_operation', `${operation} is not supported here`, { operation, ...details }),
  providerUnavailable: (message: string, details?: ErrorDetails, options?: ErrorOptions) =>
    new ApiError('provider_unavailable', message, details, options),
  insufficientCapacity: (message: string, details?: ErrorDetails) =>
    new ApiError('insufficient_capacity', message, details),
  sandboxFailed: (message: string, details?: ErrorDetails) =>
    new ApiError('sandbox_failed', message, details),
  quotaExceeded: (message: string, details?: ErrorDetails) =>
    new ApiError('quota_exceeded', message, details),
  unsupportedCapability: (message: string, details?: ErrorDetails) =>
    new ApiError('unsupported_capability', message, details),
  internal: (message: string) => new ApiError('internal', message),
};
