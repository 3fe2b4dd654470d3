import { describe, expect, it } from 'vitest';
import { UnreadBound } from '../../../lib/mcp/unread-bound.ts';

describe('UnreadBound', () => {
  it('lets a producer on while the unread bytes are within the bound', async () => {
    const bound = new UnreadBound(100);
    bound.handed(100);
    await bound.room();
    expect(bound.unread).toBe(100);
  });

  it('holds a producer past the bound until the client takes enough, then lets it on', async () => {
    const bound = new UnreadBound(100);
    bound.handed(250);
    let released = false;
    const waiting = bound.room().then(() => {
      released = true;
    });
    await Promise.resolve();
    bound.taken(100);
    await Promise.resolve();
    expect(released).toBe(false);
    bound.taken(50);
    await waiting;
    expect(released).toBe(true);
    expect(bound.unread).toBe(100);
  });

  it('lets a held producer go when its request ends', async () => {
    const bound = new UnreadBound(10);
    bound.handed(1000);
    const ended = new AbortController();
    const waiting = bound.room(ended.signal);
    ended.abort();
    await expect(waiting).resolves.toBeUndefined();
    expect(bound.unread).toBe(1000);
  });
});
