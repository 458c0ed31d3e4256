"""{{name}}: a toolhost plugin in Python; greets someone by name and counts words,
and offers a resource, a resource template, a prompt and its completions.

Build with ./build.sh, then
toolhost call {{name}}_greet --input '{"name":"Ada"}' --plugins dist

Every tool is a plain function decorated with @tool: the JSON Schema the
model sees comes from the type hints, the descriptions from the docstring,
and a TypedDict (or dataclass) return type is the tool's output schema,
which the host checks every result against.

Besides tools it offers (contract 0.3, see the end of this file) a
resource, a resource template, a prompt and completions of the prompt's
argument: `toolhost resources --plugins dist` lists them.
"""

from typing import Dict, List, TypedDict

# Tool, Resources, Prompts and Completions are the component's exports: keep them imported.
from toolhost_sdk import (  # noqa: F401
    Annotations,
    Completions,
    InvalidInput,
    Prompts,
    Resources,
    Tool,
    completion,
    config,
    progress,
    prompt,
    resource,
    resource_template,
    tool,
)


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


# What the plugin offers besides tools. A URI's scheme is the plugin's name
# with `_` as `-`: the host gives each plugin its own. Drop any of these you
# do not need; with none left, build.sh may build against contract 0.2 alone.


@resource("{{scheme}}://about", name="about", mime_type="text/markdown")
def about() -> str:
    """What the {{name}} plugin does."""
    return "# {{name}}\n\nA toolhost plugin: `{{name}}_greet` greets someone, `{{name}}_count` counts words.\n"


@resource_template("{{scheme}}://greeting/{name}", name="greeting", mime_type="text/plain")
def greeting(name: str) -> str:
    """The greeting for someone, as {{name}}_greet says it."""
    return f"{config('greeting') or 'Hello'}, {name}!"


@prompt
def {{name}}_welcome(name: str) -> str:
    """Ask the model to welcome someone.

    Args:
        name: Who to welcome.
    """
    # One user message; return a list of Message(...) for more, or images.
    return f"Write a short, warm welcome for {name}, a new member of the team."


@completion(prompt="{{name}}_welcome", argument="name")
def known_names(value: str, context: Dict[str, str]) -> List[str]:
    """The names that start with what the user typed so far."""
    return [n for n in ("Ada", "Alan", "Grace") if n.startswith(value)]
