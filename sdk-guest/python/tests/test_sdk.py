"""Tests of the toolhost Python SDK in plain CPython (no component needed).

    python3 -m unittest discover -s sdk-guest/python/tests
"""

import json
import os
import sys
import unittest
from typing import Any, Dict, List, Literal, Optional, Tuple

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import toolhost_sdk  # noqa: E402
from toolhost_sdk import Denied, InvalidInput, SchemaError, ToolFailure, tool  # noqa: E402
from toolhost_sdk._schema import function_schema, parse_docstring  # noqa: E402


class SchemaFromHints(unittest.TestCase):
    def test_scalars_required_and_defaults(self):
        def f(a: str, b: int, c: float = 1.5, d: bool = False, e: Optional[str] = None):
            """Do a thing.

            More words.

            Args:
                a: The a.
                b: The b, which
                    wraps.
            """

        description, schema = function_schema(f)
        self.assertEqual(description, "Do a thing.\n\nMore words.")
        self.assertEqual(schema["required"], ["a", "b"])
        self.assertFalse(schema["additionalProperties"])
        props = schema["properties"]
        self.assertEqual(props["a"], {"type": "string", "description": "The a."})
        self.assertEqual(props["b"], {"type": "integer", "description": "The b, which wraps."})
        self.assertEqual(props["c"], {"type": "number", "default": 1.5})
        self.assertEqual(props["d"], {"type": "boolean", "default": False})
        self.assertEqual(props["e"], {"type": ["string", "null"]})

    def test_containers_literals_and_unions(self):
        def f(xs: List[int], m: Dict[str, float], t: Tuple[int, str], lit: Literal["x", 2], u: Optional[Literal["a"]], any_: Any, bare: list):
            """F."""

        props = function_schema(f)[1]["properties"]
        self.assertEqual(props["xs"], {"type": "array", "items": {"type": "integer"}})
        self.assertEqual(props["m"], {"type": "object", "additionalProperties": {"type": "number"}})
        self.assertEqual(props["t"]["prefixItems"], [{"type": "integer"}, {"type": "string"}])
        self.assertEqual(props["lit"], {"enum": ["x", 2]})
        self.assertEqual(props["u"], {"enum": ["a", None]})
        self.assertEqual(props["any_"], {})
        self.assertEqual(props["bare"], {"type": "array"})

    def test_pep604_and_builtin_generics(self):
        def f(a: list[str], b: dict[str, int], c: int | None = None):
            """F."""

        props = function_schema(f)[1]["properties"]
        self.assertEqual(props["a"], {"type": "array", "items": {"type": "string"}})
        self.assertEqual(props["b"], {"type": "object", "additionalProperties": {"type": "integer"}})
        self.assertEqual(props["c"], {"type": ["integer", "null"]})

    def test_unsupported_types_fail_with_the_parameter_name(self):
        def f(x: set):
            """F."""

        with self.assertRaisesRegex(SchemaError, r"f\(x\)"):
            function_schema(f)

        def g(**kw: int):
            """G."""

        with self.assertRaises(SchemaError):
            function_schema(g)

        def h(m: Dict[int, str]):
            """H."""

        with self.assertRaisesRegex(SchemaError, "keys are strings"):
            function_schema(h)

    def test_docstring_sections_after_args_are_not_descriptions(self):
        text, params = parse_docstring("Sum.\n\nArgs:\n    a: first\nReturns:\n    b: not a param\n")
        self.assertEqual(text, "Sum.")
        self.assertEqual(params, {"a": "first"})


class Calls(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        @tool
        def t_add(a: int, b: int = 2) -> dict:
            """Add two numbers."""
            if a < 0:
                raise InvalidInput("a must not be negative")
            return {"sum": a + b}

        @tool(name="t-raw", schema={"type": "object", "properties": {"q": {"type": "string"}}})
        def raw(args):
            """Echo."""
            return args

        @tool
        def t_boom() -> None:
            """Fails."""
            raise KeyError("nope")

        @tool
        def t_perm() -> None:
            """Denied."""
            raise PermissionError("/etc/passwd")

        @tool
        def t_set() -> Any:
            """Returns a set."""
            return {1, 2}

    def test_success_and_defaults(self):
        self.assertEqual(json.loads(toolhost_sdk.call("t_add", '{"a": 1}')), {"sum": 3})
        self.assertEqual(json.loads(toolhost_sdk.call("t-raw", '{"q": "x", "z": 1}')), {"q": "x", "z": 1})

    def test_errors_have_kinds(self):
        cases = [
            ("t_add", '{"a": -1}', "invalid_input", "negative"),
            ("t_add", '{"c": 1}', "invalid_input", "t_add"),
            ("t_add", "[1]", "invalid_input", "object"),
            ("t_add", "{", "invalid_input", "not JSON"),
            ("t_boom", "{}", "failed", "KeyError"),
            ("t_perm", "{}", "denied", "/etc/passwd"),
            ("t_set", "{}", "failed", "not JSON"),
            ("missing", "{}", "unknown_tool", "missing"),
        ]
        for name, payload, kind, text in cases:
            with self.subTest(name=name, payload=payload):
                with self.assertRaises(ToolFailure) as caught:
                    toolhost_sdk.call(name, payload)
                self.assertEqual(caught.exception.kind, kind)
                self.assertIn(text, str(caught.exception))

    def test_an_uncaught_exception_carries_its_traceback(self):
        with self.assertRaises(ToolFailure) as caught:
            toolhost_sdk.call("t_boom", "{}")
        text = str(caught.exception)
        lines = text.splitlines()
        self.assertEqual(lines[0], "KeyError: 'nope'")
        self.assertEqual(lines[1], "Traceback (most recent call last):")
        # The tool's own frame, with file and line; none of the SDK's.
        self.assertRegex(text, r'File ".*test_sdk\.py", line \d+, in t_boom')
        self.assertIn('raise KeyError("nope")', text)
        self.assertNotIn("toolhost_sdk", text)

    def test_a_deep_or_long_traceback_stays_bounded(self):
        @tool
        def t_deep(n: int) -> None:
            """Recurses, then fails with a long message."""

            def down(k):
                if k == 0:
                    raise ValueError("x" * 100_000)
                down(k - 1)

            down(n)

        with self.assertRaises(ToolFailure) as caught:
            toolhost_sdk.call("t_deep", '{"n": 200}')
        text = str(caught.exception)
        self.assertLess(len(text), 5000)
        self.assertTrue(text.startswith("ValueError: xxx"), text[:40])
        self.assertIn("more characters]", text)
        self.assertIn("outer frames left out", text)
        # The innermost frame, where it was raised, is kept.
        self.assertRegex(text.splitlines()[-1] + text.splitlines()[-2], r"in down|raise ValueError")

    def test_describe_lists_schemas(self):
        described = {d["name"]: d for d in toolhost_sdk.describe()}
        self.assertEqual(described["t_add"]["description"], "Add two numbers.")
        self.assertEqual(described["t_add"]["input_schema"]["required"], ["a"])
        infos = toolhost_sdk.Tool().describe()
        self.assertTrue(all(json.loads(i["input_schema"])["type"] == "object" for i in infos))

    def test_declaration_mistakes_fail_early(self):
        with self.assertRaisesRegex(SchemaError, "declared twice"):
            tool(name="t_add")(lambda: None)
        with self.assertRaisesRegex(SchemaError, "1-64"):
            tool(name="bad name")(lambda: None)

        def undocumented(x: int):
            pass

        with self.assertRaisesRegex(SchemaError, "description"):
            tool(undocumented)

    def test_local_config(self):
        toolhost_sdk.set_local_config({"k": "v"})
        self.assertEqual(toolhost_sdk.config("k"), "v")
        self.assertIsNone(toolhost_sdk.config("other"))


class Denial(unittest.TestCase):
    def test_denied_is_a_tool_failure(self):
        self.assertEqual(Denied("x").kind, "denied")


if __name__ == "__main__":
    unittest.main()
