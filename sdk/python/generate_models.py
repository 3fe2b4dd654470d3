"""Writes differently/models.py: TypedDicts for the API's bodies, generated from docs/openapi.json.

Run from the repository: python3 sdk/python/generate_models.py. A test checks the file is current.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SPEC = HERE.parent.parent / "docs" / "openapi.json"
OUT = HERE / "differently" / "models.py"

# Each model: the operation whose answer (or request body) it types.
RESPONSES = {
    "Health": ("getHealth",),
    "Sandbox": ("getSandboxesById",),
    "UpdatedSandbox": ("patchSandboxesById",),
    "SandboxPage": ("getSandboxes",),
    "ExecResult": ("postSandboxesByIdExec",),
    "FileList": ("getSandboxesByIdFiles",),
    "Port": ("postSandboxesByIdPorts",),
    "Process": ("getSandboxesByIdProcessesByPid",),
    "ProcessList": ("getSandboxesByIdProcesses",),
    "ProcessOutput": ("getSandboxesByIdProcessesByPidOutput",),
    "Snapshot": ("getSnapshotsById",),
    "SnapshotPage": ("getSnapshots",),
    "SnapshotDeleted": ("deleteSnapshotsById",),
    "Usage": ("getUsage",),
    "Templates": ("getTemplates",),
    "TrustReport": ("getTrust",),
    "AuditPage": ("getAudit",),
    "Org": ("getAdminOrgsById",),
    "OrgPage": ("getAdminOrgs",),
    "Key": ("deleteAdminKeysById",),
    "NewKey": ("postAdminOrgsByIdKeys",),
    "KeyPage": ("getAdminOrgsByIdKeys",),
    "Project": ("postAdminOrgsByIdProjects",),
    "ProjectPage": ("getAdminOrgsByIdProjects",),
    "Pool": ("getAdminPoolsByName",),
    "PoolPage": ("getAdminPools",),
    "PoolDeleted": ("deleteAdminPoolsByName",),
    "Policy": ("getAdminPolicy",),
    "AuditVerification": ("getAdminAuditVerify",),
    "ReconcileReport": ("postAdminReconcile",),
    "Budget": ("getAdminOrgsByIdBudget",),
}
REQUESTS = {
    "CreateSandboxRequest": "postSandboxes",
    "UpdateSandboxRequest": "patchSandboxesById",
    "ExecRequest": "postSandboxesByIdExec",
    "StartProcessRequest": "postSandboxesByIdProcesses",
    "CreateOrgRequest": "postAdminOrgs",
    "CreateKeyRequest": "postAdminOrgsByIdKeys",
    "QuotaChange": "putAdminOrgsByIdQuota",
    "CreatePoolRequest": "postAdminPools",
    "UpdatePoolRequest": "patchAdminPoolsByName",
    "PolicyRequest": "putAdminPolicy",
}


def operations(spec: dict) -> dict[str, dict]:
    return {op["operationId"]: op for item in spec["paths"].values() for op in item.values()}


def response_schema(op: dict) -> dict:
    for status in sorted(op["responses"]):
        if status.startswith("2"):
            content = op["responses"][status].get("content", {})
            if "application/json" in content:
                return content["application/json"]["schema"]
    raise SystemExit(f"{op['operationId']} has no JSON answer")


def python_type(schema: dict) -> str:
    if "anyOf" in schema:
        parts = [python_type(s) for s in schema["anyOf"]]
        return " | ".join(dict.fromkeys(parts))
    if "const" in schema:
        return f"Literal[{json.dumps(schema['const'])}]"
    if "enum" in schema:
        return "Literal[" + ", ".join(json.dumps(v) for v in schema["enum"]) + "]"
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(python_type({**schema, "type": k}) for k in kind)
    if kind == "string":
        return "str"
    if kind == "integer":
        return "int"
    if kind == "number":
        return "float"
    if kind == "boolean":
        return "bool"
    if kind == "null":
        return "None"
    if kind == "array":
        return f"list[{python_type(schema.get('items', {}))}]"
    if kind == "object":
        return "dict[str, Any]"
    return "Any"


def typed_dict(name: str, schema: dict, doc: str) -> str:
    properties = schema.get("properties", {})
    required = [p for p in properties if p in schema.get("required", [])]
    optional = [p for p in properties if p not in required]
    lines = []
    base = "TypedDict"
    if optional and required:
        lines.append(f"class _{name}Required(TypedDict):")
        lines += [f"    {p}: {python_type(properties[p])}" for p in required]
        lines += ["", ""]
        base = f"_{name}Required"
    total = ", total=False" if optional else ""
    lines.append(f"class {name}({base}{total}):")
    lines.append(f'    """{doc}"""')
    lines.append("")
    fields = optional if optional and required else (optional or required)
    lines += [f"    {p}: {python_type(properties[p])}" for p in fields]
    if not fields:
        lines.append("    pass")
    return "\n".join(lines)


def render(spec: dict) -> str:
    ops = operations(spec)
    blocks = [
        '"""The API\'s bodies as TypedDicts. Generated from docs/openapi.json by generate_models.py: do not edit."""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import Any, Literal, TypedDict",
    ]
    for name, (operation_id,) in RESPONSES.items():
        op = ops[operation_id]
        blocks += ["", "", typed_dict(name, response_schema(op), f"What {op['summary'][0].lower()}{op['summary'][1:]} answers.")]
    for name, operation_id in REQUESTS.items():
        op = ops[operation_id]
        schema = op["requestBody"]["content"]["application/json"]["schema"]
        blocks += ["", "", typed_dict(name, schema, f"The body of: {op['summary']}.")]
    return "\n".join(blocks) + "\n"


def main() -> int:
    spec = json.loads(SPEC.read_text(encoding="utf-8"))
    OUT.write_text(render(spec), encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
