"""Tests of the toolhost Python SDK in plain CPython (no component needed).

    python3 -m unittest discover -s sdk-guest/python/tests
"""

import json
import os
import sys
import unittest
from dataclasses import dataclass, field
from typing import Any, Dict, List, Literal, Optional, Tuple, TypedDict

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import toolhost_sdk  # noqa: E402
from toolhost_sdk import (  # noqa: E402
    Annotations,
    Audio,
    Denied,
    Image,
    InvalidInput,
    Output,
    Resource,
    SchemaError,
    Text,
    ToolFailure,
    progress,
    tool,
    user,
)
from toolhost_sdk._schema import function_schema, output_schema, parse_docstring, return_schema  # noqa: E402


class Point(TypedDict):
    """A point.

    Attributes:
        x: Across.
        y: Down.
    """

    x: int
    y: int


class Partial(TypedDict, total=False):
    label: str


@dataclass
class Summary:
    """Attributes:
    count: How many.
    points: Where.
    note: Optional words.
    """

    count: int
    points: List[Point]
    note: Optional[str] = None
    tags: List[str] = field(default_factory=list)


@dataclass
class Loop:
    next: Optional["Loop"]


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
        self.assertEqual(props["u"], {"type": ["string", "null"], "enum": ["a", None]})
        # One JSON type: it is said (MCP elicitation's enums need it).
        def g(s: Literal["a", "b"], n: Literal[1, 2], b: Literal[True]):
            """G."""

        typed = function_schema(g)[1]["properties"]
        self.assertEqual(typed["s"], {"type": "string", "enum": ["a", "b"]})
        self.assertEqual(typed["n"], {"type": "integer", "enum": [1, 2]})
        self.assertEqual(typed["b"], {"type": "boolean", "enum": [True]})
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

    def test_a_frame_in_a_componentize_py_directory_names_the_author_s_file(self):
        # componentize-py runs the plugin's app.py as /0/app.py (its first
        # `-p` directory, on sys.path as "/0").
        from toolhost_sdk import _shown_file

        sys.path.append("/0")
        try:
            self.assertEqual(_shown_file("/0/app.py"), "app.py")
            self.assertEqual(_shown_file("/0/lib/util.py"), "lib/util.py")
        finally:
            sys.path.remove("/0")
        self.assertEqual(_shown_file("/0/app.py"), "/0/app.py", "not a directory of the build")
        self.assertEqual(_shown_file("/usr/lib/python3/json/decoder.py"), "/usr/lib/python3/json/decoder.py")

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


class OutputSchemas(unittest.TestCase):
    def test_typeddict_and_dataclass_returns_declare_object_schemas(self):
        def f() -> Point:
            """F."""

        self.assertEqual(
            return_schema(f),
            {
                "type": "object",
                "properties": {"x": {"type": "integer", "description": "Across."}, "y": {"type": "integer", "description": "Down."}},
                "required": ["x", "y"],
                "description": "A point.",
            },
        )
        schema = output_schema(Summary, "s")
        self.assertEqual(schema["required"], ["count", "points"])
        self.assertEqual(schema["properties"]["count"], {"type": "integer", "description": "How many."})
        self.assertEqual(schema["properties"]["points"]["items"]["properties"]["x"]["type"], "integer")
        self.assertEqual(schema["properties"]["note"]["type"], ["string", "null"])
        self.assertNotIn("description", schema, "the generated dataclass __doc__ is not a description")
        self.assertNotIn("required", output_schema(Partial, "p"))

        def g() -> Output[Point]:
            """G."""

        self.assertEqual(return_schema(g)["required"], ["x", "y"])

    def test_loose_returns_declare_none(self):
        def a() -> dict:
            """A."""

        def b():
            """B."""

        def c() -> List[Point]:
            """C."""

        def d() -> Output:
            """D."""

        for f in (a, b, c, d):
            self.assertIsNone(return_schema(f), f.__name__)

    def test_mistakes_fail_at_declaration(self):
        with self.assertRaisesRegex(SchemaError, "contains itself"):
            output_schema(Loop, "loop")

        def takes_dataclass(s: Summary) -> None:
            """T."""

        with self.assertRaisesRegex(SchemaError, "use a TypedDict"):
            function_schema(takes_dataclass)
        with self.assertRaisesRegex(SchemaError, "object schema"):
            tool(name="t_out_bad", output_schema={"type": "array"})(lambda: None)
        with self.assertRaisesRegex(SchemaError, "Annotations"):
            tool(name="t_hints_bad", annotations={"title": "x"})(lambda: None)

    def test_describe_carries_output_schema_and_annotations(self):
        @tool(annotations=Annotations(title="Where", read_only=True))
        def t_where() -> Point:
            """Where."""
            return {"x": 1, "y": 2}

        @tool(name="t_where_raw", output_schema={"type": "object", "properties": {"n": {"type": "integer"}}})
        def raw() -> dict:
            """Raw."""
            return {"n": 1}

        @tool
        def t_plain() -> dict:
            """Plain."""
            return {}

        described = {d["name"]: d for d in toolhost_sdk.describe()}
        self.assertEqual(described["t_where"]["output_schema"]["required"], ["x", "y"])
        self.assertEqual(described["t_where"]["annotations"], {"title": "Where", "read_only": True})
        self.assertEqual(described["t_where_raw"]["output_schema"]["properties"], {"n": {"type": "integer"}})
        self.assertIsNone(described["t_plain"]["output_schema"])
        self.assertEqual(described["t_plain"]["annotations"], {})


class Results(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        @tool
        def t_chart(n: int) -> Output[Summary]:
            """A summary and an image."""
            return Output(Summary(count=n, points=[{"x": 0, "y": n}]), content=[Image(b"\x89PNG"), Text("drawn")])

        @tool
        def t_parts() -> Output:
            """Parts only."""
            return Output(content=[Audio(b"RIFF", "audio/wav"), Resource("file:///a", "text", "text/plain")])

        @tool
        def t_bad_part() -> Output:
            """A part that is not one."""
            return Output(content=["just a string"])

    def test_content_parts_travel_beside_the_value_or_alone(self):
        out = toolhost_sdk.call_output("t_chart", '{"n": 2}')
        self.assertEqual(out.value, {"count": 2, "points": [{"x": 0, "y": 2}], "note": None, "tags": []})
        self.assertEqual(out.content, (Image(b"\x89PNG", "image/png"), Text("drawn")))
        self.assertEqual(json.loads(toolhost_sdk.call("t_chart", '{"n": 2}'))["count"], 2)
        only = toolhost_sdk.call_output("t_parts", "{}")
        self.assertFalse(only.has_value)
        self.assertIsNone(toolhost_sdk.call("t_parts", "{}"))
        self.assertEqual(only.content[0].media_type, "audio/wav")
        self.assertEqual(only.content[1].contents, "text")
        with self.assertRaises(ToolFailure) as caught:
            toolhost_sdk.call("t_bad_part", "{}")
        self.assertIn("TypeError: a content part is Text, Image, Audio or Resource", str(caught.exception))
        with self.assertRaisesRegex(TypeError, "must be bytes"):
            Output(content=[Image("not bytes")])  # type: ignore[arg-type]


class Progress(unittest.TestCase):
    def tearDown(self):
        progress.set_local_listener(None)

    def test_reports_reach_the_local_listener_in_order(self):
        seen = []
        progress.set_local_listener(lambda *r: seen.append(r))

        @tool
        def t_slow(steps: int) -> dict:
            """Counts up."""
            for i in range(1, steps + 1):
                progress.report(i, steps, f"step {i}")
            return {"steps": steps}

        toolhost_sdk.call("t_slow", '{"steps": 3}')
        self.assertEqual(seen, [(1.0, 3.0, "step 1"), (2.0, 3.0, "step 2"), (3.0, 3.0, "step 3")])
        progress.report(4)
        self.assertEqual(seen[-1], (4.0, None, None))

    def test_a_bad_report_is_the_tool_s_bug(self):
        with self.assertRaisesRegex(ValueError, "finite"):
            progress.report(float("nan"))
        with self.assertRaisesRegex(TypeError, "number"):
            progress.report("1")  # type: ignore[arg-type]
        with self.assertRaisesRegex(TypeError, "message"):
            progress.report(1, 2, 3)  # type: ignore[arg-type]


class Question(TypedDict):
    """Attributes:
    branch: The branch to push.
    """

    branch: Literal["main", "dev"]


class Ask(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        @tool
        def t_ask_handles() -> dict:
            """Asks, and handles no one being there."""
            try:
                answer = user.ask("Which branch?", Question)
            except user.Unavailable as e:
                raise InvalidInput(f"pass `branch`; could not ask: {e.detail}") from None
            return {"action": answer.action, "content": answer.content}

        @tool
        def t_ask_ignores() -> dict:
            """Asks and lets an error through."""
            user.ask("Which branch?", {"type": "object", "properties": {"branch": {"type": "string"}}})
            return {}

    def tearDown(self):
        user.set_local_answerer(None)

    def test_no_one_to_ask_is_an_error_the_tool_handles_or_fails_with(self):
        with self.assertRaises(ToolFailure) as caught:
            toolhost_sdk.call("t_ask_handles", "{}")
        self.assertEqual(caught.exception.kind, "invalid_input")
        self.assertIn("pass `branch`; could not ask: no one to ask outside a toolhost", str(caught.exception))
        with self.assertRaises(user.AskError) as uncaught:
            toolhost_sdk.call("t_ask_ignores", "{}")
        self.assertEqual(uncaught.exception.kind, "failed")
        self.assertTrue(str(uncaught.exception).startswith("the tool needed an answer to 'Which branch?' and could not ask"))

    def test_an_answer_comes_back_with_the_question_s_schema(self):
        asked = []

        def answer(message, schema):
            asked.append((message, schema))
            return user.Answer("accept", {"branch": "main"})

        user.set_local_answerer(answer)
        self.assertEqual(json.loads(toolhost_sdk.call("t_ask_handles", "{}")), {"action": "accept", "content": {"branch": "main"}})
        message, schema = asked[0]
        self.assertEqual(message, "Which branch?")
        self.assertEqual(schema["properties"]["branch"], {"type": "string", "enum": ["main", "dev"], "description": "The branch to push."})
        self.assertEqual(schema["required"], ["branch"])
        user.set_local_answerer(lambda m, s: user.Answer("decline"))
        self.assertFalse(user.ask("?", Question).accepted)


class Denial(unittest.TestCase):
    def test_denied_is_a_tool_failure(self):
        self.assertEqual(Denied("x").kind, "denied")


if __name__ == "__main__":
    unittest.main()
