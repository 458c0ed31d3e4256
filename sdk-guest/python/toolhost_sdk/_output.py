"""A tool's result beside plain JSON: content parts and ``Output``.

Pure Python with no dependency on the generated bindings: the SDK turns
these into the contract's records in ``__init__``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, Iterable, Optional, Tuple, TypeVar, Union

T = TypeVar("T")


@dataclass(frozen=True)
class Text:
    """A text part, shown as it is."""

    text: str


@dataclass(frozen=True)
class Image:
    """An image part: its bytes and media type (``image/png``, ``image/jpeg``, ...)."""

    data: bytes
    media_type: str = "image/png"


@dataclass(frozen=True)
class Audio:
    """An audio part: its bytes and media type (``audio/wav``, ``audio/mpeg``, ...)."""

    data: bytes
    media_type: str


@dataclass(frozen=True)
class Resource:
    """A resource embedded in the result: its URI and its contents, text or bytes."""

    uri: str
    contents: Union[str, bytes]
    media_type: Optional[str] = None


Content = Union[Text, Image, Audio, Resource]

_NO_VALUE: Any = object()


class Output(Generic[T]):
    """A result with content parts: a structured value (optional) and parts in order.

    The value is what the tool's output schema describes (annotate the tool
    ``-> Output[Stats]`` to declare ``Stats``'s schema); the parts are what
    a person or a model that reads images looks at::

        return Output(Stats(words=3), content=[Image(png)])
        return Output(content=[Text("no structured value, just this")])
    """

    __slots__ = ("value", "content")

    def __init__(self, value: Any = _NO_VALUE, *, content: Iterable[Content] = ()) -> None:
        parts: Tuple[Content, ...] = tuple(content)
        for part in parts:
            if not isinstance(part, (Text, Image, Audio, Resource)):
                raise TypeError(f"a content part is Text, Image, Audio or Resource, not {type(part).__name__}")
            if isinstance(part, (Image, Audio)) and not isinstance(part.data, (bytes, bytearray, memoryview)):
                raise TypeError(f"{type(part).__name__}.data must be bytes, not {type(part.data).__name__}")
            if isinstance(part, Resource) and not isinstance(part.contents, (str, bytes, bytearray, memoryview)):
                raise TypeError(f"Resource.contents must be str or bytes, not {type(part.contents).__name__}")
        self.value = value
        self.content = parts

    @property
    def has_value(self) -> bool:
        """Whether the result has a structured value (``None`` is one: JSON ``null``)."""
        return self.value is not _NO_VALUE

    def __repr__(self) -> str:
        value = repr(self.value) if self.has_value else "no value"
        return f"Output({value}, content={list(self.content)!r})"
