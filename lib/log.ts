/**
 * The logging port lib code writes to. Powertools' Logger satisfies it in Lambda; tests pass a
 * recorder. Keys and secrets are never put in a message or in `extra`.
 */
export interface Log {
  debug(message: string, extra?: Record<string, unknown>): void;
  info(message: string, extra?: Record<string, unknown>): void;
  warn(message: string, extra?: Record<string, unknown>): void;
  error(message: string, extra?: Record<string, unknown>): void;
}

export const silentLog: Log = { debug() {}, info() {}, warn() {}, error() {} };

/** The parts of an error that are safe and useful to log. */
export function describeError(error: unknown): Record<string, unknown> {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return {
      name: error.name,
      message: error.message,
      code,
      stack: error.stack,
      cause: describeCause(error.cause),
    };
  }
  return { value: String(error) };
}

function describeCause(cause: unknown): unknown {
  return cause === undefined ? undefined : describeError(cause);
}
