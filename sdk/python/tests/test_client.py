"""The client end to end against the local runtime, which this test starts (node infra/local/main.ts)."""

from __future__ import annotations

import http.server
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE = HERE.parent
REPO = PACKAGE.parent.parent
sys.path.insert(0, str(PACKAGE))

from differently import DifferentlyClient, DifferentlyError, DifferentlyNetworkError  # noqa: E402


def node() -> str:
    """The Node the server runs on: DIFFERENTLY_NODE, else the repository's own Node 24, else `node`."""
    local = REPO / "node_modules" / "node" / "bin" / "node"
    return os.environ.get("DIFFERENTLY_NODE") or (str(local) if local.exists() else "node")


class LocalRuntime:
    """`npm start` on a free port, its banner read for the URL; stopped with the test class."""

    def __init__(self) -> None:
        self.admin_key = "dadm_" + secrets.token_urlsafe(24)
        self.process = subprocess.Popen(
            [node(), "infra/local/main.ts", "--port", "0"],
            cwd=REPO,
            env={**os.environ, "DIFFERENTLY_ADMIN_KEY": self.admin_key},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.url = ""
        seen: list[str] = []
        assert self.process.stdout is not None
        for line in self.process.stdout:
            seen.append(line)
            match = re.search(r"running at (http://\S+)", line)
            if match:
                self.url = match.group(1)
                break
        if not self.url:
            self.stop()
            raise RuntimeError("the local runtime did not start:\n" + "".join(seen))
        # Keep reading its output so the pipe never fills and blocks the server.
        threading.Thread(target=lambda: [None for _ in self.process.stdout or []], daemon=True).start()

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class AgainstTheLocalRuntime(unittest.TestCase):
    runtime: LocalRuntime
    admin: DifferentlyClient
    tenant: DifferentlyClient
    org_id: str

    @classmethod
    def setUpClass(cls) -> None:
        cls.runtime = LocalRuntime()
        cls.admin = DifferentlyClient(cls.runtime.url, cls.runtime.admin_key)
        org = cls.admin.admin.create_org({"name": "python"})
        cls.org_id = org["id"]
        key = cls.admin.admin.create_key(org["id"], {"name": "python"})
        cls.tenant = DifferentlyClient(cls.runtime.url, key["key"])

    @classmethod
    def tearDownClass(cls) -> None:
        cls.runtime.stop()

    def running(self) -> str:
        sandbox = self.tenant.create_sandbox({"placement": {"allowedPools": ["local"]}})
        progress: list[str] = []
        running = self.tenant.wait_until_running(sandbox["id"], interval_seconds=0.05, on_progress=lambda s: progress.append(s["status"]))
        self.assertEqual(running["status"], "running")
        self.assertEqual(progress[-1], "running")
        return running["id"]

    def test_a_sandbox_end_to_end(self) -> None:
        sandbox_id = self.running()
        result = self.tenant.exec(sandbox_id, {"command": "echo hello; echo oops >&2; exit 3"})
        self.assertEqual((result["exitCode"], result["stdout"], result["stderr"]), (3, "hello\n", "oops\n"))

        events = list(self.tenant.exec_stream(sandbox_id, {"command": "echo one; echo two"}))
        self.assertEqual("".join(e.get("data", "") for e in events if e.get("stream") == "stdout"), "one\ntwo\n")
        self.assertEqual(events[-1], {"exitCode": 0})

        self.tenant.write_file(sandbox_id, "/work/notes.txt", "café\n")
        self.assertEqual(self.tenant.read_file(sandbox_id, "/work/notes.txt"), "café\n".encode())
        names = [item["name"] for item in self.tenant.list_files(sandbox_id, "/work")["items"]]
        self.assertIn("notes.txt", names)

        updated = self.tenant.update_sandbox(sandbox_id, labels={"team": "py"})
        self.assertEqual(updated["labels"], {"team": "py"})
        listed = self.tenant.list_sandboxes(label="team=py")
        self.assertEqual([s["id"] for s in listed["items"]], [sandbox_id])

        self.assertEqual(self.tenant.delete_sandbox(sandbox_id)["status"], "terminating")

    def test_interactive_processes(self) -> None:
        sandbox_id = self.running()
        started = self.tenant.start_process(sandbox_id, {"command": "while read -r l; do echo \"got:$l\"; done; exit 2"})
        pid = started["pid"]
        self.tenant.write_stdin(sandbox_id, pid, "one\n")
        self.tenant.write_stdin(sandbox_id, pid, b"two\n", close=True)
        lines = list(self.tenant.attach_process(sandbox_id, pid))
        self.assertEqual(lines[0]["process"]["pid"], pid)
        self.assertEqual("".join(line.get("data", "") for line in lines), "got:one\ngot:two\n")
        self.assertEqual(lines[-1], {"exitCode": 2})
        self.assertEqual(self.tenant.get_process(sandbox_id, pid)["exitCode"], 2)
        with self.assertRaises(DifferentlyError) as refused:
            self.tenant.write_stdin(sandbox_id, pid, "late\n")
        self.assertEqual(refused.exception.code, "invalid_state")

        shell = self.tenant.start_process(sandbox_id, {"args": ["/bin/sh"], "pty": {"cols": 80, "rows": 24}})
        self.tenant.resize_process(sandbox_id, shell["pid"], 100, 30)
        self.tenant.write_stdin(sandbox_id, shell["pid"], "stty size\n")
        seen = ""
        for _ in range(200):
            seen += self.tenant.read_process_output(sandbox_id, shell["pid"])["stdout"]
            if "30 100" in seen:
                break
            time.sleep(0.05)
        self.assertIn("30 100", seen)
        self.tenant.signal_process(sandbox_id, shell["pid"], "SIGKILL")
        self.assertIn(shell["pid"], [p["pid"] for p in self.tenant.list_processes(sandbox_id)["items"]])
        self.tenant.delete_sandbox(sandbox_id)

    def test_creates_carry_an_idempotency_key(self) -> None:
        first = self.tenant.create_sandbox({"labels": {"try": "1"}}, idempotency_key="python-once")
        again = self.tenant.create_sandbox({"labels": {"try": "1"}}, idempotency_key="python-once")
        self.assertEqual(first["id"], again["id"])
        other = self.tenant.create_sandbox({"labels": {"try": "1"}})
        self.assertNotEqual(other["id"], first["id"])

    def test_errors_are_exceptions_with_the_envelopes_code_and_message(self) -> None:
        with self.assertRaises(DifferentlyError) as missing:
            self.tenant.get_sandbox("sbx_01J00000000000000000000000")
        self.assertEqual((missing.exception.status, missing.exception.code), (404, "not_found"))
        self.assertEqual(missing.exception.message, "sandbox sbx_01J00000000000000000000000 not found")
        with self.assertRaises(DifferentlyError) as refused:
            DifferentlyClient(self.runtime.url, "key_01J00000000000000000000000.nope").usage()
        self.assertEqual((refused.exception.status, refused.exception.code), (401, "unauthenticated"))
        with self.assertRaises(DifferentlyError) as invalid:
            self.tenant.exec("sbx_01J00000000000000000000000", {"command": "true", "args": ["x"]})
        self.assertEqual(invalid.exception.code, "invalid_request")

    def test_operator_routes_and_org_reports(self) -> None:
        self.assertEqual(self.admin.health(), {"status": "ok"})
        self.assertIn(self.org_id, [org["id"] for org in self.admin.admin.list_orgs(limit=100)["items"]])
        self.assertEqual(self.admin.admin.set_quota(self.org_id, {"maxSandboxes": 40})["quota"]["maxSandboxes"], 40)
        self.assertIn("local", [pool["name"] for pool in self.admin.admin.list_pools()["items"]])
        self.assertTrue(self.admin.admin.verify_audit(self.org_id)["ok"])
        self.assertEqual(self.tenant.usage()["orgId"], self.org_id)
        self.assertEqual(self.admin.admin.set_budget(self.org_id, 12.5)["monthly"], 12.5)
        self.assertEqual(self.tenant.usage()["budget"]["left"], 12.5)
        self.assertEqual(self.admin.admin.get_budget(self.org_id)["monthly"], 12.5)
        self.assertIsNone(self.admin.admin.set_budget(self.org_id, None)["monthly"])
        policy = {"afterSeconds": 600, "action": "stop"}
        self.assertEqual(self.admin.admin.set_idle_policy(self.org_id, policy)["idlePolicy"], policy)
        self.assertIsNone(self.admin.admin.set_idle_policy(self.org_id, None)["idlePolicy"])
        egress = {"egress": "deny"}
        self.assertEqual(self.admin.admin.set_network_policy(self.org_id, egress)["networkPolicy"], egress)
        self.assertIsNone(self.admin.admin.set_network_policy(self.org_id, None)["networkPolicy"])
        hook = self.admin.admin.create_webhook(self.org_id, "http://127.0.0.1:9/hook", ["sandbox.running"])
        self.assertTrue(hook["secret"].startswith("whsec_"))
        self.assertIn(hook["id"], [item["id"] for item in self.admin.admin.list_webhooks(self.org_id)["items"]])
        self.assertNotEqual(self.admin.admin.rotate_webhook_secret(self.org_id, hook["id"])["secret"], hook["secret"])
        self.assertEqual(self.admin.admin.list_webhook_deliveries(self.org_id, hook["id"], limit=10)["items"], [])
        self.assertTrue(self.admin.admin.delete_webhook(self.org_id, hook["id"])["deleted"])
        project = self.admin.admin.create_project(self.org_id, "budgeted")
        self.assertEqual(self.admin.admin.set_project_budget(self.org_id, project["id"], 2)["left"], 2)
        self.assertEqual(self.admin.admin.get_project_budget(self.org_id, project["id"])["monthly"], 2)
        self.assertIn("pools", self.tenant.trust())
        self.assertIn("paths", self.tenant.openapi())

    def test_the_mcp_endpoint(self) -> None:
        answers = self.tenant.mcp(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "py", "version": "1"}},
            }
        )
        self.assertEqual(answers[0]["result"]["serverInfo"]["name"], "differently")


class WithoutTheRuntime(unittest.TestCase):
    def test_an_unreachable_endpoint_is_a_network_error(self) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        with self.assertRaises(DifferentlyNetworkError):
            DifferentlyClient(f"http://127.0.0.1:{port}", "k", attempts=1).health()

    def test_retries_503_for_safe_requests_only(self) -> None:
        calls: list[str] = []

        class Busy(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                calls.append("GET")
                self._answer(503 if len(calls) < 3 else 200, {"status": "ok"} if len(calls) >= 3 else {"error": {"code": "provider_unavailable", "message": "busy", "details": {}}})

            def do_POST(self) -> None:  # noqa: N802
                calls.append("POST")
                self.rfile.read(int(self.headers.get("content-length", "0")))
                self._answer(503, {"error": {"code": "provider_unavailable", "message": "busy", "details": {}}})

            def _answer(self, status: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Busy)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            client = DifferentlyClient(f"http://127.0.0.1:{server.server_address[1]}", "k", retry_base_seconds=0.01)
            self.assertEqual(client.health(), {"status": "ok"})
            self.assertEqual(calls, ["GET", "GET", "GET"])
            calls.clear()
            with self.assertRaises(DifferentlyError) as busy:
                client.exec("sbx_x", {"command": "true"})
            self.assertEqual((busy.exception.status, busy.exception.code), (503, "provider_unavailable"))
            self.assertEqual(calls, ["POST"])
        finally:
            server.shutdown()
            server.server_close()

    def test_installs_from_its_folder(self) -> None:
        with tempfile.TemporaryDirectory() as target:
            subprocess.run(
                [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", target, str(PACKAGE)],
                check=True,
                capture_output=True,
                env={**os.environ, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
            )
            probe = "import differently, sys; print(differently.__version__, differently.__file__.startswith(sys.argv[1]))"
            out = subprocess.run([sys.executable, "-c", probe, target], cwd=target, env={**os.environ, "PYTHONPATH": target}, check=True, capture_output=True, text=True)
            self.assertEqual(out.stdout.split(), ["0.1.0", "True"])


if __name__ == "__main__":
    unittest.main()
