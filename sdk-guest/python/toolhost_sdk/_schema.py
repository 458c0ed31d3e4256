"""JSON Schema from a Python function's signature, type hints and docstring.

Pure Python with no dependency on the generated bindings, so it can be unit
tested with a plain CPython.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from typing import Any, Callable, Dict, List, Literal, Optional, Tuple, Union

_SCALARS: Dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
}


class SchemaError(TypeError):
    """A tool's signature cannot be expressed as a JSON Schema.

    Raised when the tool is declared (at build time), so an author sees it
    when running `componentize-py` or the plugin's own tests, never at call
    time.
    """


def type_schema(hint: Any, where: str) -> Dict[str, Any]:
    """The JSON Schema of one type hint.

    Supported: ``str``, ``int``, ``float``, ``bool``, ``None``, ``list[T]`` /
    ``List[T]``, ``dict[str, T]`` / ``Dict[str, T]``, ``Optional[T]``,
    ``Union[...]`` and ``Literal[...]``; a bare ``list`` or ``dict`` accepts
    any items or values, and ``Any`` accepts anything.
    """
    if hint is Any or hint is inspect.Parameter.empty:
        return {}
    if hint is None or hint is type(None):
        return {"type": "null"}
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    if hint is list:
        return {"type": "array"}
    if hint is dict:
        return {"type": "object"}

    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is Literal:
        values = list(args)
        for v in values:
            if not isinstance(v, (str, int, float, bool)) and v is not None:
                raise SchemaError(f"{where}: Literal values must be str, int, float, bool or None, got {v!r}")
        return {"enum": values}
    if origin in (list, List):
        if not args:
            return {"type": "array"}
        return {"type": "array", "items": type_schema(args[0], where)}
    if origin in (tuple, Tuple):
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": type_schema(args[0], where)}
        return {
            "type": "array",
            "prefixItems": [type_schema(a, where) for a in args],
            "minItems": len(args),
            "maxItems": len(args),
        }
    if origin in (dict, Dict):
        if args and args[0] is not str:
            raise SchemaError(f"{where}: JSON object keys are strings; use dict[str, T], not {hint!r}")
        if len(args) == 2:
            return {"type": "object", "additionalProperties": type_schema(args[1], where)}
        return {"type": "object"}
    if origin is Union or origin is getattr(types, "UnionType", None):
        members = [a for a in args if a is not type(None)]
        nullable = len(members) != len(args)
        schemas = [type_schema(m, where) for m in members]
        if nullable and len(schemas) == 1 and set(schemas[0]) == {"enum"}:
            return {"enum": schemas[0]["enum"] + [None]}
        if nullable:
            schemas.append({"type": "null"})
        if all(set(s) == {"type"} for s in schemas):
            return {"type": [s["type"] for s in schemas]}
        return {"anyOf": schemas}
    raise SchemaError(
        f"{where}: type {hint!r} has no JSON Schema here; use str, int, float, bool, "
        "list[T], dict[str, T], Optional[T], Literal[...] or declare schema= explicitly"
    )


def _is_optional(hint: Any) -> bool:
    origin = typing.get_origin(hint)
    if origin is Union or origin is getattr(types, "UnionType", None):
        return type(None) in typing.get_args(hint)
    return False


_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters)\s*:\s*$")
_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")
_SECTION = re.compile(r"^\s*(Returns|Raises|Yields|Examples?|Notes?)\s*:\s*$")


def parse_docstring(doc: Optional[str]) -> Tuple[str, Dict[str, str]]:
    """Split a docstring into the tool description and per-argument text.

    The description is everything before a Google-style ``Args:`` section;
    each ``name: text`` line in that section (with indented continuation
    lines) describes one argument.
    """
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    summary: List[str] = []
    params: Dict[str, str] = {}
    i = 0
    while i < len(lines) and not _ARGS_HEADER.match(lines[i]) and not _SECTION.match(lines[i]):
        summary.append(lines[i])
        i += 1
    current: Optional[str] = None
    arg_indent = 0
    in_args = False
    for line in lines[i:]:
        if _ARGS_HEADER.match(line):
            in_args, current = True, None
            continue
        if _SECTION.match(line):
            in_args, current = False, None
            continue
        if not in_args:
            continue
        m = _ARG_LINE.match(line)
        indent = len(line) - len(line.lstrip())
        if m and (current is None or indent <= arg_indent):
            current = m.group(1).lstrip("*")
            arg_indent = indent
            params[current] = m.group(3).strip()
        elif current is not None and line.strip():
            params[current] = (params[current] + " " + line.strip()).strip()
    return "\n".join(summary).strip(), params


def function_schema(func: Callable[..., Any]) -> Tuple[str, Dict[str, Any]]:
    """The description and input schema of a tool function.

    Every parameter becomes a property of the input object. A parameter is
    required unless it has a default value or its type is ``Optional[...]``.
    Unknown properties are refused (``additionalProperties: false``).
    """
    name = getattr(func, "__name__", "tool")
    try:
        hints = typing.get_type_hints(func)
    except Exception as e:  # a forward reference that does not resolve
        raise SchemaError(f"{name}: cannot resolve type hints: {e}") from e
    description, arg_docs = parse_docstring(func.__doc__)
    properties: Dict[str, Any] = {}
    required: List[str] = []
    for param in inspect.signature(func).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise SchemaError(f"{name}: *args and **kwargs cannot be described; name each input")
        if param.kind is param.POSITIONAL_ONLY:
            raise SchemaError(f"{name}: parameter {param.name!r} is positional-only; inputs are passed by name")
        hint = hints.get(param.name, Any)
        prop = type_schema(hint, f"{name}({param.name})")
        if param.name in arg_docs and arg_docs[param.name]:
            prop["description"] = arg_docs[param.name]
        if param.default is not param.empty:
            if param.default is None or isinstance(param.default, (str, int, float, bool, list, dict)):
                if param.default is not None:
                    prop["default"] = param.default
        elif not _is_optional(hint):
            required.append(param.name)
        properties[param.name] = prop
    schema: Dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return description, schema
