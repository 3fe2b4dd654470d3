"""A client for the Differently API, on the standard library alone (urllib, json)."""

from __future__ import annotations

import base64
import json
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from typing import Any, TypeVar, cast

from .errors import DifferentlyError, DifferentlyNetworkError
from .models import (
    AuditPage,
    AuditVerification,
    Budget,
    CreateKeyRequest,
    CreateOrgRequest,
    CreatePoolRequest,
    CreateSandboxRequest,
    ExecRequest,
    ExecResult,
    FileList,
    Health,
    Key,
    KeyPage,
    NewKey,
    Org,
    OrgPage,
    Policy,
    PolicyRequest,
    Pool,
    PoolDeleted,
    PoolPage,
    Port,
    Process,
    ProcessList,
    ProcessOutput,
    Project,
    ProjectPage,
    QuotaChange,
    StartProcessRequest,
    ReconcileReport,
    Sandbox,
    SandboxPage,
    Snapshot,
    SnapshotDeleted,
    SnapshotPage,
    Templates,
    TrustReport,
    UpdatedSandbox,
    UpdatePoolRequest,
    Usage,
)

ExecEvent = dict[str, Any]
"""One line of a streamed exec: {"stream", "data"}, then one {"exitCode"} or {"error": {"code", "message"}}."""

_TRANSITIONAL = ("stopping", "starting", "pausing", "resuming")
_ENDED = ("failed", "terminated", "terminating")


def _path(template: str, **params: str) -> str:
    for name, value in params.items():
        template = template.replace("{" + name + "}", urllib.parse.quote(value, safe=""))
    return template


def _process_path(sandbox_id: str, pid: int, rest: str = "") -> str:
    return _path("/v1/sandboxes/{id}/processes/", id=sandbox_id) + str(int(pid)) + rest


class _Transport:
    """Sends requests: the key as a bearer token, JSON in and out, 503 retried with backoff when safe."""

    def __init__(self, endpoint: str, api_key: str, attempts: int, retry_base_seconds: float, timeout: float) -> None:
        self.endpoint = endpoint.rstrip("/")
        self._key = api_key
        self._attempts = max(attempts, 1)
        self._retry_base = retry_base_seconds
        self._timeout = timeout

    def open(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, Any] | None = None,
        body: Any = None,
        raw: bytes | None = None,
        headers: dict[str, str] | None = None,
        retry: bool = False,
        stream: bool = False,
    ) -> Any:
        """The open response (a file-like object) of a successful request; errors raise."""
        pairs = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in (query or {}).items() if v is not None}
        url = self.endpoint + path + ("?" + urllib.parse.urlencode(pairs) if pairs else "")
        sent_headers = {"authorization": f"Bearer {self._key}", "accept": "application/json", **(headers or {})}
        data: bytes | None = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            sent_headers["content-type"] = "application/json"
        elif raw is not None:
            data = raw
            sent_headers["content-type"] = "application/octet-stream"
        attempts = self._attempts if retry else 1
        for attempt in range(1, attempts + 1):
            request = urllib.request.Request(url, data=data, method=method, headers=sent_headers)
            try:
                return urllib.request.urlopen(request, timeout=None if stream else self._timeout)
            except urllib.error.HTTPError as error:
                text = error.read().decode("utf-8", errors="replace")
                error.close()
                if error.code == 503 and attempt < attempts:
                    time.sleep(self._retry_base * 2 ** (attempt - 1))
                    continue
                raise _api_error(error.code, text) from None
            except (urllib.error.URLError, OSError) as error:
                raise DifferentlyNetworkError(self.endpoint, error) from error
        raise AssertionError("unreachable")

    def json(self, method: str, path: str, **options: Any) -> Any:
        with self.open(method, path, **options) as response:
            text = response.read().decode("utf-8")
        return json.loads(text) if text else None


def _api_error(status: int, text: str) -> DifferentlyError:
    try:
        envelope = json.loads(text)
        error = envelope["error"]
        return DifferentlyError(status, str(error["code"]), str(error["message"]), dict(error.get("details") or {}))
    except (ValueError, KeyError, TypeError):
        return DifferentlyError(status, "http_error", f"HTTP {status}: {text[:200]}")


class DifferentlyClient:
    """The Differently API. Tenant routes here (an org key); operator routes under `admin` (the admin key).

    Creates carry an Idempotency-Key (one is made for you), so a retried create makes one sandbox; requests
    safe to repeat are retried on 503 with backoff.
    """

    def __init__(
        self,
        endpoint: str,
        api_key: str,
        *,
        attempts: int = 4,
        retry_base_seconds: float = 0.25,
        timeout_seconds: float = 60.0,
    ) -> None:
        self._t = _Transport(endpoint, api_key, attempts, retry_base_seconds, timeout_seconds)
        self.admin = Admin(self._t)

    # -- sandboxes ---------------------------------------------------------------------------------

    def health(self) -> Health:
        return cast(Health, self._t.json("GET", "/v1/health", retry=True))

    def create_sandbox(self, request: CreateSandboxRequest | None = None, *, idempotency_key: str | None = None) -> Sandbox:
        """Creates a sandbox (queued); wait_until_running waits for it."""
        headers = {"idempotency-key": idempotency_key or str(uuid.uuid4())}
        return cast(Sandbox, self._t.json("POST", "/v1/sandboxes", body=request or {}, headers=headers, retry=True))

    def list_sandboxes(
        self,
        *,
        status: str | None = None,
        project_id: str | None = None,
        label: str | None = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> SandboxPage:
        query = {"status": status, "projectId": project_id, "label": label, "cursor": cursor, "limit": limit}
        return cast(SandboxPage, self._t.json("GET", "/v1/sandboxes", query=query, retry=True))

    def get_sandbox(self, sandbox_id: str) -> Sandbox:
        return cast(Sandbox, self._t.json("GET", _path("/v1/sandboxes/{id}", id=sandbox_id), retry=True))

    def update_sandbox(
        self, sandbox_id: str, *, ttl_seconds: int | None = None, labels: dict[str, str] | None = None
    ) -> UpdatedSandbox:
        body: dict[str, Any] = {}
        if ttl_seconds is not None:
            body["ttlSeconds"] = ttl_seconds
        if labels is not None:
            body["labels"] = labels
        return cast(UpdatedSandbox, self._t.json("PATCH", _path("/v1/sandboxes/{id}", id=sandbox_id), body=body))

    def delete_sandbox(self, sandbox_id: str) -> Sandbox:
        return cast(Sandbox, self._t.json("DELETE", _path("/v1/sandboxes/{id}", id=sandbox_id), retry=True))

    def wait_until_running(
        self,
        sandbox_id: str,
        *,
        timeout_seconds: float = 300.0,
        interval_seconds: float = 0.5,
        on_progress: Callable[[Sandbox], None] | None = None,
    ) -> Sandbox:
        """Waits through queued and provisioning; raises if the sandbox fails or ends, or time runs out."""

        def verdict(sandbox: Sandbox) -> bool:
            if sandbox["status"] in _ENDED:
                raise DifferentlyError(
                    409,
                    "invalid_state",
                    f"sandbox {sandbox_id} is {sandbox['status']}: {sandbox['statusMessage'] or ''}",
                    {"status": sandbox["status"]},
                )
            return sandbox["status"] == "running"

        def late(sandbox: Sandbox) -> DifferentlyError:
            return DifferentlyError(
                408,
                "timeout",
                f"sandbox {sandbox_id} was not running in time (last: {sandbox['status']})",
                {"status": sandbox["status"], "waitingFor": sandbox["waitingFor"]},
            )

        return _poll(lambda: self.get_sandbox(sandbox_id), verdict, late, timeout_seconds, interval_seconds, on_progress)

    def wait_until_settled(
        self,
        sandbox_id: str,
        *,
        timeout_seconds: float = 900.0,
        interval_seconds: float = 0.5,
        on_progress: Callable[[Sandbox], None] | None = None,
    ) -> Sandbox:
        """Waits while a stop, start, pause or resume is under way; raises the operation's own error if it failed."""

        def verdict(sandbox: Sandbox) -> bool:
            if sandbox["status"] in _TRANSITIONAL:
                return False
            operation = sandbox["operation"]
            if operation is not None and operation.get("state") == "failed" and operation.get("error"):
                error = operation["error"]
                raise DifferentlyError(503, error["code"], error["message"], {"status": sandbox["status"]})
            return True

        def late(sandbox: Sandbox) -> DifferentlyError:
            return DifferentlyError(408, "timeout", f"sandbox {sandbox_id} is still {sandbox['status']}")

        return _poll(lambda: self.get_sandbox(sandbox_id), verdict, late, timeout_seconds, interval_seconds, on_progress)

    # -- commands and files ------------------------------------------------------------------------

    def exec(self, sandbox_id: str, request: ExecRequest) -> ExecResult:
        """Runs a command and waits for it (bounded output; `truncated` says so)."""
        return cast(ExecResult, self._t.json("POST", _path("/v1/sandboxes/{id}/exec", id=sandbox_id), body=request))

    def exec_stream(self, sandbox_id: str, request: ExecRequest) -> Iterator[ExecEvent]:
        """Runs a command, yielding its output events as produced, then one {"exitCode"} or {"error"}."""
        path = _path("/v1/sandboxes/{id}/exec", id=sandbox_id)
        response = self._t.open("POST", path, query={"stream": "1"}, body=request, stream=True)
        final = False
        with response:
            for raw in response:
                text = raw.decode("utf-8").strip()
                if not text:
                    continue  # keep-alive
                event = json.loads(text)
                if not isinstance(event, dict):
                    raise DifferentlyError(502, "http_error", f"not an exec event: {text[:200]}")
                final = final or "exitCode" in event or "error" in event
                yield event
        if not final:
            yield {"error": {"code": "provider_unavailable", "message": "the stream ended without a final event"}}

    # -- interactive processes -----------------------------------------------------------------------

    def start_process(self, sandbox_id: str, request: StartProcessRequest) -> Process:
        """Starts an interactive process (stdin written later; `pty` for a terminal); attach to read it."""
        return cast(Process, self._t.json("POST", _path("/v1/sandboxes/{id}/processes", id=sandbox_id), body=request))

    def list_processes(self, sandbox_id: str) -> ProcessList:
        return cast(ProcessList, self._t.json("GET", _path("/v1/sandboxes/{id}/processes", id=sandbox_id), retry=True))

    def get_process(self, sandbox_id: str, pid: int) -> Process:
        return cast(Process, self._t.json("GET", _process_path(sandbox_id, pid), retry=True))

    def attach_process(self, sandbox_id: str, pid: int) -> Iterator[dict[str, Any]]:
        """Yields {"process"}, its unread output and what it prints, then {"exitCode"}, {"detached"} or {"error"}."""
        response = self._t.open("POST", _process_path(sandbox_id, pid, "/attach"), stream=True)
        final = False
        with response:
            for raw in response:
                text = raw.decode("utf-8").strip()
                if not text:
                    continue  # keep-alive
                event = json.loads(text)
                if not isinstance(event, dict):
                    raise DifferentlyError(502, "http_error", f"not an attach line: {text[:200]}")
                final = final or "exitCode" in event or "error" in event or "detached" in event
                yield event
        if not final:
            yield {"error": {"code": "provider_unavailable", "message": "the stream ended without a final event"}}

    def write_stdin(self, sandbox_id: str, pid: int, data: str | bytes, *, close: bool = False) -> None:
        """Writes to a process's stdin (64 KiB at most a call); `close` ends its input after."""
        body: dict[str, Any] = {"data": data} if isinstance(data, str) else {"dataBase64": base64.b64encode(data).decode("ascii")}
        if close:
            body["close"] = True
        self._t.open("POST", _process_path(sandbox_id, pid, "/stdin"), body=body).close()

    def close_stdin(self, sandbox_id: str, pid: int) -> None:
        self._t.open("POST", _process_path(sandbox_id, pid, "/stdin"), body={"close": True}).close()

    def read_process_output(self, sandbox_id: str, pid: int, *, max_bytes: int | None = None) -> ProcessOutput:
        """What a process printed since the last attach or read, without waiting."""
        return cast(ProcessOutput, self._t.json("GET", _process_path(sandbox_id, pid, "/output"), query={"maxBytes": max_bytes}))

    def resize_process(self, sandbox_id: str, pid: int, cols: int, rows: int) -> None:
        self._t.open("POST", _process_path(sandbox_id, pid, "/resize"), body={"cols": cols, "rows": rows}, retry=True).close()

    def signal_process(self, sandbox_id: str, pid: int, signal: str) -> None:
        self._t.open("POST", _process_path(sandbox_id, pid, "/signal"), body={"signal": signal}).close()

    def list_files(self, sandbox_id: str, path: str) -> FileList:
        return cast(FileList, self._t.json("GET", _path("/v1/sandboxes/{id}/files", id=sandbox_id), query={"path": path}, retry=True))

    def read_file(self, sandbox_id: str, path: str) -> bytes:
        with self._t.open("GET", _path("/v1/sandboxes/{id}/files/content", id=sandbox_id), query={"path": path}, retry=True) as response:
            return cast(bytes, response.read())

    def write_file(self, sandbox_id: str, path: str, content: bytes | str) -> None:
        data = content.encode("utf-8") if isinstance(content, str) else content
        with self._t.open("PUT", _path("/v1/sandboxes/{id}/files/content", id=sandbox_id), query={"path": path}, raw=data, retry=True):
            pass

    # -- lifecycle, snapshots, ports ---------------------------------------------------------------

    def _lifecycle(self, sandbox_id: str, action: str, wait: bool, timeout_seconds: float) -> Sandbox:
        sandbox = cast(Sandbox, self._t.json("POST", _path("/v1/sandboxes/{id}/" + action, id=sandbox_id), retry=True))
        if wait and sandbox["status"] in _TRANSITIONAL:
            return self.wait_until_settled(sandbox_id, timeout_seconds=timeout_seconds)
        return sandbox

    def stop(self, sandbox_id: str, *, wait: bool = True, timeout_seconds: float = 900.0) -> Sandbox:
        return self._lifecycle(sandbox_id, "stop", wait, timeout_seconds)

    def start(self, sandbox_id: str, *, wait: bool = True, timeout_seconds: float = 900.0) -> Sandbox:
        return self._lifecycle(sandbox_id, "start", wait, timeout_seconds)

    def pause(self, sandbox_id: str, *, wait: bool = True, timeout_seconds: float = 900.0) -> Sandbox:
        return self._lifecycle(sandbox_id, "pause", wait, timeout_seconds)

    def resume(self, sandbox_id: str, *, wait: bool = True, timeout_seconds: float = 900.0) -> Sandbox:
        return self._lifecycle(sandbox_id, "resume", wait, timeout_seconds)

    def create_snapshot(self, sandbox_id: str, *, kind: str = "disk") -> Snapshot:
        path = _path("/v1/sandboxes/{id}/snapshots", id=sandbox_id)
        return cast(Snapshot, self._t.json("POST", path, body={"kind": kind}))

    def list_snapshots(self, *, cursor: str | None = None, limit: int | None = None) -> SnapshotPage:
        return cast(SnapshotPage, self._t.json("GET", "/v1/snapshots", query={"cursor": cursor, "limit": limit}, retry=True))

    def get_snapshot(self, snapshot_id: str) -> Snapshot:
        return cast(Snapshot, self._t.json("GET", _path("/v1/snapshots/{id}", id=snapshot_id), retry=True))

    def delete_snapshot(self, snapshot_id: str) -> SnapshotDeleted:
        return cast(SnapshotDeleted, self._t.json("DELETE", _path("/v1/snapshots/{id}", id=snapshot_id), retry=True))

    def wait_until_snapshot_ready(self, snapshot_id: str, *, timeout_seconds: float = 900.0, interval_seconds: float = 0.5) -> Snapshot:
        """Waits until the snapshot is ready; raises if it failed (with its reason) or time runs out."""

        def verdict(snapshot: Snapshot) -> bool:
            if snapshot["status"] == "failed":
                raise DifferentlyError(503, "provider_unavailable", snapshot["statusMessage"] or "snapshot failed", {"status": "failed"})
            return snapshot["status"] == "ready"

        def late(snapshot: Snapshot) -> DifferentlyError:
            return DifferentlyError(408, "timeout", f"snapshot {snapshot_id} is still {snapshot['status']}")

        return _poll(lambda: self.get_snapshot(snapshot_id), verdict, late, timeout_seconds, interval_seconds, None)

    def fork(self, sandbox_id: str) -> Sandbox:
        return cast(Sandbox, self._t.json("POST", _path("/v1/sandboxes/{id}/fork", id=sandbox_id)))

    def expose_port(self, sandbox_id: str, port: int) -> Port:
        return cast(Port, self._t.json("POST", _path("/v1/sandboxes/{id}/ports", id=sandbox_id), body={"port": port}))

    # -- the org -----------------------------------------------------------------------------------

    def usage(self) -> Usage:
        return cast(Usage, self._t.json("GET", "/v1/usage", retry=True))

    def templates(self) -> Templates:
        return cast(Templates, self._t.json("GET", "/v1/templates", retry=True))

    def trust(self) -> TrustReport:
        return cast(TrustReport, self._t.json("GET", "/v1/trust", retry=True))

    def audit(self, *, cursor: str | None = None, limit: int | None = None) -> AuditPage:
        return cast(AuditPage, self._t.json("GET", "/v1/audit", query={"cursor": cursor, "limit": limit}, retry=True))

    def openapi(self) -> dict[str, Any]:
        return cast("dict[str, Any]", self._t.json("GET", "/v1/openapi.json", retry=True))

    def mcp(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        """Sends one JSON-RPC message to the MCP endpoint; its answers (an SSE stream or JSON), in order."""
        headers = {"accept": "application/json, text/event-stream"}
        with self._t.open("POST", "/v1/mcp", body=message, headers=headers, stream=True) as response:
            kind = response.headers.get("content-type", "")
            text = response.read().decode("utf-8")
        if not text:
            return []
        if kind.startswith("text/event-stream"):
            return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]
        answer = json.loads(text)
        return answer if isinstance(answer, list) else [answer]


class Admin:
    """Operator routes: they need the admin key (or an admin-role key)."""

    def __init__(self, transport: _Transport) -> None:
        self._t = transport

    def create_org(self, request: CreateOrgRequest) -> Org:
        return cast(Org, self._t.json("POST", "/v1/admin/orgs", body=request))

    def list_orgs(self, *, cursor: str | None = None, limit: int | None = None) -> OrgPage:
        return cast(OrgPage, self._t.json("GET", "/v1/admin/orgs", query={"cursor": cursor, "limit": limit}, retry=True))

    def get_org(self, org_id: str) -> Org:
        return cast(Org, self._t.json("GET", _path("/v1/admin/orgs/{id}", id=org_id), retry=True))

    def set_quota(self, org_id: str, quota: QuotaChange) -> Org:
        return cast(Org, self._t.json("PUT", _path("/v1/admin/orgs/{id}/quota", id=org_id), body=quota, retry=True))

    def set_budget(self, org_id: str, monthly: float | None) -> Budget:
        """The org's monthly budget in the pools' currency; None removes it."""
        path = _path("/v1/admin/orgs/{id}/budget", id=org_id)
        return cast(Budget, self._t.json("PUT", path, body={"monthly": monthly}, retry=True))

    def set_idle_policy(self, org_id: str, policy: dict[str, Any] | None) -> Org:
        """The org's default idle policy ({"afterSeconds": N, "action": "pause"|"stop"}); None removes it."""
        path = _path("/v1/admin/orgs/{id}/idle-policy", id=org_id)
        return cast(Org, self._t.json("PUT", path, body={"policy": policy}, retry=True))

    def set_network_policy(self, org_id: str, policy: dict[str, Any] | None) -> Org:
        """The org's default egress policy ({"egress": "deny"|"allow"|"allowlist", "allow": [...]}); None removes it."""
        path = _path("/v1/admin/orgs/{id}/network-policy", id=org_id)
        return cast(Org, self._t.json("PUT", path, body={"policy": policy}, retry=True))

    def create_webhook(self, org_id: str, url: str, events: list[str] | None = None) -> dict[str, Any]:
        """Registers an endpoint for the org's lifecycle events; the answer's `secret` is shown only now."""
        body: dict[str, Any] = {"url": url, **({"events": events} if events is not None else {})}
        return cast("dict[str, Any]", self._t.json("POST", _path("/v1/admin/orgs/{id}/webhooks", id=org_id), body=body))

    def list_webhooks(self, org_id: str) -> dict[str, Any]:
        path = _path("/v1/admin/orgs/{id}/webhooks", id=org_id)
        return cast("dict[str, Any]", self._t.json("GET", path, retry=True))

    def delete_webhook(self, org_id: str, webhook_id: str) -> dict[str, Any]:
        path = _path("/v1/admin/orgs/{id}/webhooks/{webhookId}", id=org_id, webhookId=webhook_id)
        return cast("dict[str, Any]", self._t.json("DELETE", path, retry=True))

    def list_webhook_deliveries(
        self, org_id: str, webhook_id: str, *, cursor: str | None = None, limit: int | None = None
    ) -> dict[str, Any]:
        """An endpoint's deliveries, newest first (kept 7 days): attempts, the last answer or error, delivered."""
        path = _path("/v1/admin/orgs/{id}/webhooks/{webhookId}/deliveries", id=org_id, webhookId=webhook_id)
        query = {"cursor": cursor, "limit": limit}
        return cast("dict[str, Any]", self._t.json("GET", path, query=query, retry=True))

    def rotate_webhook_secret(self, org_id: str, webhook_id: str) -> dict[str, Any]:
        """A new secret; the previous one keeps signing beside it for 24 hours."""
        path = _path("/v1/admin/orgs/{id}/webhooks/{webhookId}/rotate-secret", id=org_id, webhookId=webhook_id)
        return cast("dict[str, Any]", self._t.json("POST", path))

    def get_budget(self, org_id: str) -> Budget:
        return cast(Budget, self._t.json("GET", _path("/v1/admin/orgs/{id}/budget", id=org_id), retry=True))

    def set_project_budget(self, org_id: str, project_id: str, monthly: float | None) -> Budget:
        """A project's monthly budget, counted besides its org's; None removes it."""
        path = _path("/v1/admin/orgs/{id}/projects/{projectId}/budget", id=org_id, projectId=project_id)
        return cast(Budget, self._t.json("PUT", path, body={"monthly": monthly}, retry=True))

    def get_project_budget(self, org_id: str, project_id: str) -> Budget:
        path = _path("/v1/admin/orgs/{id}/projects/{projectId}/budget", id=org_id, projectId=project_id)
        return cast(Budget, self._t.json("GET", path, retry=True))

    def create_key(self, org_id: str, request: CreateKeyRequest) -> NewKey:
        return cast(NewKey, self._t.json("POST", _path("/v1/admin/orgs/{id}/keys", id=org_id), body=request))

    def list_keys(self, org_id: str, *, cursor: str | None = None, limit: int | None = None) -> KeyPage:
        path = _path("/v1/admin/orgs/{id}/keys", id=org_id)
        return cast(KeyPage, self._t.json("GET", path, query={"cursor": cursor, "limit": limit}, retry=True))

    def revoke_key(self, key_id: str) -> Key:
        return cast(Key, self._t.json("DELETE", _path("/v1/admin/keys/{id}", id=key_id), retry=True))

    def rotate_key(self, key_id: str) -> NewKey:
        return cast(NewKey, self._t.json("POST", _path("/v1/admin/keys/{id}/rotate", id=key_id)))

    def create_project(self, org_id: str, name: str) -> Project:
        return cast(Project, self._t.json("POST", _path("/v1/admin/orgs/{id}/projects", id=org_id), body={"name": name}))

    def list_projects(self, org_id: str, *, cursor: str | None = None, limit: int | None = None) -> ProjectPage:
        path = _path("/v1/admin/orgs/{id}/projects", id=org_id)
        return cast(ProjectPage, self._t.json("GET", path, query={"cursor": cursor, "limit": limit}, retry=True))

    def list_pools(self) -> PoolPage:
        return cast(PoolPage, self._t.json("GET", "/v1/admin/pools", retry=True))

    def get_pool(self, name: str) -> Pool:
        return cast(Pool, self._t.json("GET", _path("/v1/admin/pools/{name}", name=name), retry=True))

    def create_pool(self, request: CreatePoolRequest) -> Pool:
        return cast(Pool, self._t.json("POST", "/v1/admin/pools", body=request))

    def update_pool(self, name: str, request: UpdatePoolRequest) -> Pool:
        return cast(Pool, self._t.json("PATCH", _path("/v1/admin/pools/{name}", name=name), body=request, retry=True))

    def delete_pool(self, name: str) -> PoolDeleted:
        return cast(PoolDeleted, self._t.json("DELETE", _path("/v1/admin/pools/{name}", name=name), retry=True))

    def get_policy(self) -> Policy:
        return cast(Policy, self._t.json("GET", "/v1/admin/policy", retry=True))

    def set_policy(self, request: PolicyRequest) -> Policy:
        return cast(Policy, self._t.json("PUT", "/v1/admin/policy", body=request, retry=True))

    def verify_audit(self, org_id: str | None = None) -> AuditVerification:
        return cast(AuditVerification, self._t.json("GET", "/v1/admin/audit/verify", query={"orgId": org_id}, retry=True))

    def reconcile(self) -> ReconcileReport:
        return cast(ReconcileReport, self._t.json("POST", "/v1/admin/reconcile"))


T = TypeVar("T", Sandbox, Snapshot)


def _poll(
    read: Callable[[], T],
    done: Callable[[T], bool],
    late: Callable[[T], DifferentlyError],
    timeout_seconds: float,
    interval_seconds: float,
    on_progress: Callable[[T], None] | None,
) -> T:
    """Reads until `done` says so (or raises), telling on_progress of each change; `late` past the time."""
    deadline = time.monotonic() + timeout_seconds
    last: tuple[str, str | None] | None = None
    while True:
        current = read()
        key = (current["status"], current["statusMessage"])
        if on_progress is not None and key != last:
            on_progress(current)
        last = key
        if done(current):
            return current
        if time.monotonic() > deadline:
            raise late(current)
        time.sleep(interval_seconds)
