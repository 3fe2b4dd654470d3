"""The client against docs/openapi.json: every operation has a method, and the models are current."""

from __future__ import annotations

import json
import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE = HERE.parent
sys.path.insert(0, str(PACKAGE))

from differently import DifferentlyClient  # noqa: E402
from differently.operations import OPERATIONS  # noqa: E402

SPEC = json.loads((PACKAGE.parent.parent / "docs" / "openapi.json").read_text(encoding="utf-8"))


class EveryOperationHasAMethod(unittest.TestCase):
    def test_the_table_names_exactly_the_documents_operations(self) -> None:
        documented = {op["operationId"] for item in SPEC["paths"].values() for op in item.values()}
        self.assertEqual(set(OPERATIONS), documented)

    def test_each_named_method_exists_and_is_callable(self) -> None:
        client = DifferentlyClient("http://127.0.0.1:9", "unused")
        for operation, name in OPERATIONS.items():
            target: object = client
            for part in name.split("."):
                target = getattr(target, part, None)
            self.assertTrue(callable(target), f"{operation}: no method {name}")


class ModelsAreGeneratedFromTheDocument(unittest.TestCase):
    def test_models_py_is_what_the_generator_writes_now(self) -> None:
        sys.path.insert(0, str(PACKAGE))
        import generate_models

        current = (PACKAGE / "differently" / "models.py").read_text(encoding="utf-8")
        self.assertEqual(current, generate_models.render(SPEC), "run python3 sdk/python/generate_models.py")

    def test_a_model_has_the_fields_of_its_schema(self) -> None:
        from differently import models

        schema = SPEC["paths"]["/v1/sandboxes/{id}"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
        self.assertEqual(set(models.Sandbox.__annotations__), set(schema["properties"]))
        self.assertEqual(models.Sandbox.__required_keys__, frozenset(schema["required"]))


if __name__ == "__main__":
    unittest.main()
