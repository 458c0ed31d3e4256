"""An MCP server (stdio) whose tool list changes: the official Python SDK's
`MCPServer`, for the tests of `[[mcp]]` servers whose tools come and go.

    python3 growing.py

Lists `grow`. Calling `grow` adds the tool `grown` (which answers
{"grown": true}) and sends notifications/tools/list_changed.
"""

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("growing")


def grown() -> dict:
    """Exists only after `grow` was called."""
    return {"grown": True}


@server.tool()
async def grow(ctx: Context) -> str:
    """Adds the tool `grown` and tells the client its tool list changed."""
    server.add_tool(grown)
    await ctx.session.send_tool_list_changed()
    return "grown is listed now"


if __name__ == "__main__":
    server.run("stdio")
