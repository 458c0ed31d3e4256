"""{{name}}: a toolhost plugin in Python; greets someone by name.

Build with ./build.sh, then
toolhost call {{name}}_greet --input '{"name":"Ada"}' --plugins dist

Every tool is a plain function decorated with @tool: the JSON Schema the
model sees comes from the type hints, the descriptions from the docstring.
"""

from toolhost_sdk import InvalidInput, Tool, config, tool  # noqa: F401  (Tool is the component export)


@tool
def {{name}}_greet(name: str) -> dict:
    """Greet someone by name.

    Args:
        name: Who to greet.
    """
    name = name.strip()
    if not name:
        raise InvalidInput("`name` must not be blank")
    greeting = config("greeting") or "Hello"
    return {"greeting": f"{greeting}, {name}!"}
