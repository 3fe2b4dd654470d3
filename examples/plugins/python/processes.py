"""Interactive processes for the plugin (features exec.stdin and exec.pty): input after start, a terminal
if asked, output held unread (bounded) or handed to the callers attached. Standard library only."""

import fcntl
import os
import pty
import queue
import signal
import struct
import subprocess
import termios
import threading
import time

from refusal import Refusal

DEFAULT_TIMEOUT_SECONDS = 600
# Interactive processes: output nobody has read waits here, up to this; then the process is paused.
MAX_UNREAD_BYTES = 1024 * 1024
MAX_INPUT_BYTES = 64 * 1024
MAX_PROCESSES = 16
SIGNALS = {"SIGINT", "SIGTERM", "SIGKILL", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2"}


def parse_start(body):
    if not isinstance(body, dict):
        raise Refusal("invalid_request", "the body must be a JSON object")
    argv = body.get("argv")
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        raise Refusal("invalid_request", "argv must be a non-empty list of strings")
    size = body.get("pty")
    if size is not None and not (
        isinstance(size, dict) and all(isinstance(size.get(k), int) and 1 <= size[k] <= 1000 for k in ("cols", "rows"))
    ):
        raise Refusal("invalid_request", "pty must be {cols, rows}, each 1 to 1000")
    env = body.get("env") or {}
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise Refusal("invalid_request", "env must map names to strings")
    timeout = body.get("timeoutSeconds") or DEFAULT_TIMEOUT_SECONDS
    if not isinstance(timeout, int) or timeout < 1:
        raise Refusal("invalid_request", "timeoutSeconds must be a positive integer")
    return {
        "argv": (["/bin/sh", "-c"] + argv) if body.get("shell") else argv,
        "env": env,
        "cwd": body.get("cwd") or "/",
        "pty": size,
        "tag": body.get("tag") or None,
        "timeout": timeout,
    }


def set_size(fd, size):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", size["rows"], size["cols"], 0, 0))


class Interactive:
    """One interactive process: input after start, a terminal if asked, output held unread (bounded) or
    handed to the callers attached, its exit kept for the listing."""

    def __init__(self, instances, ref, pid, request):
        cwd, env = instances.launch(ref, request)
        if request["pty"] is not None:
            env.setdefault("TERM", "xterm-256color")
            self.master, slave = pty.openpty()
            set_size(self.master, request["pty"])
            streams = {"stdin": slave, "stdout": slave, "stderr": slave}
        else:
            self.master = None
            streams = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
        self.process = subprocess.Popen(request["argv"], cwd=cwd, env=env, start_new_session=True, **streams)
        if self.master is not None:
            os.close(slave)
        self.info = {
            "pid": pid,
            "argv": request["argv"],
            "cwd": request["cwd"],
            "pty": request["pty"],
            "tag": request["tag"],
            "startedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "exitCode": None,
            "stdinOpen": True,
            "attached": 0,
        }
        self.changed = threading.Condition()
        self.unread = []
        self.unread_bytes = 0
        self.attachers = []
        self.deadline = time.monotonic() + request["timeout"]
        if self.master is not None:
            readers = [(self._read_terminal, ())]
        else:
            readers = [(self._read_pipe, (self.process.stdout, "stdout")), (self._read_pipe, (self.process.stderr, "stderr"))]
        self.readers = [threading.Thread(target=t, args=a, daemon=True) for t, a in readers]
        for reader in self.readers:
            reader.start()
        threading.Thread(target=self._wait, daemon=True).start()

    def _output(self, stream, data):
        text = data.decode("utf-8", errors="replace")
        with self.changed:
            if self.attachers:
                for attacher in self.attachers:
                    attacher.put((stream, text))
                return
            # Backpressure: with nobody reading, the reader waits for room instead of growing without end.
            while self.unread_bytes >= MAX_UNREAD_BYTES and not self.attachers:
                self.changed.wait(0.5)
            if self.attachers:
                for attacher in self.attachers:
                    attacher.put((stream, text))
                return
            self.unread.append((stream, text))
            self.unread_bytes += len(data)

    def _read_pipe(self, pipe, stream):
        for chunk in iter(lambda: pipe.read1(65536), b""):
            self._output(stream, chunk)

    def _read_terminal(self):
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                break
            if not chunk:
                break
            self._output("stdout", chunk)

    def _wait(self):
        try:
            code = self.process.wait(timeout=max(0.0, self.deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.kill()
            self.process.wait()
            code = 124
        if code < 0:
            code = 128 - code
        for reader in self.readers:
            reader.join(timeout=5)
        with self.changed:
            self.info["exitCode"] = code
            self.info["stdinOpen"] = False
            for attacher in self.attachers:
                attacher.put(None)
            self.changed.notify_all()
        if self.master is not None:
            os.close(self.master)

    def _require_running(self, what):
        if self.info["exitCode"] is not None:
            raise Refusal(
                "invalid_state",
                f"cannot {what} process {self.info['pid']}: it exited with code {self.info['exitCode']}",
                {"pid": self.info["pid"], "exitCode": self.info["exitCode"]},
            )

    def write(self, data):
        self._require_running("write to")
        if not self.info["stdinOpen"]:
            raise Refusal("invalid_state", f"the stdin of process {self.info['pid']} is closed")
        try:
            if self.master is not None:
                os.write(self.master, data)
            else:
                self.process.stdin.write(data)
                self.process.stdin.flush()
        except OSError:
            pass

    def close_stdin(self):
        self._require_running("close the stdin of")
        if not self.info["stdinOpen"]:
            return
        self.info["stdinOpen"] = False
        if self.master is not None:
            os.write(self.master, b"\x04")
        else:
            self.process.stdin.close()

    def resize(self, size):
        self._require_running("resize")
        if self.master is None:
            raise Refusal("invalid_request", f"process {self.info['pid']} has no terminal to resize")
        set_size(self.master, size)
        self.info["pty"] = size

    def signal(self, name):
        self._require_running("signal")
        try:
            os.killpg(self.process.pid, getattr(signal, name))
        except ProcessLookupError:
            pass

    def kill(self):
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def read(self, max_bytes):
        events, size = [], 0
        with self.changed:
            while self.unread and size + len(self.unread[0][1].encode("utf-8")) <= max_bytes:
                stream, text = self.unread.pop(0)
                size += len(text.encode("utf-8"))
                events.append({"stream": stream, "data": text})
            self.unread_bytes = max(0, self.unread_bytes - size)
            self.changed.notify_all()
            exit_code = self.info["exitCode"] if not self.unread else None
        return {"events": events, "dropped": False, "exitCode": exit_code}

    def attach(self):
        """A queue of (stream, text) then None at the exit, unread output first; detach() when done."""
        attacher = queue.Queue()
        with self.changed:
            for event in self.unread:
                attacher.put(event)
            self.unread, self.unread_bytes = [], 0
            if self.info["exitCode"] is not None:
                attacher.put(None)
            else:
                self.attachers.append(attacher)
            self.info["attached"] = len(self.attachers)
            self.changed.notify_all()
        return attacher

    def detach(self, attacher):
        with self.changed:
            if attacher in self.attachers:
                self.attachers.remove(attacher)
            self.info["attached"] = len(self.attachers)
            # What reached this caller's queue after it left is not lost: with nobody else attached it
            # waits unread, as if it had never been handed on.
            if not self.attachers:
                left = []
                while True:
                    try:
                        event = attacher.get_nowait()
                    except queue.Empty:
                        break
                    if event is not None:
                        left.append(event)
                self.unread = left + self.unread
                self.unread_bytes += sum(len(text.encode("utf-8")) for _, text in left)


class Processes:
    """Every instance's interactive processes, by ref and pid (this plugin's own state)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.by_ref = {}

    def start(self, instances, ref, request):
        with self.lock:
            table = self.by_ref.setdefault(ref, {"next": 1, "processes": {}})
            live = [p for p in table["processes"].values() if p.info["exitCode"] is None]
            if len(live) >= MAX_PROCESSES:
                raise Refusal("quota_exceeded", f"an instance runs at most {MAX_PROCESSES} interactive processes")
            pid = table["next"]
            table["next"] += 1
            try:
                process = Interactive(instances, ref, pid, request)
            except OSError as error:
                raise Refusal("invalid_request", f"cannot start {request['argv'][0]}: {error.strerror}") from None
            table["processes"][pid] = process
            return process

    def list(self, ref):
        with self.lock:
            return [dict(p.info) for p in self.by_ref.get(ref, {"processes": {}})["processes"].values()]

    def get(self, ref, pid):
        with self.lock:
            found = self.by_ref.get(ref, {"processes": {}})["processes"].get(pid)
        if found is None:
            raise Refusal("not_found", f"no process {pid} in this instance", {"pid": pid})
        return found

    def end_all(self, ref):
        with self.lock:
            table = self.by_ref.pop(ref, {"processes": {}})
        for process in table["processes"].values():
            process.kill()
