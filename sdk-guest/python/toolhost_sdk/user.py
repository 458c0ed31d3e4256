"""Ask the person behind the call a question::

    from typing import TypedDict
    from toolhost_sdk import Failed, user

    class Confirm(TypedDict):
        \"\"\"Attributes:
            branch: Type the branch name to confirm.
        \"\"\"
        branch: str

    answer = user.ask("Force-push over `main`?", Confirm)
    if not answer.accepted or answer.content["branch"] != "main":
        raise Failed("the user did not confirm the force-push")

The question's shape is a flat object of strings, numbers, integers,
booleans and string enums (MCP elicitation's): a ``TypedDict`` or dataclass
of those fields, or that JSON Schema as a dict. The call waits for the
answer; the wait does not count against the call's deadline (the question
has its own time limit, after which the answer is ``cancel``).

When no one can be asked (an MCP client without elicitation, no terminal, a
program with no one to ask), ``ask`` raises ``Unavailable``: catch it to go
on without the answer. Left uncaught, it (like every ``AskError``) becomes
the tool's ``failed`` error, whose message names the question the tool
needed answered.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Dict, Literal, Optional, Union

from . import _bindings
from ._errors import ToolFailure
from ._schema import type_schema

# The question text in an AskError's message: enough to know which question.
_QUESTION_CHARS = 200


@dataclass(frozen=True)
class Answer:
    """What the person answered: ``accept`` with ``content`` (the form's values), ``decline`` or ``cancel``."""

    action: Literal["accept", "decline", "cancel"]
    content: Optional[Dict[str, Any]] = None

    @property
    def accepted(self) -> bool:
        return self.action == "accept"


class AskError(ToolFailure):
    """``ask`` got no answer. Uncaught, the tool fails with this message."""

    kind = "failed"
    reason = "unavailable"

    def __init__(self, question: str, detail: str) -> None:
        shown = question if len(question) <= _QUESTION_CHARS else question[:_QUESTION_CHARS] + "..."
        super().__init__(f"the tool needed an answer to {shown!r} and could not ask: {detail}")
        self.question = question
        self.detail = detail


class Unavailable(AskError):
    """No one can be asked here. Go on without the answer, or fail saying what input was needed."""

    reason = "unavailable"


class OverBudget(AskError):
    """The call already asked as many questions as the host allows."""

    reason = "over_budget"


class InvalidQuestion(AskError):
    """The question's schema is not a flat object of primitive fields, is too large, or the answer did not fit it."""

    reason = "invalid_question"


Schema = Union[Dict[str, Any], type]
LocalAnswerer = Callable[[str, Dict[str, Any]], Answer]

_LOCAL_ANSWERER: Optional[LocalAnswerer] = None


def ask(message: str, schema: Schema) -> Answer:
    """Ask ``message``, with a form shaped by ``schema``; wait for the answer.

    Raises ``Unavailable``, ``OverBudget`` or ``InvalidQuestion`` (all
    ``AskError``) when there is no answer to give.
    """
    if not isinstance(message, str):
        raise TypeError(f"the question must be a string, not {type(message).__name__}")
    form = schema if isinstance(schema, dict) else type_schema(schema, "user.ask schema")
    if _bindings.SERIES == "local":
        if _LOCAL_ANSWERER is None:
            raise Unavailable(message, "no one to ask outside a toolhost; set one with user.set_local_answerer")
        return _LOCAL_ANSWERER(message, form)
    if _bindings.SERIES != "0.2":
        raise Unavailable(message, "this plugin is built against contract 0.1, which cannot ask; build it against wit/0.2")
    wit = _bindings.user
    try:
        answer = wit.ask(message, json.dumps(form, separators=(",", ":")))
    except _bindings.Err as e:
        error = e.value
        detail = str(getattr(error, "value", "")) or type(error).__name__
        if isinstance(error, wit.AskError_OverBudget):
            raise OverBudget(message, detail) from None
        if isinstance(error, wit.AskError_InvalidSchema):
            raise InvalidQuestion(message, detail) from None
        raise Unavailable(message, detail) from None
    if isinstance(answer, wit.Answer_Accept):
        try:
            content = json.loads(answer.value)
        except ValueError as e:
            raise InvalidQuestion(message, f"the answer is not JSON: {e}") from None
        if not isinstance(content, dict):
            raise InvalidQuestion(message, "the answer is not a JSON object")
        return Answer("accept", content)
    if isinstance(answer, wit.Answer_Decline):
        return Answer("decline")
    return Answer("cancel")


def set_local_answerer(answerer: Optional[LocalAnswerer]) -> None:
    """Under plain CPython (an author's tests), answer questions with ``answerer(message, schema)``."""
    global _LOCAL_ANSWERER
    _LOCAL_ANSWERER = answerer
