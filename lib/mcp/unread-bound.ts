/**
 * How much of an MCP answer's stream its client has not taken yet. The MCP SDK's streamable-HTTP
 * transport enqueues every notification at once, whoever reads, so a client that never read would have a
 * command's whole output held in the function (one such client took a server from 153 MB to 2.3 GB). The
 * exec tool counts what it hands to the transport, the route counts what the client's connection took,
 * and the tool waits while more than `maxUnread` bytes lie in between: the command then waits on its own
 * output pipe, as a streamed REST exec does behind a slow reader.
 */
export class UnreadBound {
  readonly #maxUnread: number;
  #handed = 0;
  #taken = 0;
  #waiting = new Set<() => void>();

  constructor(maxUnread: number) {
    this.#maxUnread = maxUnread;
  }

  /** Bytes the producer handed to the transport. */
  handed(bytes: number): void {
    this.#handed += bytes;
  }

  /** Bytes the client's connection took. */
  taken(bytes: number): void {
    this.#taken += bytes;
    if (this.#handed - this.#taken > this.#maxUnread) return;
    const waiting = [...this.#waiting];
    this.#waiting.clear();
    for (const wake of waiting) wake();
  }

  get unread(): number {
    return Math.max(0, this.#handed - this.#taken);
  }

  /** Resolves once the unread bytes are within the bound, or when `signal` aborts (the caller then ends). */
  async room(signal?: AbortSignal): Promise<void> {
    while (this.#handed - this.#taken > this.#maxUnread && signal?.aborted !== true) {
      await new Promise<void>((resolve) => {
        const wake = () => {
          this.#waiting.delete(wake);
          signal?.removeEventListener('abort', wake);
          resolve();
        };
        this.#waiting.add(wake);
        signal?.addEventListener('abort', wake, { once: true });
      });
    }
  }
}

/** What an MCP answer may hold unread before the exec tool waits: a socket buffer's order, as REST's is. */
export const maxUnreadMcpBytes = 64 * 1024;
