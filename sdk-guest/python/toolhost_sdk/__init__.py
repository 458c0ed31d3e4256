"""Write toolhost tools in Python as plain functions.

A plugin is one module that declares its tools with ``@tool`` and re-exports
``Tool`` (the class componentize-py looks for)::

    from typing import Literal
    from toolhost_sdk import Tool, tool, InvalidInput

    @tool
    def py_greet(name: str, style: Literal["short", "long"] = "short") -> dict:
        \"\"\"Greet someone.

        Args:
            name: Who to greet.
            style: How much to say.
        \"\"\"
        if not name:
            raise InvalidInput("name must not be empty")
        return {"greeting": f"Hello, {name}!"}

The input schema comes from the signature (see ``_schema.py`` for the types
that map), the description from the docstring, and the return value is sent
back as JSON. Raise ``InvalidInput``, ``Failed`` or ``Denied`` to return a
structured tool error; any other exception becomes ``Failed`` with its type,
message and traceback (file and line of each frame, innermost last, bounded)
so that ``toolhost call`` shows where it was raised (a ``PermissionError``
becomes ``Denied``).

Outside a component (plain CPython, for an author's own tests) the module
still works: ``call`` runs a tool by name, ``log`` writes to stderr and
``config`` reads from ``set_local_config``.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, TypeVar, overload

from ._schema import SchemaError, function_schema, type_schema

__all__ = [
    "Tool",
    "tool",
    "ToolFailure",
    "InvalidInput",
    "Failed",
    "Denied",
    "log",
    "config",
    "call",
    "describe",
    "set_local_config",
    "SchemaError",
    "type_schema",
]

try:  # inside componentize-py: the bindings for the toolhost:plugin world
    from componentize_py_types import Err
    from wit_world.exports import Tool as _ToolProtocol
    from wit_world.imports import host as _host
    from wit_world.imports import types as _types

    _IN_COMPONENT = True
except ImportError:  # plain CPython: local stand-ins
    _IN_COMPONENT = False
    _ToolProtocol = object  # type: ignore[assignment,misc]


class ToolFailure(Exception):
    """Base of the errors a tool raises to return a structured tool error."""

    kind = "failed"


class InvalidInput(ToolFailure):
    """The input matches the schema but its values make no sense; the model should fix them."""

    kind = "invalid_input"


class Failed(ToolFailure):
    """The tool ran and could not do its job."""

    kind = "failed"


class Denied(ToolFailure):
    """The sandbox refused something the tool needed (a file, an env var)."""

    kind = "denied"


class UnknownTool(ToolFailure):
    """``call`` was asked for a tool this plugin does not declare."""

    kind = "unknown_tool"


@dataclass(frozen=True)
class _Declared:
    name: str
    description: str
    schema: Dict[str, Any]
    func: Callable[..., Any]
    raw_input: bool
    # Computed once at import (inside the pre-initialized snapshot), not per
    # call: building a Signature is most of what a fresh-instance call costs.
    signature: Optional[inspect.Signature]


_TOOLS: Dict[str, _Declared] = {}
_LOCAL_CONFIG: Dict[str, str] = {}

F = TypeVar("F", bound=Callable[..., Any])


@overload
def tool(func: F) -> F: ...
@overload
def tool(
    *, name: Optional[str] = None, description: Optional[str] = None, schema: Optional[Dict[str, Any]] = None
) -> Callable[[F], F]: ...


def tool(func=None, *, name=None, description=None, schema=None):
    """Declare a function as a tool.

    ``@tool`` derives everything from the function. ``@tool(name=...,
    description=..., schema=...)`` overrides parts: with ``schema`` given,
    the function receives the whole input object as its one argument.
    """

    def register(f):
        tool_name = name or f.__name__
        if not (1 <= len(tool_name) <= 64) or not all(c.isascii() and (c.isalnum() or c in "_-") for c in tool_name):
            raise SchemaError(f"tool name {tool_name!r} must be 1-64 characters of a-z A-Z 0-9 _ -")
        if tool_name in _TOOLS:
            raise SchemaError(f"tool {tool_name!r} is declared twice")
        if schema is not None:
            doc_description = (f.__doc__ or "").strip()
            declared = _Declared(tool_name, description or doc_description, dict(schema), f, True, None)
        else:
            derived_description, derived = function_schema(f)
            declared = _Declared(
                tool_name, description or derived_description, derived, f, False, inspect.signature(f)
            )
        if not declared.description:
            raise SchemaError(f"tool {tool_name!r} needs a description: write a docstring or pass description=")
        _TOOLS[tool_name] = declared
        return f

    if func is not None:
        return register(func)
    return register


def describe() -> List[Dict[str, Any]]:
    """Every declared tool as ``{"name", "description", "input_schema"}``."""
    return [{"name": t.name, "description": t.description, "input_schema": t.schema} for t in _TOOLS.values()]


def call(name: str, input_json: str) -> str:
    """Run tool ``name`` on ``input_json``; return its output as JSON text.

    Raises a ``ToolFailure`` subclass for a tool error.
    """
    declared = _TOOLS.get(name)
    if declared is None:
        raise UnknownTool(f"no tool named {name!r}; this plugin has {sorted(_TOOLS)}")
    try:
        args = json.loads(input_json)
    except ValueError as e:
        raise InvalidInput(f"input is not JSON: {e}") from None
    if not isinstance(args, dict):
        raise InvalidInput("input must be a JSON object")
    if declared.signature is not None:
        try:  # the host validated against the schema; this catches a schema= that drifted
            declared.signature.bind(**args)
        except TypeError as e:
            raise InvalidInput(f"{name}: {e}") from None
    try:
        result = declared.func(args) if declared.raw_input else declared.func(**args)
    except ToolFailure:
        raise
    except PermissionError as e:
        raise Denied(str(e)) from None
    except Exception as e:
        raise Failed(_describe_exception(e)) from None
    try:
        return json.dumps(result, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise Failed(f"tool {name!r} returned a value that is not JSON: {e}") from None


# An error message is read by a person and a model, and the host caps it
# (8 KiB at most): the traceback keeps within a budget of its own.
_TRACEBACK_FRAMES = 10
_MESSAGE_CHARS = 1000
_TRACEBACK_CHARS = 3000
_SDK_FILE = os.path.abspath(__file__)


def _describe_exception(e: BaseException) -> str:
    """``Type: message``, then the traceback without this SDK's frames.

    The first line is the error itself (what a log line or a model reads
    first); the frames follow as Python prints them, innermost last. Only
    the innermost frames are kept when there are many.
    """
    message = str(e)
    if len(message) > _MESSAGE_CHARS:
        message = message[:_MESSAGE_CHARS] + f"... [{len(message) - _MESSAGE_CHARS} more characters]"
    head = f"{type(e).__name__}: {message}" if message else type(e).__name__
    frames = [f for f in traceback.extract_tb(e.__traceback__) if os.path.abspath(f.filename) != _SDK_FILE]
    if not frames:
        return head
    lines = []
    for f in frames[-_TRACEBACK_FRAMES:]:
        lines.append(f'  File "{f.filename}", line {f.lineno}, in {f.name}')
        if f.line:
            lines.append(f"    {f.line.strip()[:200]}")
    if len(frames) > _TRACEBACK_FRAMES:
        lines.insert(0, f"  ... {len(frames) - _TRACEBACK_FRAMES} outer frames left out")
    body = "\n".join(lines)
    if len(body) > _TRACEBACK_CHARS:
        body = "  ...\n" + body[-_TRACEBACK_CHARS:].split("\n", 1)[-1]
    return f"{head}\nTraceback (most recent call last):\n{body}"


def log(level: str, message: str) -> None:
    """Log ``message`` through the host at ``level`` (trace, debug, info, warn, error)."""
    if _IN_COMPONENT:
        levels = {
            "trace": _host.Level.TRACE,
            "debug": _host.Level.DEBUG,
            "info": _host.Level.INFO,
            "warn": _host.Level.WARN,
            "error": _host.Level.ERROR,
        }
        _host.log(levels.get(level, _host.Level.INFO), message)
    else:
        print(f"[{level}] {message}", file=sys.stderr)


def config(key: str) -> Optional[str]:
    """The value of ``key`` in the ``[config]`` table of the plugin's manifest, or None."""
    if _IN_COMPONENT:
        return _host.config(key)
    return _LOCAL_CONFIG.get(key)


def set_local_config(values: Dict[str, str]) -> None:
    """Set what ``config`` answers outside a component (for tests)."""
    _LOCAL_CONFIG.clear()
    _LOCAL_CONFIG.update(values)


class Tool(_ToolProtocol):  # type: ignore[misc,valid-type]
    """The ``tool`` export; re-export it from the plugin's module."""

    def describe(self):
        infos = []
        for t in _TOOLS.values():
            schema_json = json.dumps(t.schema, separators=(",", ":"))
            if _IN_COMPONENT:
                infos.append(_types.ToolInfo(name=t.name, description=t.description, input_schema=schema_json))
            else:
                infos.append({"name": t.name, "description": t.description, "input_schema": schema_json})
        return infos

    def call(self, name: str, input: str) -> str:
        try:
            return call(name, input)
        except ToolFailure as e:
            if not _IN_COMPONENT:
                raise
            message = str(e) or type(e).__name__
            variant = {
                "invalid_input": _types.ToolError_InvalidInput,
                "denied": _types.ToolError_Denied,
                "unknown_tool": _types.ToolError_UnknownTool,
            }.get(e.kind, _types.ToolError_Failed)
            raise Err(variant(message)) from None
