"""The API's bodies as TypedDicts. Generated from docs/openapi.json by generate_models.py: do not edit."""

from __future__ import annotations

from typing import Any, Literal, TypedDict


class Health(TypedDict):
    """What liveness of the API answers."""

    status: Literal["ok"]


class Sandbox(TypedDict):
    """What get a sandbox answers."""

    id: str
    orgId: str
    projectId: str | None
    status: Literal["queued", "provisioning", "running", "stopped", "paused", "stopping", "starting", "pausing", "resuming", "terminating", "terminated", "failed"]
    statusMessage: str | None
    waitingFor: Literal["pool", "quota", "capacity", "snapshot"] | None
    pool: str | None
    template: str | None
    resources: dict[str, Any]
    labels: dict[str, Any]
    capabilities: list[str]
    envKeys: list[str]
    ttlSeconds: int
    attempts: int
    placement: dict[str, Any]
    createdAt: str
    updatedAt: str
    expiresAt: str | None
    operation: dict[str, Any] | None
    idle: dict[str, Any] | None
    network: dict[str, Any] | None
    warm: dict[str, Any] | None
    cost: dict[str, Any] | None


class _UpdatedSandboxRequired(TypedDict):
    id: str
    orgId: str
    projectId: str | None
    status: Literal["queued", "provisioning", "running", "stopped", "paused", "stopping", "starting", "pausing", "resuming", "terminating", "terminated", "failed"]
    statusMessage: str | None
    waitingFor: Literal["pool", "quota", "capacity", "snapshot"] | None
    pool: str | None
    template: str | None
    resources: dict[str, Any]
    labels: dict[str, Any]
    capabilities: list[str]
    envKeys: list[str]
    ttlSeconds: int
    attempts: int
    placement: dict[str, Any]
    createdAt: str
    updatedAt: str
    expiresAt: str | None
    operation: dict[str, Any] | None
    idle: dict[str, Any] | None
    network: dict[str, Any] | None
    warm: dict[str, Any] | None
    cost: dict[str, Any] | None


class UpdatedSandbox(_UpdatedSandboxRequired, total=False):
    """What change a sandbox's TTL (expiresAt reset from now) or labels answers."""

    providerTtl: dict[str, Any]


class SandboxPage(TypedDict):
    """What list the organization's sandboxes answers."""

    items: list[dict[str, Any]]
    nextCursor: str | None


class ExecResult(TypedDict):
    """What run a command in a running sandbox: wait for it, or with ?stream=1 (or true) receive NDJSON output lines as produced, ending in one {"exitCode"} or {"error": {"code", "message"}} answers."""

    exitCode: int
    stdout: str
    stderr: str
    durationMs: int
    truncated: bool
    timedOut: bool


class FileList(TypedDict):
    """What list a directory of a running sandbox answers."""

    items: list[dict[str, Any]]


class Port(TypedDict):
    """What expose a guest port and return its URL answers."""

    url: str


class Process(TypedDict):
    """What one interactive process answers."""

    pid: int
    argv: list[str]
    cwd: str
    pty: dict[str, Any] | None
    tag: str | None
    startedAt: str
    exitCode: int | None
    stdinOpen: bool
    attached: int


class ProcessList(TypedDict):
    """What list the interactive processes of a sandbox: running ones, and ended ones for five minutes answers."""

    items: list[dict[str, Any]]


class ProcessOutput(TypedDict):
    """What what a process printed since the last attach or read, without waiting (`exitCode` once it ended and everything was read) answers."""

    stdout: str
    stderr: str
    exitCode: int | None


class Snapshot(TypedDict):
    """What get a snapshot answers."""

    id: str
    orgId: str
    projectId: str | None
    sandboxId: str
    pool: str
    kind: Literal["disk", "memory"]
    sizeBytes: float
    status: Literal["creating", "ready", "failed"]
    statusMessage: str | None
    createdAt: str
    updatedAt: str


class SnapshotPage(TypedDict):
    """What list the organization's snapshots answers."""

    items: list[dict[str, Any]]
    nextCursor: str | None


class _SnapshotDeletedRequired(TypedDict):
    id: str
    deleted: Literal[true]
    backendDeleted: bool


class SnapshotDeleted(_SnapshotDeletedRequired, total=False):
    """What delete a snapshot (its record always; the backend snapshot when reachable, else named as left behind) answers."""

    note: str


class _UsageRequired(TypedDict):
    orgId: str
    quota: dict[str, Any]
    usage: dict[str, Any]
    available: dict[str, Any]
    budget: dict[str, Any]


class Usage(_UsageRequired, total=False):
    """What the organization's quota and budget, what it holds and spent now, and what is left answers."""

    projectBudget: dict[str, Any]


class Templates(TypedDict):
    """What templates this installation offers answers."""

    items: list[dict[str, Any]]


class TrustReport(TypedDict):
    """What the trust report: each pool's operator, declared isolation, features and limitations; the placement policy answers."""

    policy: dict[str, Any]
    pools: list[dict[str, Any]]
    externalPoolsInUse: list[str]
    network: dict[str, Any]
    classifications: dict[str, Any]
    generatedAt: str


class AuditPage(TypedDict):
    """What the organization's audit events, oldest first (org-wide keys only) answers."""

    items: list[dict[str, Any]]
    nextCursor: str | None


class Org(TypedDict):
    """What get an organization answers."""

    id: str
    name: str
    quota: dict[str, Any]
    budget: float | None
    idlePolicy: dict[str, Any] | None
    networkPolicy: dict[str, Any] | None
    createdAt: str


class OrgPage(TypedDict):
    """What list organizations answers."""

    items: list[dict[str, Any]]
    nextCursor: str | None


class Key(TypedDict):
    """What revoke an API key; it is refused from its next call on answers."""

    id: str
    orgId: str
    name: str
    role: Literal["admin", "member"]
    projectId: str | None
    createdAt: str
    revokedAt: str | None


class NewKey(TypedDict):
    """What create an API key for an organization; the secret is returned only here answers."""

    id: str
    orgId: str
    name: str
    role: Literal["admin", "member"]
    projectId: str | None
    createdAt: str
    revokedAt: str | None
    key: str
    e2bApiKey: str


class KeyPage(TypedDict):
    """What list an organization's API keys (never their secrets) answers."""

    items: list[dict[str, Any]]
    nextCursor: str | None


class Project(TypedDict):
    """What create a project in an organization; keys and sandboxes can be restricted to it answers."""

    id: str
    orgId: str
    name: str
    budget: float | None
    createdAt: str


class ProjectPage(TypedDict):
    """What list an organization's projects answers."""

    items: list[dict[str, Any]]
    nextCursor: str | None


class _PoolRequired(TypedDict):
    name: str
    adapter: str
    trust: Literal["private", "external"]
    maxConcurrency: int
    prices: dict[str, Any]
    config: dict[str, Any]
    features: list[str]
    source: Literal["config", "api"]
    health: dict[str, Any]
    capabilities: dict[str, Any] | None
    capacity: dict[str, Any] | None
    active: int
    refreshedAt: str | None
    warm: list[dict[str, Any]]


class Pool(_PoolRequired, total=False):
    """What a pool with its health, capabilities, capacity and active count as pool-refresh last saw them answers."""

    region: str
    costModel: dict[str, Any]
    credentials: dict[str, Any]


class PoolPage(TypedDict):
    """What list pools (config file and admin API) with health, capabilities, capacity and active count answers."""

    items: list[dict[str, Any]]
    nextCursor: str | None


class PoolDeleted(TypedDict):
    """What remove a pool registered through the API; refused (409) while it has live sandboxes answers."""

    name: str
    deleted: Literal[true]


class Policy(TypedDict):
    """What the global placement policy in force, and whether it comes from the config file or the API answers."""

    allowExternal: bool
    externalPools: list[str]
    source: Literal["config", "api"]


class _AuditVerificationRequired(TypedDict):
    ok: bool
    checked: int


class AuditVerification(_AuditVerificationRequired, total=False):
    """What recompute audit chains (one org, or every org) and report the first broken link answers."""

    orgId: str
    firstBroken: dict[str, Any]


class ReconcileReport(TypedDict):
    """What run a reconcile pass now and return what it did per pool answers."""

    ran: bool
    pools: list[dict[str, Any]]
    durationMs: int


class Budget(TypedDict):
    """What this month's budget of an organization: spent, reserved and left answers."""

    month: str
    monthly: float | None
    spent: float
    reserved: float
    left: float | None


class CreateSandboxRequest(TypedDict, total=False):
    """The body of: Create a sandbox; it is queued and placed asynchronously, or answered running from a warm instance that matches."""

    template: str
    resources: dict[str, Any]
    env: dict[str, Any]
    labels: dict[str, Any]
    capabilities: list[str]
    profile: str
    classification: str
    placement: dict[str, Any]
    ttlSeconds: int
    fromSnapshot: str
    projectId: str
    queueTimeoutSeconds: int
    idle: dict[str, Any] | None
    network: dict[str, Any]


class UpdateSandboxRequest(TypedDict, total=False):
    """The body of: Change a sandbox's TTL (expiresAt reset from now) or labels."""

    ttlSeconds: int
    labels: dict[str, Any]


class ExecRequest(TypedDict, total=False):
    """The body of: Run a command in a running sandbox: wait for it, or with ?stream=1 (or true) receive NDJSON output lines as produced, ending in one {"exitCode"} or {"error": {"code", "message"}}."""

    command: str
    args: list[str]
    env: dict[str, Any]
    cwd: str
    stdin: str
    timeoutSeconds: int
    user: Literal["root"]


class StartProcessRequest(TypedDict, total=False):
    """The body of: Start an interactive process (stdin written later; with `pty`, in a terminal): it runs until it exits, its timeout, or the sandbox stops; attach to read its output."""

    command: str
    args: list[str]
    env: dict[str, Any]
    cwd: str
    pty: dict[str, Any]
    timeoutSeconds: int
    tag: str
    stdin: bool
    user: Literal["root"]


class _CreateOrgRequestRequired(TypedDict):
    name: str


class CreateOrgRequest(_CreateOrgRequestRequired, total=False):
    """The body of: Create an organization."""

    quota: dict[str, Any]


class _CreateKeyRequestRequired(TypedDict):
    name: str


class CreateKeyRequest(_CreateKeyRequestRequired, total=False):
    """The body of: Create an API key for an organization; the secret is returned only here."""

    projectId: str
    role: Literal["admin", "member"]


class QuotaChange(TypedDict, total=False):
    """The body of: Change some of an organization's limits; below current usage, new work waits and nothing stops."""

    maxCPU: float
    maxMemoryMiB: int
    maxDiskGiB: int
    maxSandboxes: int
    maxSnapshots: int
    maxQueued: int


class _CreatePoolRequestRequired(TypedDict):
    name: str
    adapter: str


class CreatePoolRequest(_CreatePoolRequestRequired, total=False):
    """The body of: Register a pool at runtime; validated by building it (adapter kind, its config, the credential reference)."""

    trust: Literal["private", "external"]
    region: str
    maxConcurrency: int
    costModel: dict[str, Any]
    prices: dict[str, Any]
    config: dict[str, Any]
    credentials: dict[str, Any]
    features: list[str]
    warm: list[dict[str, Any]]


class UpdatePoolRequest(TypedDict, total=False):
    """The body of: Change a pool registered through the API (config-file pools change by deploy: 409)."""

    trust: Literal["private", "external"]
    region: str | None
    maxConcurrency: int
    costModel: dict[str, Any] | None
    prices: dict[str, Any] | None
    config: dict[str, Any]
    credentials: dict[str, Any] | None
    features: list[str] | None
    warm: list[dict[str, Any]] | None


class PolicyRequest(TypedDict, total=False):
    """The body of: Replace the global placement policy (external placement allowed, which external pools)."""

    allowExternal: bool
    externalPools: list[str]
