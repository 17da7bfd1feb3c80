"""A small MCP server for tests/mcp_clients/selfcheck.sh, built on the official Python SDK.

Usage: python selfcheck_server.py PORT REQUEST_LOG
Runs with either SDK line: under 1.x (.venv-mcp) it is FastMCP and speaks the initialize-handshake
revisions only; under 2.x (.venv-mcp-client) it is MCPServer and also answers 2026-07-28
(server/discover, subscriptions/listen).
- Tools: echo(text) and add_tool(name); add_tool adds a tool NAME (which answers "third:<text>")
  and tells the client the tool list changed: on the session's GET stream (2025 revisions) and
  on subscriptions/listen streams (2026-07-28).
- tools/list is paginated, one tool per page (nextCursor "1", "2", ...), sorted by name.
- Calling an unknown tool answers the JSON-RPC error -32602 (Invalid params), as the spec says.
- MCP_TOKEN=t requires `Authorization: Bearer t` on every HTTP request (401 otherwise).
- REQUEST_LOG gets one JSON line per HTTP request: method, status, whether the bearer token
  matched, the Mcp-Session-Id and MCP-Protocol-Version headers, and the JSON-RPC methods posted.
"""

import json
import os
import sys
from importlib.metadata import version

import uvicorn

PAGE_SIZE = 1
port = int(sys.argv[1])
request_log = open(sys.argv[2], "a", buffering=1)
token = os.environ.get("MCP_TOKEN")
SDK_VERSION = version("mcp")


def page_of(tools, cursor):
    tools = sorted(tools, key=lambda t: t.name)
    start = int(cursor) if cursor else 0
    end = start + PAGE_SIZE
    return tools[start:end], (str(end) if end < len(tools) else None)


def third(text: str = "") -> str:
    """A tool that add_tool added while the server ran."""
    return f"third:{text}"


if int(SDK_VERSION.split(".")[0]) >= 2:
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.shared.exceptions import MCPError
    from mcp_types import INVALID_PARAMS, ListToolsResult, ToolAnnotations
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    class SelfcheckServer(MCPServer):
        async def _handle_list_tools(self, ctx, params):
            tools, next_cursor = page_of(await self.list_tools(), params.cursor if params else None)
            return ListToolsResult(tools=tools, next_cursor=next_cursor)

        async def _handle_call_tool(self, ctx, params):
            if self._tool_manager.get_tool(params.name) is None:
                raise MCPError(INVALID_PARAMS, f"Unknown tool: {params.name}")
            return await super()._handle_call_tool(ctx, params)

    mcp = SelfcheckServer("selfcheck", version=SDK_VERSION, log_level="WARNING")

    async def notify_tools_changed(ctx: Context) -> None:
        await ctx.notify_tools_changed()  # subscriptions/listen streams (2026-07-28)
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            await ctx.session.send_tool_list_changed()  # the session's GET stream (2025 revisions)

else:
    from mcp import types
    from mcp.server.fastmcp import Context, FastMCP
    from mcp.server.lowlevel import NotificationOptions
    from mcp.shared.exceptions import McpError
    from mcp.types import ToolAnnotations

    mcp = FastMCP("selfcheck", host="127.0.0.1", port=port, log_level="WARNING")
    # FastMCP advertises tools.listChanged false; this server does send it.
    _init_options = mcp._mcp_server.create_initialization_options
    mcp._mcp_server.create_initialization_options = lambda notification_options=None, experimental=None: (
        _init_options(NotificationOptions(tools_changed=True), experimental)
    )

    @mcp._mcp_server.list_tools()
    async def paged_tools(request: types.ListToolsRequest) -> types.ListToolsResult:
        tools, next_cursor = page_of(await mcp.list_tools(), request.params.cursor if request.params else None)
        return types.ListToolsResult(tools=tools, nextCursor=next_cursor)

    # FastMCP turns every failure of a call, an unknown tool too, into an isError result.
    _call_tool = mcp._mcp_server.request_handlers[types.CallToolRequest]

    async def strict_call_tool(request: types.CallToolRequest):
        if mcp._tool_manager.get_tool(request.params.name) is None:
            raise McpError(types.ErrorData(code=types.INVALID_PARAMS, message=f"Unknown tool: {request.params.name}"))
        return await _call_tool(request)

    mcp._mcp_server.request_handlers[types.CallToolRequest] = strict_call_tool

    async def notify_tools_changed(ctx: Context) -> None:
        await ctx.session.send_tool_list_changed()  # no related request: the session's GET stream


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@mcp.tool()
async def add_tool(name: str, ctx: Context) -> str:
    """Add a tool called NAME, then tell the client that the tool list changed."""
    mcp.add_tool(third, name=name)
    await notify_tools_changed(ctx)
    return f"added {name}"


app = mcp.streamable_http_app()


async def logged(scope, receive, send):
    if scope["type"] != "http":
        await app(scope, receive, send)
        return
    headers = dict(scope["headers"])
    authorized = headers.get(b"authorization") == f"Bearer {token}".encode() if token else True
    body = bytearray()
    entry = {
        "method": scope["method"],
        "path": scope["path"],
        "auth": authorized,
        "session": (headers.get(b"mcp-session-id") or b"").decode() or None,
        "version": (headers.get(b"mcp-protocol-version") or b"").decode() or None,
    }

    async def logging_receive():
        message = await receive()
        if message["type"] == "http.request":
            body.extend(message.get("body", b""))
        return message

    async def logging_send(message):
        if message["type"] == "http.response.start":
            entry["status"] = message["status"]
            try:
                posted = json.loads(body) if body else []
                entry["rpc"] = [m.get("method", "response") for m in (posted if isinstance(posted, list) else [posted])]
            except ValueError:
                entry["rpc"] = ["<unparsable>"]
            request_log.write(json.dumps(entry) + "\n")
        await send(message)

    if not authorized:
        await logging_send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"missing or wrong token"})
        return
    await app(scope, logging_receive, logging_send)


uvicorn.run(logged, host="127.0.0.1", port=port, log_level="warning")
