#!/usr/bin/env python3
"""A Differently adapter plugin in Python, written from the adapter HTTP protocol alone.

Standard library only. Each instance is a directory on this host; commands run as host processes
inside it. It implements the minimum route set (info, capacity, health, the instances routes, exec)
plus files, streamed exec and interactive processes (stdin after start, a terminal), and answers 501
for everything else.

    DIFFERENTLY_ADAPTER_TOKEN=... python3 plugin.py --port 8765 --root /var/lib/lab-plugin

It is a reference, not an isolation boundary: commands run with this process's user. README.md beside
this file is the plugin author's quick start.
"""

import argparse
import hmac
import json
import os
import queue
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlparse

from processes import MAX_INPUT_BYTES, SIGNALS, Processes, parse_start
from refusal import Refusal

PROTOCOL = "1"
BASE = "/adapter/v1"
MAX_JSON_BYTES = 4 * 1024 * 1024
MAX_FILE_BYTES = 100 * 1024 * 1024
# Synchronous output kept per stream; the rest is dropped and reported as truncated.
MAX_OUTPUT_BYTES = 1024 * 1024
DEFAULT_TIMEOUT_SECONDS = 600
FEATURES = ["exec", "exec.stream", "files", "exec.stdin", "exec.pty"]
REF_PATTERN = re.compile(r"^py-[A-Za-z0-9_-]{1,120}$")
STATUS = {
    "invalid_request": 400,
    "unauthenticated": 401,
    "not_found": 404,
    "invalid_state": 409,
    "payload_too_large": 413,
    "unsupported_operation": 501,
    "provider_unavailable": 503,
    "insufficient_capacity": 503,
    "sandbox_failed": 503,
    "quota_exceeded": 429,
    "internal": 500,
}


class Instances:
    """Instances as directories: <root>/<ref>/meta.json and <root>/<ref>/fs (the instance's filesystem)."""

    def __init__(self, root):
        self.root = os.path.abspath(root)
        os.makedirs(self.root, exist_ok=True)
        self.lock = threading.Lock()

    def ref_of(self, sandbox_id):
        # Keyed by the sandbox id: the same CreateRequest.id never makes a second instance.
        return "py-" + re.sub(r"[^A-Za-z0-9_-]", "_", sandbox_id)[:120]

    def dir_of(self, ref):
        if not REF_PATTERN.match(ref):
            raise Refusal("not_found", f"instance {ref} not found", {"ref": ref})
        return os.path.join(self.root, ref)

    def meta(self, ref):
        try:
            with open(os.path.join(self.dir_of(ref), "meta.json"), encoding="utf-8") as handle:
                return json.load(handle)
        except FileNotFoundError:
            raise Refusal("not_found", f"instance {ref} not found", {"ref": ref}) from None

    def create(self, request):
        ref = self.ref_of(request["id"])
        with self.lock:
            directory = self.dir_of(ref)
            if os.path.exists(os.path.join(directory, "meta.json")):
                return self.meta(ref)
            os.makedirs(os.path.join(directory, "fs", "work"), exist_ok=True)
            meta = {
                "ref": ref,
                "sandboxId": request["id"],
                "installation": request["installation"],
                "state": "running",
                "env": request.get("env") or {},
                "labels": request.get("labels") or {},
            }
            # Written last: an instance exists once its metadata does.
            partial = os.path.join(directory, "meta.json.partial")
            with open(partial, "w", encoding="utf-8") as handle:
                json.dump(meta, handle)
            os.replace(partial, os.path.join(directory, "meta.json"))
            return meta

    def list(self, installation):
        found = []
        for name in sorted(os.listdir(self.root)):
            if not REF_PATTERN.match(name):
                continue
            try:
                meta = self.meta(name)
            except Refusal:
                continue
            if meta["installation"] == installation:
                found.append(meta)
        return found

    def delete(self, ref):
        # Idempotent: a missing instance is already deleted.
        if REF_PATTERN.match(ref):
            shutil.rmtree(os.path.join(self.root, ref), ignore_errors=True)

    def path_in(self, ref, path):
        """A path inside the instance, resolved on the host; anything that leaves the instance is refused."""
        if not isinstance(path, str) or not path.startswith("/") or "\x00" in path:
            raise Refusal("invalid_request", "path must be absolute inside the instance", {"field": "path"})
        self.meta(ref)
        fs = os.path.realpath(os.path.join(self.dir_of(ref), "fs"))
        resolved = os.path.realpath(os.path.join(fs, path.lstrip("/")))
        if resolved != fs and not resolved.startswith(fs + os.sep):
            raise Refusal("invalid_request", "path leaves the instance", {"field": "path"})
        return resolved

    def launch(self, ref, request):
        """Where and with what environment a command of `request` runs: its cwd (made) and env."""
        meta = self.meta(ref)
        cwd = self.path_in(ref, request["cwd"])
        os.makedirs(cwd, exist_ok=True)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": cwd}
        env.update(meta["env"])
        env.update(request["env"])
        return cwd, env


def public(meta):
    return {"ref": meta["ref"], "sandboxId": meta["sandboxId"], "state": meta["state"]}


def parse_create(body):
    if not isinstance(body, dict):
        raise Refusal("invalid_request", "invalid body: expected a JSON object")
    for field in ("id", "installation"):
        if not isinstance(body.get(field), str) or body[field] == "":
            raise Refusal("invalid_request", f"invalid body: {field} is required", {"field": field})
    for field in ("env", "labels"):
        value = body.get(field)
        # Missing or null is an empty map (a Go nil map); anything else must map strings to strings.
        if value is not None and not (
            isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
        ):
            raise Refusal("invalid_request", f"invalid body: {field} must map strings to strings", {"field": field})
    return body


def parse_exec(body):
    if not isinstance(body, dict):
        raise Refusal("invalid_request", "invalid body: expected a JSON object")
    command = body.get("command") or None
    args = body.get("args") or None
    if (command is None) == (args is None):
        raise Refusal("invalid_request", "send exactly one of command or args", {"field": "command"})
    env = body.get("env") or {}
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise Refusal("invalid_request", "invalid body: env must map strings to strings", {"field": "env"})
    timeout = body.get("timeoutSeconds") or DEFAULT_TIMEOUT_SECONDS
    if not isinstance(timeout, int) or timeout < 0 or timeout > 7200:
        raise Refusal("invalid_request", "timeoutSeconds must be 0-7200", {"field": "timeoutSeconds"})
    return {
        "argv": ["/bin/sh", "-c", command] if command is not None else list(args),
        "env": env,
        "cwd": body.get("cwd") or "/work",
        "stdin": body.get("stdin") or "",
        "timeout": timeout,
    }


class Run:
    """One command as a host process in its own process group, its output read as it is produced."""

    def __init__(self, instances, ref, request):
        cwd, env = instances.launch(ref, request)
        self.started = time.monotonic()
        self.timeout = request["timeout"]
        self.timed_out = False
        self.process = subprocess.Popen(
            request["argv"],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self.events = queue.Queue()
        threading.Thread(target=self._feed, args=(request["stdin"],), daemon=True).start()
        self.readers = [
            threading.Thread(target=self._read, args=(self.process.stdout, "stdout"), daemon=True),
            threading.Thread(target=self._read, args=(self.process.stderr, "stderr"), daemon=True),
        ]
        for reader in self.readers:
            reader.start()

    def _feed(self, text):
        try:
            if text:
                self.process.stdin.write(text.encode("utf-8"))
            self.process.stdin.close()
        except OSError:
            pass

    def _read(self, pipe, stream):
        for chunk in iter(lambda: pipe.read1(65536), b""):
            self.events.put((stream, chunk.decode("utf-8", errors="replace")))

    def kill(self):
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def wait(self):
        """The exit code, after the timeout has ended the whole process group if it ran that long."""
        try:
            code = self.process.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self.timed_out = True
            self.kill()
            self.process.wait()
            code = 124
        for reader in self.readers:
            reader.join()
        return code

    def duration_ms(self):
        return int((time.monotonic() - self.started) * 1000)


class Handler(BaseHTTPRequestHandler):
    # HTTP/1.0: a streamed answer ends when the connection closes, with no chunked framing to write.
    protocol_version = "HTTP/1.0"
    server_version = "differently-python-plugin/0.1"

    def log_message(self, format, *args):  # noqa: A002 (the base class's name)
        if self.server.verbose:
            sys.stderr.write("%s %s\n" % (self.address_string(), format % args))

    # -- plumbing --------------------------------------------------------------------------------
    def _send(self, status, body=b"", content_type="application/json", extra=None):
        self.send_response(status)
        self.send_header("Differently-Adapter-Protocol", PROTOCOL)
        if body or status != 204:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if body:
            self.wfile.write(body)

    def _json(self, status, value):
        self._send(status, json.dumps(value).encode("utf-8"))

    def _refuse(self, refusal):
        self._json(
            STATUS.get(refusal.code, 500),
            {"error": {"code": refusal.code, "message": refusal.message, "details": refusal.details}},
        )

    def _authorized(self):
        token = self.server.token
        if not token:
            return True
        given = self.headers.get("Authorization", "")
        return hmac.compare_digest(given.encode("utf-8"), f"Bearer {token}".encode("utf-8"))

    def _body(self, limit):
        length = int(self.headers.get("Content-Length") or 0)
        if length > limit:
            raise Refusal("payload_too_large", f"the request body is larger than {limit} bytes", {"limitBytes": limit})
        return self.rfile.read(length) if length > 0 else b""

    def _json_body(self):
        raw = self._body(MAX_JSON_BYTES)
        if not raw:
            return {}
        try:
            return json.loads(raw)
        except ValueError:
            raise Refusal("invalid_request", "the request body is not valid JSON") from None

    def _dispatch(self, method):
        if not self._authorized():
            return self._refuse(Refusal("unauthenticated", "a valid adapter token is required"))
        url = urlparse(self.path)
        query = {name: values[-1] for name, values in parse_qs(url.query).items()}
        path = url.path
        if not path.startswith(BASE + "/"):
            raise Refusal("not_found", f"no route {method} {path}")
        parts = [unquote(p) for p in path[len(BASE) + 1 :].split("/")]
        instances = self.server.instances
        if parts == ["info"] and method == "GET":
            return self._json(200, {
                "info": {
                    "kind": "python-lab",
                    "version": "0.1",
                    "trust": "private",
                    "isolation": "none: host processes in a directory per instance",
                    "protocol": PROTOCOL,
                },
                # Only what the specification's own example declares: the client fills in the rest.
                "capabilities": {"features": FEATURES, "maxCPU": 0, "maxMemoryMiB": 0},
            })
        if parts == ["capacity"] and method == "GET":
            return self._json(200, {"bounded": False})
        if parts == ["health"] and method == "GET":
            return self._json(200, {"status": "ok"})
        if parts == ["instances"]:
            if method == "POST":
                return self._json(200, public(instances.create(parse_create(self._json_body()))))
            if method == "GET":
                installation = query.get("installation", "")
                if installation == "":
                    raise Refusal("invalid_request", "the installation query parameter is required")
                return self._json(200, [public(m) for m in instances.list(installation)])
        if len(parts) >= 2 and parts[0] == "instances":
            ref = parts[1]
            rest = parts[2:]
            if rest == [] and method == "GET":
                return self._json(200, public(instances.meta(ref)))
            if rest == [] and method == "DELETE":
                self.server.processes.end_all(ref)
                instances.delete(ref)
                return self._send(204)
            if rest == ["exec"] and method == "POST":
                request = parse_exec(self._json_body())
                run = Run(instances, ref, request)
                if query.get("stream") == "1":
                    return self._stream(run)
                return self._exec(run)
            if rest == ["files"] and method == "GET":
                return self._json(200, self._list_files(ref, query.get("path", "")))
            if rest == ["files", "content"] and method == "GET":
                return self._read_file(ref, query.get("path", ""))
            if rest == ["files", "content"] and method == "PUT":
                target = instances.path_in(ref, query.get("path", ""))
                content = self._body(MAX_FILE_BYTES)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with open(target, "wb") as handle:
                    handle.write(content)
                return self._send(204)
            if rest and rest[0] == "processes":
                return self._processes(ref, rest[1:], method, query)
            if len(rest) == 1 and rest[0] in ("stop", "start", "pause", "resume", "snapshots", "ports"):
                instances.meta(ref)
                raise Refusal("unsupported_operation", f"{rest[0]} is not supported by this plugin")
        if len(parts) == 2 and parts[0] == "snapshots":
            raise Refusal("unsupported_operation", "snapshots are not supported by this plugin")
        raise Refusal("not_found", f"no route {method} {path}")

    def _processes(self, ref, rest, method, query):
        instances, processes = self.server.instances, self.server.processes
        instances.meta(ref)
        if rest == [] and method == "GET":
            return self._json(200, processes.list(ref))
        if rest == [] and method == "POST":
            return self._json(200, dict(processes.start(instances, ref, parse_start(self._json_body())).info))
        if not rest or not rest[0].isdigit():
            raise Refusal("not_found", f"no route {method} processes/{'/'.join(rest)}")
        process = processes.get(ref, int(rest[0]))
        verb = rest[1] if len(rest) == 2 else None
        if len(rest) == 1 and method == "GET":
            return self._json(200, dict(process.info))
        if verb == "output" and method == "GET":
            max_bytes = int(query.get("maxBytes") or MAX_JSON_BYTES // 2)
            return self._json(200, process.read(max(1, min(max_bytes, MAX_JSON_BYTES // 2))))
        if method == "POST" and verb == "stdin":
            process.write(self._body(MAX_INPUT_BYTES))
            return self._send(204)
        if method == "POST" and verb == "close-stdin":
            process.close_stdin()
            return self._send(204)
        if method == "POST" and verb == "resize":
            body = self._json_body()
            size = parse_start({"argv": ["-"], "pty": body})["pty"]
            process.resize(size)
            return self._send(204)
        if method == "POST" and verb == "signal":
            name = self._json_body().get("signal")
            if name not in SIGNALS:
                raise Refusal("invalid_request", f"signal must be one of {sorted(SIGNALS)}")
            process.signal(name)
            return self._send(204)
        if method == "POST" and verb == "attach":
            return self._attach(process)
        raise Refusal("not_found", f"no route {method} processes/{'/'.join(rest)}")

    def _attach(self, process):
        self.send_response(200)
        self.send_header("Differently-Adapter-Protocol", PROTOCOL)
        self.send_header("Content-Type", "application/x-ndjson")
        self.end_headers()
        attacher = process.attach()
        try:
            while True:
                try:
                    event = attacher.get(timeout=0.2)
                except queue.Empty:
                    if self._client_gone():
                        return
                    continue
                if event is None:
                    line = {"exitCode": process.info["exitCode"]}
                else:
                    line = {"stream": event[0], "data": event[1]}
                self.wfile.write((json.dumps(line) + "\n").encode("utf-8"))
                self.wfile.flush()
                if event is None:
                    return
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client detached: the process goes on
        finally:
            process.detach(attacher)

    def _client_gone(self):
        """A client that closed its side makes the socket readable with nothing to read."""
        readable, _, _ = select.select([self.connection], [], [], 0)
        if not readable:
            return False
        try:
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _exec(self, run):
        out = {"stdout": [], "stderr": []}
        size = {"stdout": 0, "stderr": 0}
        truncated = False
        code = run.wait()
        while not run.events.empty():
            stream, text = run.events.get()
            room = MAX_OUTPUT_BYTES - size[stream]
            data = text.encode("utf-8")
            if len(data) > room:
                truncated = True
                data = data[: max(room, 0)]
            out[stream].append(data)
            size[stream] += len(data)
        result = {
            "exitCode": code,
            "stdout": b"".join(out["stdout"]).decode("utf-8", errors="ignore"),
            "stderr": b"".join(out["stderr"]).decode("utf-8", errors="ignore"),
            "durationMs": run.duration_ms(),
        }
        # Left out when false, as a Go omitempty would: the client takes false.
        if truncated:
            result["truncated"] = True
        if run.timed_out:
            result["timedOut"] = True
        self._json(200, result)

    def _stream(self, run):
        self.send_response(200)
        self.send_header("Differently-Adapter-Protocol", PROTOCOL)
        self.send_header("Content-Type", "application/x-ndjson")
        self.end_headers()
        waiter = threading.Thread(target=lambda: setattr(run, "code", run.wait()), daemon=True)
        waiter.start()
        try:
            while waiter.is_alive() or not run.events.empty():
                try:
                    stream, text = run.events.get(timeout=0.1)
                except queue.Empty:
                    continue
                self.wfile.write((json.dumps({"stream": stream, "data": text}) + "\n").encode("utf-8"))
                self.wfile.flush()
            self.wfile.write((json.dumps({"exitCode": run.code}) + "\n").encode("utf-8"))
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            # The client went away: the command goes with it.
            run.kill()

    def _list_files(self, ref, path):
        directory = self.server.instances.path_in(ref, path)
        if not os.path.isdir(directory):
            raise Refusal("not_found", f"{path} not found", {"path": path})
        items = []
        for name in sorted(os.listdir(directory)):
            full = os.path.join(directory, name)
            stat = os.lstat(full)
            items.append({
                "name": name,
                "path": path.rstrip("/") + "/" + name,
                "isDir": os.path.isdir(full),
                "size": stat.st_size,
            })
        return items

    def _read_file(self, ref, path):
        target = self.server.instances.path_in(ref, path)
        if not os.path.isfile(target):
            raise Refusal("not_found", f"{path} not found", {"path": path})
        if os.path.getsize(target) > MAX_FILE_BYTES:
            raise Refusal("payload_too_large", f"{path} is larger than {MAX_FILE_BYTES} bytes")
        with open(target, "rb") as handle:
            self._send(200, handle.read(), "application/octet-stream")

    def _handle(self, method):
        try:
            self._dispatch(method)
        except Refusal as refusal:
            self._refuse(refusal)
        except Exception as error:  # noqa: BLE001 (masked to the client, logged here)
            sys.stderr.write(f"internal error: {error!r}\n")
            self._refuse(Refusal("internal", "internal error"))

    def do_GET(self):
        self._handle("GET")

    def do_POST(self):
        self._handle("POST")

    def do_PUT(self):
        self._handle("PUT")

    def do_DELETE(self):
        self._handle("DELETE")


def main():
    parser = argparse.ArgumentParser(description="A Differently adapter plugin: instances as host directories.")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--root", required=True, help="where instances live (one directory each)")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    server.token = os.environ.get("DIFFERENTLY_ADAPTER_TOKEN", "")
    server.instances = Instances(args.root)
    server.processes = Processes()
    server.verbose = args.verbose
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    host, port = server.server_address[:2]
    print(f"python plugin listening at http://{host}:{port}{BASE}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
