"""JSON Schema from a Python function's signature, type hints and docstring.

Pure Python with no dependency on the generated bindings, so it can be unit
tested with a plain CPython.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import types
import typing
from typing import Any, Callable, Dict, List, Literal, Optional, Tuple, Union

from ._output import Output

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
    ``Union[...]``, ``Literal[...]``, and a ``TypedDict`` or dataclass (an
    object with its fields as properties); a bare ``list`` or ``dict``
    accepts any items or values, and ``Any`` accepts anything.
    """
    return _type_schema(hint, where, ())


def _type_schema(hint: Any, where: str, enclosing: Tuple[type, ...]) -> Dict[str, Any]:
    if _is_record(hint):
        return _record_schema(hint, where, enclosing)
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
        # Values of one JSON type say it (MCP elicitation's enums need
        # `"type": "string"`); mixed ones are an enum alone.
        kinds = {_literal_kind(v) for v in values}
        if len(kinds) == 1 and None not in kinds:
            return {"type": kinds.pop(), "enum": values}
        return {"enum": values}
    if origin in (list, List):
        if not args:
            return {"type": "array"}
        return {"type": "array", "items": _type_schema(args[0], where, enclosing)}
    if origin in (tuple, Tuple):
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": _type_schema(args[0], where, enclosing)}
        return {
            "type": "array",
            "prefixItems": [_type_schema(a, where, enclosing) for a in args],
            "minItems": len(args),
            "maxItems": len(args),
        }
    if origin in (dict, Dict):
        if args and args[0] is not str:
            raise SchemaError(f"{where}: JSON object keys are strings; use dict[str, T], not {hint!r}")
        if len(args) == 2:
            return {"type": "object", "additionalProperties": _type_schema(args[1], where, enclosing)}
        return {"type": "object"}
    if origin is Union or origin is getattr(types, "UnionType", None):
        members = [a for a in args if a is not type(None)]
        nullable = len(members) != len(args)
        schemas = [_type_schema(m, where, enclosing) for m in members]
        if nullable and len(schemas) == 1 and set(schemas[0]) == {"enum"}:
            return {"enum": schemas[0]["enum"] + [None]}
        if nullable and len(schemas) == 1 and set(schemas[0]) == {"type", "enum"}:
            return {"type": [schemas[0]["type"], "null"], "enum": schemas[0]["enum"] + [None]}
        if nullable:
            schemas.append({"type": "null"})
        if all(set(s) == {"type"} for s in schemas):
            return {"type": [s["type"] for s in schemas]}
        return {"anyOf": schemas}
    raise SchemaError(
        f"{where}: type {hint!r} has no JSON Schema here; use str, int, float, bool, "
        "list[T], dict[str, T], Optional[T], Literal[...], a TypedDict or a dataclass, or declare the schema explicitly"
    )


def _literal_kind(value: Any) -> Optional[str]:
    """The JSON type of one ``Literal`` value (bool before int: a bool is an int)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return None


def _is_record(hint: Any) -> bool:
    """A ``TypedDict`` class or a dataclass (the class, not an instance)."""
    return isinstance(hint, type) and (typing.is_typeddict(hint) or dataclasses.is_dataclass(hint))


def _record_schema(cls: type, where: str, enclosing: Tuple[type, ...]) -> Dict[str, Any]:
    """An object schema with one property per field of a TypedDict or dataclass.

    A field is required unless it has a default (dataclass), is
    ``NotRequired`` / the class is ``total=False`` (TypedDict), or its type
    is ``Optional``. The class docstring's summary describes the object and
    its ``Attributes:`` section (Google style) the fields. Recursive types
    have no finite schema here and are refused.
    """
    if cls in enclosing:
        raise SchemaError(f"{where}: {cls.__name__} contains itself; recursive types have no schema here")
    inner = f"{where}.{cls.__name__}"
    try:
        hints = typing.get_type_hints(cls)
    except Exception as e:  # a forward reference that does not resolve
        raise SchemaError(f"{inner}: cannot resolve type hints: {e}") from e
    description, field_docs = parse_docstring(_own_doc(cls))
    if typing.is_typeddict(cls):
        names = list(hints)
        optional = {n for n in names if n not in cls.__required_keys__}
    else:
        fields = [f for f in dataclasses.fields(cls) if f.init]
        names = [f.name for f in fields]
        optional = {
            f.name
            for f in fields
            if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        }
    properties: Dict[str, Any] = {}
    required: List[str] = []
    for field in names:
        hint = hints.get(field, Any)
        prop = _type_schema(hint, f"{inner}.{field}", enclosing + (cls,))
        if field_docs.get(field):
            prop["description"] = field_docs[field]
        if field not in optional and not _is_optional(hint):
            required.append(field)
        properties[field] = prop
    schema: Dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    if description:
        schema["description"] = description
    return schema


def _own_doc(cls: type) -> Optional[str]:
    """The class's own docstring, not the ``Name(field: type, ...)`` line dataclass writes."""
    doc = cls.__dict__.get("__doc__")
    if doc and dataclasses.is_dataclass(cls) and doc.startswith(f"{cls.__name__}("):
        return None
    return doc


def output_schema(hint: Any, where: str) -> Optional[Dict[str, Any]]:
    """The output schema a return annotation declares, or None.

    Only a ``TypedDict`` or a dataclass (or ``Output[...]`` of one, see
    ``toolhost_sdk.Output``) declares one: an output schema's root is an
    object with known fields. ``dict``, ``Any``, a list or no annotation
    declare none, so the tool's result is not checked.
    """
    if hint is Output or typing.get_origin(hint) is Output:
        args = typing.get_args(hint)
        hint = args[0] if args else Any
    if _is_record(hint):
        return _record_schema(hint, where, ())
    return None


def return_schema(func: Callable[..., Any]) -> Optional[Dict[str, Any]]:
    """The output schema of a tool function, from its return annotation (see ``output_schema``)."""
    name = getattr(func, "__name__", "tool")
    try:
        hints = typing.get_type_hints(func)
    except Exception as e:
        raise SchemaError(f"{name}: cannot resolve type hints: {e}") from e
    return output_schema(hints.get("return", Any), f"{name}() ->")


def _refuse_dataclasses(hint: Any, where: str) -> None:
    """An input arrives as JSON objects (dicts): a dataclass parameter would not get one."""
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        raise SchemaError(f"{where}: {hint.__name__} is a dataclass, but inputs arrive as dicts; use a TypedDict")
    for arg in typing.get_args(hint):
        _refuse_dataclasses(arg, where)


def _is_optional(hint: Any) -> bool:
    origin = typing.get_origin(hint)
    if origin is Union or origin is getattr(types, "UnionType", None):
        return type(None) in typing.get_args(hint)
    return False


_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters|Attributes)\s*:\s*$")
_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")
_SECTION = re.compile(r"^\s*(Returns|Raises|Yields|Examples?|Notes?)\s*:\s*$")


def parse_docstring(doc: Optional[str]) -> Tuple[str, Dict[str, str]]:
    """Split a docstring into the tool description and per-argument text.

    The description is everything before a Google-style ``Args:`` section
    (``Attributes:`` for a class); each ``name: text`` line in that section
    (with indented continuation lines) describes one argument or field.
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
        _refuse_dataclasses(hint, f"{name}({param.name})")
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
