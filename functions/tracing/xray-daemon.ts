import { createSocket, type Socket } from 'node:dgram';

/** Where the X-Ray daemon listens for segment documents over UDP. */
export interface DaemonAddress {
  host: string;
  port: number;
}

/** The daemon's address when AWS_XRAY_DAEMON_ADDRESS is unset (the daemon's own default). */
const defaultAddress: DaemonAddress = { host: '127.0.0.1', port: 2000 };

/**
 * AWS_XRAY_DAEMON_ADDRESS as Lambda sets it: `host:port`, or `udp:host:port tcp:host:port` (either order)
 * when the two protocols differ; documents go over UDP. Anything else falls back to the default: a
 * malformed address must not fail an invocation, it only loses its trace.
 */
export function daemonAddress(value: string | undefined): DaemonAddress {
  if (value === undefined || value.trim() === '') return defaultAddress;
  const parts = value.trim().split(/\s+/);
  const udp = parts.length > 1 ? parts.find((part) => part.startsWith('udp:'))?.slice(4) : parts[0];
  const match = udp === undefined ? null : /^(.+):(\d{1,5})$/.exec(udp);
  if (match === null) return defaultAddress;
  const port = Number(match[2]);
  return port > 0 && port < 65536 ? { host: match[1] ?? defaultAddress.host, port } : defaultAddress;
}

/** Every datagram starts with this header line (the daemon's protocol). */
const header = '{"format":"json","version":1}\n';

/**
 * Sends finished (sub)segment documents to the daemon, one datagram each. The socket is made on the first
 * send and does not hold the process open; `flush` waits for the datagrams handed to the kernel so far,
 * which the tracer does before an invocation returns (Lambda freezes the container after that). A send
 * that fails is dropped: tracing never fails the work it traces.
 */
export class XRayDaemonClient {
  readonly #address: DaemonAddress;
  #socket: Socket | undefined;
  readonly #pending = new Set<Promise<void>>();

  constructor(address: DaemonAddress) {
    this.#address = address;
  }

  send(document: object): void {
    const socket = this.#openSocket();
    const sent = new Promise<void>((resolve) => {
      socket.send(header + JSON.stringify(document), this.#address.port, this.#address.host, () => resolve());
    });
    this.#pending.add(sent);
    void sent.then(() => this.#pending.delete(sent));
  }

  async flush(): Promise<void> {
    await Promise.all(this.#pending);
  }

  close(): void {
    this.#socket?.close();
    this.#socket = undefined;
  }

  #openSocket(): Socket {
    if (this.#socket !== undefined) return this.#socket;
    const socket = createSocket(this.#address.host.includes(':') ? 'udp6' : 'udp4');
    socket.on('error', () => {
      // A lost datagram is a lost trace, never a failed invocation.
    });
    socket.unref();
    this.#socket = socket;
    return socket;
  }
}
