"""The generated bindings, when running inside a component, and which contract series they are.

componentize-py generates ``wit_world`` for the world the plugin is built
against: ``wit/0.2`` (``toolhost:plugin@0.2.0``, the default) or ``wit/``
(``toolhost:plugin@0.1.0``, JSON results only), and with ``wit/0.3``'s
``offers`` world merged in, the ``resources``, ``prompts`` and
``completions`` exports of contract 0.3 (``OFFERS``). Under plain CPython
there are none and the SDK uses local stand-ins.
"""

from __future__ import annotations

from typing import Any

host: Any = None
types: Any = None
progress: Any = None
user: Any = None
Err: Any = None
ToolProtocol: Any = object
offer_types: Any = None
ResourcesProtocol: Any = object
PromptsProtocol: Any = object
CompletionsProtocol: Any = object
TargetPrompt: Any = None

try:
    from componentize_py_types import Err  # type: ignore[no-redef]  # noqa: F811
    from wit_world.exports import Tool as ToolProtocol  # type: ignore[no-redef]  # noqa: F811
    from wit_world.imports import host  # type: ignore[no-redef]  # noqa: F811
    from wit_world.imports import types  # type: ignore[no-redef]  # noqa: F811

    IN_COMPONENT = True
except ImportError:
    IN_COMPONENT = False

# Series 0.2 imports `progress` and `user`; 0.1 has neither.
try:
    from wit_world.imports import progress  # type: ignore[no-redef]  # noqa: F811
    from wit_world.imports import user  # type: ignore[no-redef]  # noqa: F811

    SERIES = "0.2"
except ImportError:
    SERIES = "0.1" if IN_COMPONENT else "local"

# Contract 0.3's exports, when the plugin is built with them.
try:
    from wit_world.exports import Completions as CompletionsProtocol  # type: ignore[no-redef]  # noqa: F811
    from wit_world.exports import Prompts as PromptsProtocol  # type: ignore[no-redef]  # noqa: F811
    from wit_world.exports import Resources as ResourcesProtocol  # type: ignore[no-redef]  # noqa: F811
    from wit_world.exports.completions import Target_Prompt as TargetPrompt  # type: ignore[no-redef]  # noqa: F811
    from wit_world.imports import offer_types  # type: ignore[no-redef]  # noqa: F811

    OFFERS = True
except ImportError:
    OFFERS = False
