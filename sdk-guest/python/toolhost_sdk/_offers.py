"""What a plugin offers besides tools (contract 0.3): resources, resource
templates, prompts and completions, declared as decorated functions::

    from toolhost_sdk import Completions, Prompts, Resources, completion, prompt, resource, resource_template

    @resource("notes://today", mime_type="text/markdown")
    def today() -> str:
        \"\"\"Today's notes.\"\"\"
        return "# Today\\n\\nBuy milk."

    @resource_template("notes://day/{day}", mime_type="text/plain")
    def day(day: str) -> str:
        \"\"\"The notes of one day.\"\"\"
        return f"Nothing on {day}."

    @prompt
    def notes_summary(day: str, tone: str = "plain") -> str:
        \"\"\"Summarise a day's notes.

        Args:
            day: Which day.
            tone: How to write.
        \"\"\"
        return f"Summarise the notes of {day}, {tone}."

    @completion(prompt="notes_summary", argument="day")
    def days(value: str, context: dict) -> list:
        return [d for d in ("monday", "tuesday") if d.startswith(value)]

A read returns text (``str``), bytes, or ``Resource`` parts; a prompt
returns text (one user message), a ``Message`` or a list of them; a
completion a list of values or a ``Completion``. Raise ``NotFound``,
``InvalidInput``, ``Failed`` or ``Denied`` for an error. The plugin module
re-exports ``Resources``, ``Prompts`` and ``Completions`` (the classes
componentize-py looks for) and is built against contract 0.3 (``wit/0.2``
and ``wit/0.3``, worlds ``plugin`` and ``offers`` merged); a plugin that
declares none of these is built as before.

Outside a component ``read_resource``, ``get_prompt`` and ``complete`` run
them, for an author's own tests.
"""

from __future__ import annotations

import inspect
import re
import urllib.parse
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, TypeVar, Union

from . import _bindings
from ._errors import Denied, Failed, InvalidInput, ToolFailure
from ._output import Audio, Content, Image, Resource, Text
from ._schema import SchemaError, parse_docstring

F = TypeVar("F", bound=Callable[..., Any])


class NotFound(ToolFailure):
    """No such resource, prompt or argument (an offer's ``not-found`` error)."""

    kind = "not_found"


@dataclass(frozen=True)
class Message:
    """One message of a rendered prompt: its content (text, or a content part) and who speaks it."""

    content: Union[str, Content]
    role: str = "user"

    def __post_init__(self) -> None:
        if self.role not in ("user", "assistant"):
            raise ValueError(f"a message's role is 'user' or 'assistant', not {self.role!r}")
        if not isinstance(self.content, (str, Text, Image, Audio, Resource)):
            raise TypeError(f"a message holds a str, Text, Image, Audio or Resource, not {type(self.content).__name__}")


@dataclass(frozen=True)
class Completion:
    """What completing an argument answers: values, best first."""

    values: Sequence[str]
    total: Optional[int] = None
    has_more: bool = False


@dataclass(frozen=True)
class _Offered:
    uri: str
    name: str
    description: Optional[str]
    mime_type: Optional[str]
    func: Callable[..., Any]
    pattern: Optional["re.Pattern[str]"]  # a template's, None for a resource


@dataclass(frozen=True)
class _Prompt:
    name: str
    description: Optional[str]
    arguments: Tuple[Tuple[str, Optional[str], bool], ...]
    func: Callable[..., Any]


_RESOURCES: Dict[str, _Offered] = {}
_TEMPLATES: Dict[str, _Offered] = {}
_PROMPTS: Dict[str, _Prompt] = {}
_COMPLETERS: Dict[Tuple[str, str, str], Callable[[str, Dict[str, str]], Any]] = {}

_VARIABLE = re.compile(r"\{([A-Za-z0-9_]+)\}")
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _check_uri(uri: str, what: str) -> None:
    scheme, sep, _ = uri.partition("://")
    if not sep or not scheme:
        raise SchemaError(f"{what} {uri!r} needs a scheme: write it as SCHEME://..., SCHEME the plugin's name with _ as -")


def _described(f: Callable[..., Any], description: Optional[str]) -> Optional[str]:
    return description or parse_docstring(f.__doc__)[0] or None


def resource(uri: str, *, name: Optional[str] = None, description: Optional[str] = None, mime_type: Optional[str] = None) -> Callable[[F], F]:
    """Declare a resource at ``uri``: the function, called without arguments, reads it.

    ``name`` defaults to the function's name, ``description`` to its
    docstring (without an ``Args:`` section), as a tool's does.
    """

    def register(f: F) -> F:
        _check_uri(uri, "resource")
        if uri in _RESOURCES:
            raise SchemaError(f"resource {uri!r} is declared twice")
        _RESOURCES[uri] = _Offered(uri, name or f.__name__, _described(f, description), mime_type, f, None)
        return f

    return register


def resource_template(uri: str, *, name: Optional[str] = None, description: Optional[str] = None, mime_type: Optional[str] = None) -> Callable[[F], F]:
    """Declare a resource template: ``uri`` holds variables (``notes://day/{day}``, RFC 6570 level 1).

    A read of a URI it matches calls the function with each variable as a
    keyword argument (a string), so its parameters are the variables' names.
    """

    def register(f: F) -> F:
        _check_uri(uri, "resource template")
        variables = _VARIABLE.findall(uri)
        if not variables:
            raise SchemaError(f"resource template {uri!r} has no {{variable}}; declare it with @resource")
        if uri in _TEMPLATES:
            raise SchemaError(f"resource template {uri!r} is declared twice")
        parameters = inspect.signature(f).parameters
        missing = [v for v in variables if v not in parameters]
        if missing and not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
            raise SchemaError(f"resource template {uri!r}: {f.__name__} takes no parameter for {missing}")
        regex, last = "", 0
        for m in _VARIABLE.finditer(uri):
            regex += re.escape(uri[last : m.start()]) + f"(?P<{m.group(1)}>[^/?#]*)"
            last = m.end()
        pattern = re.compile(regex + re.escape(uri[last:]))
        _TEMPLATES[uri] = _Offered(uri, name or f.__name__, _described(f, description), mime_type, f, pattern)
        return f

    return register


def prompt(func: Optional[F] = None, *, name: Optional[str] = None, description: Optional[str] = None) -> Any:
    """Declare a prompt: its arguments are the function's parameters (strings;
    required unless they have a default), described by the docstring's
    ``Args:`` section. ``@prompt`` or ``@prompt(name=..., description=...)``.
    """

    def register(f: F) -> F:
        prompt_name = name or f.__name__
        if not _NAME.fullmatch(prompt_name):
            raise SchemaError(f"prompt name {prompt_name!r} must be 1-64 characters of a-z A-Z 0-9 _ -")
        if prompt_name in _PROMPTS:
            raise SchemaError(f"prompt {prompt_name!r} is declared twice")
        summary, arg_docs = parse_docstring(f.__doc__)
        arguments = tuple(
            (p.name, arg_docs.get(p.name), p.default is inspect.Parameter.empty)
            for p in inspect.signature(f).parameters.values()
            if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        )
        _PROMPTS[prompt_name] = _Prompt(prompt_name, description or summary or None, arguments, f)
        return f

    if func is not None:
        return register(func)
    return register


def completion(*, argument: str, prompt: Optional[str] = None, template: Optional[str] = None) -> Callable[[F], F]:
    """Declare how to complete ``argument`` of a prompt (``prompt=NAME``) or a
    template's variable (``template=URI_TEMPLATE``). The function gets the
    value typed so far and the arguments filled in already (a dict), and
    returns the values that fit, best first (or a ``Completion``).
    """
    if (prompt is None) == (template is None):
        raise SchemaError("@completion needs one of prompt= or template=")
    key = ("prompt", prompt, argument) if prompt is not None else ("template", template, argument)

    def register(f: F) -> F:
        if key in _COMPLETERS:
            raise SchemaError(f"a completion of {key[0]} {key[1]!r} argument {argument!r} is declared twice")
        _COMPLETERS[key] = f  # type: ignore[assignment]
        return f

    return register


def offers_anything() -> bool:
    """Whether this plugin declared any resource, template, prompt or completion."""
    return bool(_RESOURCES or _TEMPLATES or _PROMPTS or _COMPLETERS)


# --- what the exports do, in plain Python -------------------------------


def read_resource(uri: str, vars: Optional[Dict[str, str]] = None) -> List[Resource]:
    """Read ``uri``: a declared resource, or a URI one of the templates matches.

    ``vars`` are the template's variables as the host matched them; without
    them the SDK matches the templates itself (and decodes the values).
    """
    offered = _RESOURCES.get(uri)
    args: Dict[str, str] = {}
    if offered is None:
        for template in _TEMPLATES.values():
            m = template.pattern.fullmatch(uri) if template.pattern else None
            if m is not None:
                offered = template
                args = dict(vars) if vars else {k: urllib.parse.unquote(v) for k, v in m.groupdict().items()}
                break
    if offered is None:
        raise NotFound(f"this plugin has no resource {uri!r} and no template matches it")
    result = _run(offered.func, args, f"resource {uri!r}")
    return _parts(uri, offered.mime_type, result)


def _parts(uri: str, mime_type: Optional[str], result: Any) -> List[Resource]:
    if isinstance(result, str):
        return [Resource(uri, result, mime_type or "text/plain")]
    if isinstance(result, (bytes, bytearray, memoryview)):
        return [Resource(uri, bytes(result), mime_type or "application/octet-stream")]
    if isinstance(result, Resource):
        return [result]
    if isinstance(result, (list, tuple)) and all(isinstance(p, Resource) for p in result):
        return list(result)
    raise Failed(f"resource {uri!r} returned {type(result).__name__}; return str, bytes, a Resource or a list of Resource")


def get_prompt(name: str, arguments: Optional[Dict[str, str]] = None) -> List[Message]:
    """Render prompt ``name`` with ``arguments``: its messages."""
    declared = _PROMPTS.get(name)
    if declared is None:
        raise NotFound(f"this plugin has no prompt {name!r}; it has {sorted(_PROMPTS)}")
    args = dict(arguments or {})
    known = {a[0] for a in declared.arguments}
    unknown = sorted(set(args) - known)
    if unknown:
        raise InvalidInput(f"prompt {name!r} takes no argument {unknown}; it takes {sorted(known)}")
    missing = [a[0] for a in declared.arguments if a[2] and a[0] not in args]
    if missing:
        raise InvalidInput(f"prompt {name!r} needs the argument(s) {missing}")
    result = _run(declared.func, args, f"prompt {name!r}")
    if isinstance(result, (str, Message)):
        result = [result]
    if not isinstance(result, (list, tuple)):
        raise Failed(f"prompt {name!r} returned {type(result).__name__}; return str, a Message or a list of Message")
    return [m if isinstance(m, Message) else Message(m) for m in result]


def complete(argument: str, value: str, *, prompt: Optional[str] = None, template: Optional[str] = None, context: Optional[Dict[str, str]] = None) -> Completion:
    """Values for ``argument`` of a prompt or template that fit ``value``; none when nothing completes it."""
    key = ("prompt", prompt, argument) if prompt is not None else ("template", template, argument)
    completer = _COMPLETERS.get(key)
    if completer is None:
        return Completion(values=[], total=0)
    what = f"completion of {key[0]} {key[1]!r} argument {argument!r}"
    try:
        result = completer(value, dict(context or {}))
    except ToolFailure:
        raise
    except PermissionError as e:
        raise Denied(str(e)) from None
    except Exception as e:
        raise Failed(f"{what}: {type(e).__name__}: {e}") from None
    if isinstance(result, Completion):
        return result
    if isinstance(result, (list, tuple)) and all(isinstance(v, str) for v in result):
        return Completion(values=list(result), total=len(result))
    raise Failed(f"{what} returned {type(result).__name__}; return a list of str or a Completion")


def _run(func: Callable[..., Any], args: Dict[str, str], what: str) -> Any:
    try:
        return func(**args)
    except ToolFailure:
        raise
    except PermissionError as e:
        raise Denied(str(e)) from None
    except Exception as e:
        raise Failed(f"{what}: {type(e).__name__}: {e}") from None


# --- the exports: the above in the contract's types ----------------------

_offer_types = _bindings.offer_types


def _wit_error(e: ToolFailure) -> Any:
    variant = {
        "not_found": _offer_types.OfferError_NotFound,
        "unknown_tool": _offer_types.OfferError_NotFound,
        "invalid_input": _offer_types.OfferError_InvalidInput,
        "denied": _offer_types.OfferError_Denied,
    }.get(e.kind, _offer_types.OfferError_Failed)
    return _bindings.Err(variant(str(e) or type(e).__name__))


def _wit_part(p: Resource) -> Any:
    if isinstance(p.contents, str):
        contents = _offer_types.Contents_Text(p.contents)
    else:
        contents = _offer_types.Contents_Blob(bytes(p.contents))
    return _offer_types.ResourcePart(uri=p.uri, mime_type=p.media_type, contents=contents)


def _wit_message(m: Message) -> Any:
    c = m.content
    t = _offer_types
    if isinstance(c, str):
        part = t.Part_Text(c)
    elif isinstance(c, Text):
        part = t.Part_Text(c.text)
    elif isinstance(c, Image):
        part = t.Part_Image(t.Media(media_type=c.media_type, data=bytes(c.data)))
    elif isinstance(c, Audio):
        part = t.Part_Audio(t.Media(media_type=c.media_type, data=bytes(c.data)))
    else:
        part = t.Part_Resource(_wit_part(c))
    return t.Message(role=t.Role.USER if m.role == "user" else t.Role.ASSISTANT, content=part)


class Resources(_bindings.ResourcesProtocol):  # type: ignore[misc,valid-type]
    """The ``resources`` export (contract 0.3); re-export it from the plugin's module."""

    def list_resources(self):
        return [_offer_types.ResourceInfo(uri=r.uri, name=r.name, description=r.description, mime_type=r.mime_type, meta=None) for r in _RESOURCES.values()]

    def list_templates(self):
        return [_offer_types.TemplateInfo(uri=r.uri, name=r.name, description=r.description, mime_type=r.mime_type, meta=None) for r in _TEMPLATES.values()]

    def read(self, uri, vars):
        try:
            return [_wit_part(p) for p in read_resource(uri, dict(vars))]
        except ToolFailure as e:
            raise _wit_error(e) from None


class Prompts(_bindings.PromptsProtocol):  # type: ignore[misc,valid-type]
    """The ``prompts`` export (contract 0.3); re-export it from the plugin's module."""

    def list_prompts(self):
        return [
            _offer_types.PromptInfo(
                name=p.name,
                description=p.description,
                arguments=[_offer_types.PromptArgument(name=n, description=d, required=r) for n, d, r in p.arguments],
                meta=None,
            )
            for p in _PROMPTS.values()
        ]

    def get(self, name, arguments):
        try:
            messages = get_prompt(name, dict(arguments))
        except ToolFailure as e:
            raise _wit_error(e) from None
        return _offer_types.PromptReply(description=_PROMPTS[name].description, messages=[_wit_message(m) for m in messages])


class Completions(_bindings.CompletionsProtocol):  # type: ignore[misc,valid-type]
    """The ``completions`` export (contract 0.3); re-export it from the plugin's module."""

    def complete(self, target, argument, value, context):
        kind = {"prompt": target.value} if isinstance(target, _bindings.TargetPrompt) else {"template": target.value}
        try:
            c = complete(argument, value, context=dict(context), **kind)
        except ToolFailure as e:
            raise _wit_error(e) from None
        return _offer_types.Completion(values=list(c.values), total=c.total, has_more=c.has_more)
