"""Tests of the SDK's resources, prompts and completions (contract 0.3) in plain CPython.

    python3 -m unittest discover -s sdk-guest/python/tests
"""

import os
import sys
import unittest
from typing import Dict, List

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import toolhost_sdk  # noqa: E402
from toolhost_sdk import (  # noqa: E402
    Completion,
    Image,
    InvalidInput,
    Message,
    NotFound,
    Resource,
    SchemaError,
    complete,
    completion,
    config,
    get_prompt,
    prompt,
    read_resource,
    resource,
    resource_template,
    set_local_config,
)
from toolhost_sdk import _offers  # noqa: E402


@resource("t-offers://about", mime_type="text/markdown")
def about() -> str:
    """About the plugin.

    Args:
        (none): the Args section is not part of the description.
    """
    return "# t_offers"


@resource("t-offers://logo", name="logo", mime_type="image/png")
def logo() -> bytes:
    return b"\x89PNG"


@resource("t-offers://two")
def two() -> List[Resource]:
    return [Resource("t-offers://two/a", "a"), Resource("t-offers://two/b", b"b", "application/octet-stream")]


@resource_template("t-offers://greeting/{name}", mime_type="text/plain")
def greeting(name: str) -> str:
    """A greeting."""
    return f"{config('greeting') or 'Hello'}, {name}!"


@resource_template("t-offers://day/{year}/{day}")
def day(year: str, day: str) -> str:
    if not year.isdigit():
        raise InvalidInput(f"{year} is not a year")
    return f"{day} of {year}"


@prompt
def t_offers_welcome(name: str, tone: str = "warm") -> str:
    """Welcome someone.

    Args:
        name: Who to welcome.
        tone: How.
    """
    return f"Welcome {name}, {tone}ly."


@prompt(name="t_offers_look", description="Look at a picture.")
def look() -> List[Message]:
    return [Message(Image(b"png")), Message("What is this?", role="assistant")]


@prompt
def t_offers_broken() -> str:
    """Raises."""
    raise ZeroDivisionError("no")


@completion(prompt="t_offers_welcome", argument="name")
def names(value: str, context: Dict[str, str]) -> List[str]:
    return [n for n in ("Ada", "Alan", "Grace") if n.startswith(value)]


@completion(template="t-offers://day/{year}/{day}", argument="day")
def days(value: str, context: Dict[str, str]) -> Completion:
    return Completion(values=[f"{context.get('year', '?')}-{value}1"], total=31, has_more=True)


class Resources(unittest.TestCase):
    def test_a_resource_reads_as_text_with_its_mime_type(self):
        self.assertEqual(read_resource("t-offers://about"), [Resource("t-offers://about", "# t_offers", "text/markdown")])
        self.assertEqual(read_resource("t-offers://logo"), [Resource("t-offers://logo", b"\x89PNG", "image/png")])
        self.assertEqual(len(read_resource("t-offers://two")), 2)

    def test_listing_names_and_describes_each_resource(self):
        listed = {r.uri: r for r in _offers._RESOURCES.values()}
        self.assertEqual(listed["t-offers://about"].name, "about")
        self.assertEqual(listed["t-offers://about"].description, "About the plugin.")
        self.assertEqual(listed["t-offers://logo"].name, "logo")
        self.assertIsNone(listed["t-offers://logo"].description)

    def test_a_template_reads_with_its_variables(self):
        set_local_config({"greeting": "Howdy"})
        try:
            self.assertEqual(read_resource("t-offers://greeting/Ada")[0].contents, "Howdy, Ada!")
        finally:
            set_local_config({})
        # Percent-encoded values are decoded; the host's own match wins.
        self.assertEqual(read_resource("t-offers://greeting/Ada%20L")[0].contents, "Hello, Ada L!")
        self.assertEqual(read_resource("t-offers://greeting/x", {"name": "Grace"})[0].contents, "Hello, Grace!")
        self.assertEqual(read_resource("t-offers://day/2024/monday")[0].contents, "monday of 2024")

    def test_unknown_uris_and_bad_values_are_errors(self):
        with self.assertRaises(NotFound):
            read_resource("t-offers://nothing")
        with self.assertRaises(NotFound):  # a variable does not span a `/`
            read_resource("t-offers://greeting/a/b")
        with self.assertRaises(InvalidInput):
            read_resource("t-offers://day/soon/monday")

    def test_declarations_are_checked(self):
        with self.assertRaises(SchemaError):
            resource("no-scheme")(lambda: "")
        with self.assertRaises(SchemaError):
            resource("t-offers://about")(lambda: "")
        with self.assertRaises(SchemaError):
            resource_template("t-offers://plain")(lambda: "")
        with self.assertRaises(SchemaError):
            resource_template("t-offers://x/{who}")(lambda name: "")


class Prompts(unittest.TestCase):
    def test_arguments_come_from_the_signature_and_docstring(self):
        declared = _offers._PROMPTS["t_offers_welcome"]
        self.assertEqual(declared.description, "Welcome someone.")
        self.assertEqual(declared.arguments, (("name", "Who to welcome.", True), ("tone", "How.", False)))

    def test_text_is_one_user_message(self):
        self.assertEqual(get_prompt("t_offers_welcome", {"name": "Ada"}), [Message("Welcome Ada, warmly.")])
        self.assertEqual(get_prompt("t_offers_welcome", {"name": "Ada", "tone": "cool"})[0].content, "Welcome Ada, coolly.")

    def test_messages_carry_parts_and_roles(self):
        messages = get_prompt("t_offers_look")
        self.assertEqual(messages[0], Message(Image(b"png"), "user"))
        self.assertEqual(messages[1].role, "assistant")
        self.assertEqual(_offers._PROMPTS["t_offers_look"].description, "Look at a picture.")

    def test_missing_unknown_and_failing_prompts_are_errors(self):
        with self.assertRaisesRegex(InvalidInput, "name"):
            get_prompt("t_offers_welcome", {})
        with self.assertRaisesRegex(InvalidInput, "colour"):
            get_prompt("t_offers_welcome", {"name": "Ada", "colour": "red"})
        with self.assertRaises(NotFound):
            get_prompt("t_offers_nothing")
        with self.assertRaisesRegex(toolhost_sdk.Failed, "ZeroDivisionError: no"):
            get_prompt("t_offers_broken")

    def test_a_message_is_checked(self):
        with self.assertRaises(ValueError):
            Message("hi", role="system")
        with self.assertRaises(TypeError):
            Message(42)  # type: ignore[arg-type]


class Completions(unittest.TestCase):
    def test_a_prompt_argument_completes_by_prefix_in_order(self):
        self.assertEqual(list(complete("name", "A", prompt="t_offers_welcome").values), ["Ada", "Alan"])
        self.assertEqual(list(complete("name", "G", prompt="t_offers_welcome").values), ["Grace"])
        self.assertEqual(complete("name", "", prompt="t_offers_welcome").total, 3)

    def test_a_template_variable_completes_with_its_context(self):
        c = complete("day", "0", template="t-offers://day/{year}/{day}", context={"year": "2024"})
        self.assertEqual(c, Completion(values=["2024-01"], total=31, has_more=True))

    def test_nothing_declared_completes_to_nothing(self):
        self.assertEqual(list(complete("tone", "w", prompt="t_offers_welcome").values), [])

    def test_a_completion_needs_one_target(self):
        with self.assertRaises(SchemaError):
            completion(argument="x")
        with self.assertRaises(SchemaError):
            completion(argument="x", prompt="p", template="t://{x}")


class Exports(unittest.TestCase):
    def test_the_exports_are_classes_to_re_export(self):
        for cls in (toolhost_sdk.Resources, toolhost_sdk.Prompts, toolhost_sdk.Completions):
            self.assertIn(cls.__name__, toolhost_sdk.__all__)
        self.assertTrue(_offers.offers_anything())


if __name__ == "__main__":
    unittest.main()
