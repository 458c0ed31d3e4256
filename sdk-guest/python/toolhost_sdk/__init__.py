"""Write toolhost tools in Python as plain functions.

A plugin is one module that declares its tools with ``@tool`` and re-exports
``Tool`` (the class componentize-py looks for)::

    from typing import Literal, TypedDict
    from toolhost_sdk import Tool, tool, InvalidInput, progress

    class Greeting(TypedDict):
        greeting: str

    @tool
    def py_greet(name: str, style: Literal["short", "long"] = "short") -> Greeting:
        \"\"\"Greet someone.

        Args:
            name: Who to greet.
            style: How much to say.
        \"\"\"
        if not name:
            raise InvalidInput("name must not be empty")
        progress.report(1, 1, "greeted")
        return {"greeting": f"Hello, {name}!"}

The input schema comes from the signature (see ``_schema.py`` for the types
that map), the description from the docstring, the output schema from the
return annotation when it is a ``TypedDict`` or dataclass (the host checks
every result against it), and the return value is sent back as JSON. Return
an ``Output`` to add content parts (``Image``, ``Audio``, ``Text``,
``Resource``) beside or instead of the JSON. ``progress.report`` tells the
caller how far a long call is; ``user.ask`` asks the person behind the call.
Resources, resource templates, prompts and completions (contract 0.3) are
declared with ``@resource``, ``@resource_template``, ``@prompt`` and
``@completion`` (see ``_offers.py``).

Raise ``InvalidInput``, ``Failed`` or ``Denied`` to return a structured tool
error; any other exception becomes ``Failed`` with its type, message and
traceback (file and line of each frame, innermost last, bounded) so that
``toolhost call`` shows where it was raised (a ``PermissionError`` becomes
``Denied``).

Outside a component (plain CPython, for an author's own tests) the module
still works: ``call`` / ``call_output`` run a tool by name, ``log`` writes to
stderr, ``config`` reads from ``set_local_config``, progress goes to
``progress.set_local_listener`` and questions to
``user.set_local_answerer``.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
import sys
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple, TypeVar, Union, overload

from . import _bindings, progress, user
from ._errors import Denied, Failed, InvalidInput, ToolFailure, UnknownTool
from ._offers import (
    Completion,
    Completions,
    Message,
    NotFound,
    Prompts,
    Resources,
    complete,
    completion,
    get_prompt,
    prompt,
    read_resource,
    resource,
    resource_template,
)
from ._output import Audio, Content, Image, Output, Resource, Text
from ._schema import SchemaError, function_schema, output_schema, return_schema, type_schema

__all__ = [
    "Tool",
    "tool",
    "Annotations",
    "Output",
    "Text",
    "Image",
    "Audio",
    "Resource",
    "ToolFailure",
    "InvalidInput",
    "Failed",
    "Denied",
    "log",
    "config",
    "progress",
    "user",
    "call",
    "call_output",
    "describe",
    "set_local_config",
    "SchemaError",
    "type_schema",
    # Contract 0.3: what a plugin offers besides tools (``_offers.py``).
    "Resources",
    "Prompts",
    "Completions",
    "resource",
    "resource_template",
    "prompt",
    "completion",
    "Message",
    "Completion",
    "NotFound",
    "read_resource",
    "get_prompt",
    "complete",
]

_IN_COMPONENT = _bindings.IN_COMPONENT
_types = _bindings.types
_host = _bindings.host


@dataclass(frozen=True)
class Annotations:
    """Hints about how a tool behaves, for clients and people (MCP's tool annotations).

    Hints only, never a grant: what needs a person's approval is the
    operator's policy. Leave a hint out (None) when it does not apply.
    """

    title: Optional[str] = None
    read_only: Optional[bool] = None
    destructive: Optional[bool] = None
    idempotent: Optional[bool] = None
    open_world: Optional[bool] = None

    def as_dict(self) -> Dict[str, Any]:
        """The hints that are set, by field name."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}


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
    output_schema: Optional[Dict[str, Any]]
    annotations: Annotations
    # The describe() answer's schema texts, serialized once at import too.
    schema_json: str
    output_schema_json: Optional[str]


_TOOLS: Dict[str, _Declared] = {}
_LOCAL_CONFIG: Dict[str, str] = {}

F = TypeVar("F", bound=Callable[..., Any])
SchemaSource = Union[Dict[str, Any], type]


@overload
def tool(func: F) -> F: ...
@overload
def tool(
    *,
    name: Optional[str] = None,
    description: Optional[str] = None,
    schema: Optional[Dict[str, Any]] = None,
    output_schema: Optional[SchemaSource] = None,
    annotations: Optional[Annotations] = None,
) -> Callable[[F], F]: ...


def tool(func=None, *, name=None, description=None, schema=None, output_schema=None, annotations=None):
    """Declare a function as a tool.

    ``@tool`` derives everything from the function: the input schema from
    its parameters, the output schema from its return annotation when that
    is a ``TypedDict`` or dataclass (or ``Output[...]`` of one).
    ``@tool(name=..., description=..., schema=..., output_schema=...,
    annotations=...)`` overrides parts: with ``schema`` given, the function
    receives the whole input object as its one argument; ``output_schema``
    is a JSON Schema dict (an object schema) or a ``TypedDict``/dataclass.
    """

    def register(f):
        tool_name = name or f.__name__
        if not (1 <= len(tool_name) <= 64) or not all(c.isascii() and (c.isalnum() or c in "_-") for c in tool_name):
            raise SchemaError(f"tool name {tool_name!r} must be 1-64 characters of a-z A-Z 0-9 _ -")
        if tool_name in _TOOLS:
            raise SchemaError(f"tool {tool_name!r} is declared twice")
        if schema is not None:
            tool_description, input_schema = (f.__doc__ or "").strip(), dict(schema)
            signature = None
        else:
            tool_description, input_schema = function_schema(f)
            signature = inspect.signature(f)
        out = _declared_output_schema(tool_name, f, output_schema)
        hints = annotations if annotations is not None else Annotations()
        if not isinstance(hints, Annotations):
            raise SchemaError(f"tool {tool_name!r}: annotations must be an Annotations(...), not {type(hints).__name__}")
        declared = _Declared(
            name=tool_name,
            description=description or tool_description,
            schema=input_schema,
            func=f,
            raw_input=schema is not None,
            signature=signature,
            output_schema=out,
            annotations=hints,
            schema_json=json.dumps(input_schema, separators=(",", ":")),
            output_schema_json=None if out is None else json.dumps(out, separators=(",", ":")),
        )
        if not declared.description:
            raise SchemaError(f"tool {tool_name!r} needs a description: write a docstring or pass description=")
        _TOOLS[tool_name] = declared
        return f

    if func is not None:
        return register(func)
    return register


def _declared_output_schema(tool_name: str, f: Callable[..., Any], given: Optional[SchemaSource]) -> Optional[Dict[str, Any]]:
    if given is None:
        return return_schema(f)
    if isinstance(given, dict):
        if given.get("type") != "object":
            raise SchemaError(f"tool {tool_name!r}: an output schema's root must be an object schema (\"type\": \"object\")")
        return dict(given)
    derived = output_schema(given, f"{tool_name} output_schema")
    if derived is None:
        raise SchemaError(f"tool {tool_name!r}: output_schema must be a JSON Schema dict, a TypedDict or a dataclass")
    return derived


def describe() -> List[Dict[str, Any]]:
    """Every declared tool as ``{"name", "description", "input_schema", "output_schema", "annotations"}``."""
    return [
        {
            "name": t.name,
            "description": t.description,
            "input_schema": t.schema,
            "output_schema": t.output_schema,
            "annotations": t.annotations.as_dict(),
        }
        for t in _TOOLS.values()
    ]


def call(name: str, input_json: str) -> Optional[str]:
    """Run tool ``name`` on ``input_json``; return its structured result as JSON text.

    None when the result has no structured value (an ``Output`` of content
    parts only); ``call_output`` gives the content parts too. Raises a
    ``ToolFailure`` subclass for a tool error.
    """
    return _invoke(name, input_json)[0]


def call_output(name: str, input_json: str) -> Output:
    """Run tool ``name`` on ``input_json``; return its whole result.

    The ``Output``'s value is the structured result as the host gets it
    (dataclasses become dicts), and its content the parts in order.
    """
    text, parts = _invoke(name, input_json)
    if text is None:
        return Output(content=parts)
    return Output(json.loads(text), content=parts)


def _invoke(name: str, input_json: str) -> Tuple[Optional[str], Tuple[Content, ...]]:
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
    parts: Tuple[Content, ...] = ()
    if isinstance(result, Output):
        parts = result.content
        if not result.has_value:
            return None, parts
        result = result.value
    try:
        return json.dumps(result, ensure_ascii=False, allow_nan=False, default=_plain), parts
    except (TypeError, ValueError) as e:
        raise Failed(f"tool {name!r} returned a value that is not JSON: {e}") from None


def _plain(value: Any) -> Any:
    """A dataclass instance as a dict (json.dumps asks for what it cannot encode)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# An error message is read by a person and a model, and the host caps it
# (8 KiB at most): the traceback keeps within a budget of its own.
_TRACEBACK_FRAMES = 10
_MESSAGE_CHARS = 1000
_TRACEBACK_CHARS = 3000
_SDK_FILE = os.path.abspath(__file__)


def _shown_file(filename: str) -> str:
    """A frame's file as its author knows it.

    componentize-py puts each ``-p`` directory of the build at ``/0``,
    ``/1``, ... inside the component (those are its ``sys.path`` entries),
    so the plugin's ``app.py`` runs as ``/0/app.py``: a file under such a
    directory is shown by its path within it (``app.py``,
    ``helpers/util.py``). Any other path is shown as it is.
    """
    top, sep, rest = filename.lstrip("/").partition("/")
    if filename.startswith("/") and sep and top.isdigit() and rest and f"/{top}" in sys.path:
        return rest
    return filename


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
        lines.append(f'  File "{_shown_file(f.filename)}", line {f.lineno}, in {f.name}')
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


class Tool(_bindings.ToolProtocol):  # type: ignore[misc,valid-type]
    """The ``tool`` export; re-export it from the plugin's module.

    Built against contract 0.2 (``wit/0.2``, the default) it answers with the
    output schemas, annotations and content parts; built against 0.1
    (``wit/``) with JSON text only, and a result with content parts is a
    ``failed`` error that says to build against 0.2.
    """

    def describe(self):
        if _bindings.SERIES == "0.2":
            return [
                _types.ToolInfo(
                    name=t.name,
                    description=t.description,
                    input_schema=t.schema_json,
                    output_schema=t.output_schema_json,
                    annotations=_types.Annotations(
                        title=t.annotations.title,
                        read_only=t.annotations.read_only,
                        destructive=t.annotations.destructive,
                        idempotent=t.annotations.idempotent,
                        open_world=t.annotations.open_world,
                    ),
                    meta=None,
                )
                for t in _TOOLS.values()
            ]
        if _bindings.SERIES == "0.1":
            return [_types.ToolInfo(name=t.name, description=t.description, input_schema=t.schema_json) for t in _TOOLS.values()]
        return [{"name": t.name, "description": t.description, "input_schema": t.schema_json} for t in _TOOLS.values()]

    def call(self, name: str, input: str):
        try:
            text, parts = _invoke(name, input)
            if _bindings.SERIES == "0.2":
                return _types.ToolOutput(json=text, content=[_wit_content(p) for p in parts])
            if parts:
                raise Failed(
                    f"tool {name!r} returned content parts, but this plugin is built against contract 0.1 "
                    "(wit/), which carries JSON only; build it against wit/0.2"
                )
            return "null" if text is None else text
        except ToolFailure as e:
            if not _IN_COMPONENT:
                raise
            message = str(e) or type(e).__name__
            variant = {
                "invalid_input": _types.ToolError_InvalidInput,
                "denied": _types.ToolError_Denied,
                "unknown_tool": _types.ToolError_UnknownTool,
            }.get(e.kind, _types.ToolError_Failed)
            raise _bindings.Err(variant(message)) from None


def _wit_content(part: Content) -> Any:
    """One content part as the 0.2 contract's ``content`` variant."""
    if isinstance(part, Text):
        return _types.Content_Text(part.text)
    if isinstance(part, Image):
        return _types.Content_Image(_types.Media(media_type=part.media_type, data=bytes(part.data)))
    if isinstance(part, Audio):
        return _types.Content_Audio(_types.Media(media_type=part.media_type, data=bytes(part.data)))
    if isinstance(part.contents, str):
        contents = _types.ResourceContents_Text(part.contents)
    else:
        contents = _types.ResourceContents_Blob(bytes(part.contents))
    return _types.Content_Resource(_types.EmbeddedResource(uri=part.uri, media_type=part.media_type, contents=contents))
