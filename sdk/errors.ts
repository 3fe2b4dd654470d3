/** An error the API answered, with its code, message and details (the envelope), and the HTTP status. */
export class DifferentlyError extends Error {
  override readonly name = 'DifferentlyError';
  readonly status: number;
  readonly code: string;
  readonly details: Record<string, unknown>;

  constructor(status: number, code: string, message: string, details: Record<string, unknown>) {
    super(`${code}: ${message}`);
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

/** The endpoint could not be reached at all (DNS, refused connection, timeout). */
export class DifferentlyNetworkError extends Error {
  override readonly name = 'DifferentlyNetworkError';
  readonly endpoint: string;

  constructor(endpoint: string, options?: ErrorOptions) {
    super(`could not reach ${endpoint}`, options);
    this.endpoint = endpoint;
  }
}
