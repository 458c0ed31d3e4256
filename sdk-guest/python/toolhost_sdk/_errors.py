"""The errors a tool raises to return a structured tool error."""

from __future__ import annotations


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
