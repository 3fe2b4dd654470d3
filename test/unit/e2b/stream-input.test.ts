import { describe, expect, it } from 'vitest';
import { deliverStreamInput, maxStreamInputBytes } from '../../../lib/e2b/stream-input.ts';

/** A Connect envelope, framed here from the protocol (flag byte, big-endian length, JSON). */
function frame(message: unknown, flags = 0): Buffer {
  const json = Buffer.from(JSON.stringify(message));
  const head = Buffer.alloc(5);
  head.writeUInt8(flags, 0);
  head.writeUInt32BE(json.length, 1);
  return Buffer.concat([head, json]);
}

function recorder() {
  const writes: { pid: number; bytes: Buffer }[] = [];
  const selectors: unknown[] = [];
  return {
    writes,
    selectors,
    target: {
      pidOf: async (selector: { pid?: number | undefined; tag?: string | undefined }) => {
        selectors.push(selector);
        return selector.pid ?? 42;
      },
      write: async (pid: number, dataBase64: string) => {
        writes.push({ pid, bytes: Buffer.from(dataBase64, 'base64') });
      },
    },
  };
}

const data = (bytes: Buffer, field: 'stdin' | 'pty' = 'stdin') => ({
  data: { input: { [field]: bytes.toString('base64') } },
});

describe('StreamInput', () => {
  it('delivers the input of every data message in order, in pieces SendInput could carry', async () => {
    const { writes, target } = recorder();
    const big = Buffer.alloc(100 * 1024, 'a');
    big.write('END', big.length - 3);
    const body = Buffer.concat([
      frame({ start: { process: { pid: 7 } } }),
      frame(data(Buffer.from('first '))),
      frame({ keepalive: {} }),
      frame(data(big, 'pty')),
      frame({}, 0x02),
    ]);
    await deliverStreamInput(body, target);
    expect(writes.every((write) => write.pid === 7)).toBe(true);
    expect(writes.map((write) => write.bytes.length)).toEqual([64 * 1024, 6 + 100 * 1024 - 64 * 1024]);
    expect(Buffer.concat(writes.map((write) => write.bytes)).toString()).toBe(`first ${big.toString()}`);
  });

  it('names the process by tag as well as by pid', async () => {
    const { writes, selectors, target } = recorder();
    await deliverStreamInput(
      Buffer.concat([frame({ start: { process: { tag: 'repl' } } }), frame(data(Buffer.from('x')))]),
      target,
    );
    expect(selectors).toEqual([{ tag: 'repl' }]);
    expect(writes).toEqual([{ pid: 42, bytes: Buffer.from('x') }]);
  });

  it('refuses, before anything is written: no start, a second start, an unknown message, a cut envelope, too much', async () => {
    const bad = [
      Buffer.concat([frame(data(Buffer.from('x')))]),
      Buffer.concat([frame({ start: { process: {} } })]),
      Buffer.concat([frame({ start: { process: { pid: 1 } } }), frame({ start: { process: { pid: 2 } } })]),
      Buffer.concat([frame({ start: { process: { pid: 1 } } }), frame({ something: 'else' })]),
      Buffer.concat([
        frame({ start: { process: { pid: 1 } } }),
        frame(data(Buffer.from('x'))).subarray(0, 8),
      ]),
      Buffer.concat([
        frame({ start: { process: { pid: 1 } } }),
        frame(data(Buffer.alloc(maxStreamInputBytes / 2))),
        frame(data(Buffer.alloc(maxStreamInputBytes / 2 + 1))),
      ]),
    ];
    for (const body of bad) {
      const { writes, target } = recorder();
      await expect(deliverStreamInput(body, target)).rejects.toMatchObject({ code: 'invalid_argument' });
      expect(writes).toEqual([]);
    }
  });
});
