"""{{name}}: a toolhost plugin in Python; greets someone by name and counts words.

Build with ./build.sh, then
toolhost call {{name}}_greet --input '{"name":"Ada"}' --plugins dist

Every tool is a plain function decorated with @tool: the JSON Schema the
model sees comes from the type hints, the descriptions from the docstring,
and a TypedDict (or dataclass) return type is the tool's output schema,
which the host checks every result against.
"""

from typing import TypedDict

from toolhost_sdk import Annotations, InvalidInput, Tool, config, progress, tool  # noqa: F401  (Tool is the component export)


class Greeting(TypedDict):
    """Attributes:
    greeting: The greeting, e.g. "Hello, Ada!".
    """

    greeting: str


@tool(annotations=Annotations(title="Greet someone", read_only=True))
def {{name}}_greet(name: str) -> Greeting:
    """Greet someone by name.

    Args:
        name: Who to greet.
    """
    name = name.strip()
    if not name:
        raise InvalidInput("`name` must not be blank")
    greeting = config("greeting") or "Hello"
    return {"greeting": f"{greeting}, {name}!"}


class Counts(TypedDict):
    """Attributes:
    lines: Lines in the text.
    words: Words in the text.
    """

    lines: int
    words: int


@tool
def {{name}}_count(text: str) -> Counts:
    """Count the lines and words of a text.

    Args:
        text: The text to count.
    """
    lines = text.splitlines()
    words = 0
    for i, line in enumerate(lines, 1):
        words += len(line.split())
        # A long job says how far it is; the host thins out reports that
        # come too fast, so report as often as is natural.
        if i % 1000 == 0 or i == len(lines):
            progress.report(i, len(lines), f"counted {i} of {len(lines)} lines")
    # To return an image beside the JSON: `return Output(counts, content=[Image(png_bytes)])`.
    # To ask the person behind the call: `user.ask("Which one?", SomeTypedDict)`.
    return {"lines": len(lines), "words": words}
