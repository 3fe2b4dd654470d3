/**
 * The helper every devhost interactive process runs under, inside the same jail as an exec (Python 3's
 * standard library only: the host's /usr is the jail's). It starts the command in a session of its own,
 * with a terminal (pty) of the asked size or with a pipe as stdin, and reads frames from its own stdin:
 * the control plane's only channel into the jail, so input, end of input, resize and signals all reach
 * the process from inside, where its pid namespace is. Output: a terminal's comes out on the helper's
 * stdout; without one the command writes straight to the helper's stdout and stderr. The helper exits
 * with the command's exit code (128 + n for signal n, as a shell says it).
 *
 * A frame is one type byte, a 4-byte big-endian length and the payload:
 * `d` input bytes, `e` end of input, `r` resize ("cols rows"), `s` signal (its number). The end of the
 * helper's stdin itself (not an `e` frame) kills the command: it is how a kill reaches inside the jail.
 */
export const frameTypes = { data: 0x64, end: 0x65, resize: 0x72, signal: 0x73 } as const;

export function frame(type: number, payload: Uint8Array = new Uint8Array()): Buffer {
  const header = Buffer.alloc(5);
  header.writeUInt8(type, 0);
  header.writeUInt32BE(payload.length, 1);
  return Buffer.concat([header, payload]);
}

export const processHelperSource = String.raw`
import errno, fcntl, os, select, signal, struct, sys, termios

def main():
    mode, cols, rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    argv = sys.argv[5:]
    if mode == 'pty':
        master, slave = os.openpty()
        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack('HHHH', rows, cols, 0, 0))
    else:
        slave, master = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(master)
            os.setsid()
            if mode == 'pty':
                fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
                os.dup2(slave, 1)
                os.dup2(slave, 2)
            os.dup2(slave, 0)
            if slave > 2:
                os.close(slave)
            signal.signal(signal.SIGPIPE, signal.SIG_DFL)
            os.execvp(argv[0], argv)
        except OSError as error:
            os.write(2, ('%s: %s\n' % (argv[0], error.strerror)).encode())
        os._exit(127)
    os.close(slave)
    os.set_blocking(master, False)
    frames = b''
    pending = b''
    closing = False
    control_open = True
    status = None

    def send_signal(number):
        try:
            os.killpg(pid, number)
        except OSError:
            try:
                os.kill(pid, number)
            except OSError:
                pass

    while True:
        if status is None:
            done, code = os.waitpid(pid, os.WNOHANG)
            if done == pid:
                status = code
        readers = []
        if control_open and status is None:
            readers.append(0)
        if mode == 'pty':
            readers.append(master)
        elif status is not None:
            break
        writers = [master] if pending and status is None else []
        try:
            readable, writable, _ = select.select(readers, writers, [], 0.05)
        except InterruptedError:
            continue
        if 0 in readable:
            chunk = os.read(0, 65536)
            if not chunk:
                # The control channel closed: the control plane ended this process (or is gone). Nothing
                # may outlive it, whatever became of the jail's own parent.
                control_open = False
                send_signal(signal.SIGKILL)
            frames += chunk
            while len(frames) >= 5:
                kind = frames[0]
                size = struct.unpack('>I', frames[1:5])[0]
                if len(frames) < 5 + size:
                    break
                payload, frames = frames[5:5 + size], frames[5 + size:]
                if kind == 0x64:
                    pending += payload
                elif kind == 0x65:
                    if mode == 'pty':
                        pending += b'\x04'
                    else:
                        closing = True
                elif kind == 0x72 and mode == 'pty':
                    c, r = (int(x) for x in payload.decode().split())
                    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack('HHHH', r, c, 0, 0))
                elif kind == 0x73:
                    send_signal(int(payload.decode()))
        if master in writable and pending:
            try:
                written = os.write(master, pending)
                pending = pending[written:]
            except BlockingIOError:
                pass
            except OSError:
                pending = b''
        if closing and not pending and mode != 'pty' and master >= 0:
            os.close(master)
            master = -1
            closing = False
        if mode == 'pty' and master in readable:
            try:
                data = os.read(master, 65536)
            except OSError as error:
                if error.errno == errno.EIO:
                    data = b''
                else:
                    raise
            if data:
                view = memoryview(data)
                while view:
                    written = os.write(1, view)
                    view = view[written:]
            elif status is not None:
                break
        if mode == 'pty' and status is not None and master not in readable:
            break
    sys.exit(os.waitstatus_to_exitcode(status) if os.waitstatus_to_exitcode(status) >= 0 else 128 - os.waitstatus_to_exitcode(status))

main()
`;
