"""Drives the official MCP Python SDK client against an MCP server over Streamable HTTP.

Speaks the line protocol of tests/mcp_clients/README.md on stdin/stdout; stderr carries logs.
Configuration (environment; the first two may also be given as argv[1] and argv[2]):
  MCP_URL               the endpoint, e.g. http://127.0.0.1:8080/mcp
  MCP_TOKEN             sent as `Authorization: Bearer <token>` on every HTTP request, through the
                        SDK's documented way: an HTTP client built with that default header and
                        handed to streamable_http_client(url, http_client=...)
  MCP_PROTOCOL_VERSION  optional: connect at exactly this revision or answer ready:false
  MCP_NEGOTIATION       optional, SDK 2.x only: "legacy" (initialize handshake only) or "auto"
                        (server/discover probe, falling back to initialize; the 2.x default)

Runs with the SDK's 2.x line (.venv-mcp-client, the pinned one) and with its 1.x line
(.venv-mcp); the two differ in how a client is built, nothing else of the protocol here.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from contextlib import AsyncExitStack
from datetime import timedelta
from importlib.metadata import version as dist_version
from typing import Any

import anyio

# Only emit() writes to the real stdout; anything else that prints (a library, a warning) lands
# on stderr, so the line protocol stays clean.
_STDOUT = sys.stdout
sys.stdout = sys.stderr
logging.basicConfig(
    stream=sys.stderr,
    level=os.environ.get("MCP_DRIVER_LOG", "WARNING").upper(),
    format="driver.py %(levelname)s %(name)s: %(message)s",
)
log = logging.getLogger("driver")

SDK_VERSION = dist_version("mcp")
SDK_MAJOR = int(SDK_VERSION.split(".")[0])
SDK_NAME = f"mcp {SDK_VERSION} (python)"
REQUEST_TIMEOUT_S = 60.0
TOOL_KEYS = ("name", "title", "description", "inputSchema", "outputSchema", "annotations", "_meta")


def emit(obj: dict[str, Any]) -> None:
    _STDOUT.write(json.dumps(obj, separators=(",", ":")) + "\n")
    _STDOUT.flush()


def dump(model: Any) -> Any:
    if model is None:
        return None
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def tool_json(tool: Any) -> dict[str, Any]:
    d = dump(tool)
    return {k: d.get(k) for k in TOOL_KEYS}


def leaf(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups from anyio task groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return str(value)


def error_json(exc: BaseException) -> dict[str, Any]:
    """A JSON-RPC error the SDK raised as McpError (1.x) / MCPError (2.x) keeps its code."""
    exc = leaf(exc)
    err = getattr(exc, "error", None)
    if err is not None and isinstance(getattr(err, "code", None), int) and hasattr(err, "message"):
        out: dict[str, Any] = {"code": err.code, "message": err.message}
        if getattr(err, "data", None) is not None:
            out["data"] = jsonable(err.data)
        return {"error": out}
    return {"error": {"code": None, "message": f"{type(exc).__name__}: {exc}"}}


class Changes:
    """Counts notifications/tools/list_changed delivered to the SDK's message_handler."""

    def __init__(self) -> None:
        self.count = 0
        self.event = anyio.Event()

    async def handler(self, message: Any) -> None:
        if isinstance(message, Exception):
            log.warning("transport error delivered to message_handler: %r", message)
            return
        root = getattr(message, "root", message)  # 1.x wraps notifications in a RootModel
        method = getattr(root, "method", None)
        log.info("message_handler: %s", method or type(root).__name__)
        if method == "notifications/tools/list_changed":
            self.count += 1
            self.event.set()

    def take(self) -> int:
        n, self.count, self.event = self.count, 0, anyio.Event()
        return n

    async def wait(self, timeout_ms: float) -> int:
        if self.count == 0:
            with anyio.move_on_after(max(timeout_ms, 0) / 1000):
                await self.event.wait()
        return self.take()


class HttpFailures:
    """Records an HTTP error status that came without a JSON-RPC body (a bare 401, say).

    The SDKs turn such a response into an exception that may not carry the status (2.x raises
    MCPError -32603 "Server returned an error response"); this hook on the driver's own HTTP
    client lets the driver add it to its answer as http_status. It only observes.
    """

    def __init__(self) -> None:
        self.status: int | None = None

    async def on_response(self, response: Any) -> None:
        content_type = response.headers.get("content-type", "").lower()
        if response.status_code >= 400 and not content_type.startswith("application/json"):
            self.status = response.status_code


class Setup(Exception):
    """A configuration the SDK cannot honour: answered as ready:false."""


def auth_headers(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def connect_v2(stack: AsyncExitStack, url: str, token: str, changes: Changes, failures: HttpFailures) -> Any:
    import httpx2
    import mcp_types as types
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION, MODERN_PROTOCOL_VERSIONS

    pinned = os.environ.get("MCP_PROTOCOL_VERSION") or None
    negotiation = os.environ.get("MCP_NEGOTIATION") or None
    if negotiation not in (None, "legacy", "auto"):
        raise Setup(f"MCP_NEGOTIATION must be legacy or auto, not {negotiation!r}")
    if pinned in MODERN_PROTOCOL_VERSIONS:
        mode = pinned  # adopts the revision with no wire traffic; the discover below checks it
    elif pinned in HANDSHAKE_PROTOCOL_VERSIONS:
        if pinned != LATEST_HANDSHAKE_VERSION:
            raise Setup(f"{SDK_NAME} always offers {LATEST_HANDSHAKE_VERSION} in initialize; it cannot pin {pinned}")
        mode = "legacy"
    elif pinned is not None:
        raise Setup(f"{SDK_NAME} does not know protocol version {pinned}")
    else:
        mode = negotiation or "auto"

    http = await stack.enter_async_context(
        httpx2.AsyncClient(
            headers=auth_headers(token),
            timeout=httpx2.Timeout(30.0, read=300.0),
            event_hooks={"response": [failures.on_response]},
        )
    )
    client = Client(
        streamable_http_client(url, http_client=http),
        mode=mode,
        message_handler=changes.handler,
        client_info=types.Implementation(name="toolgate-test-driver-python", version=SDK_VERSION),
        read_timeout_seconds=REQUEST_TIMEOUT_S,
        cache=None,  # every list goes to the wire; the tests observe the server, not a cache
    )
    await stack.enter_async_context(client)
    if pinned in MODERN_PROTOCOL_VERSIONS:
        discovered = types.DiscoverResult.model_validate(await client.session.send_discover(pinned))
        if pinned not in discovered.supported_versions:
            raise Setup(f"server/discover offers {discovered.supported_versions}, not {pinned}")
        client.session.adopt(discovered)

    negotiated = client.protocol_version
    if negotiated in MODERN_PROTOCOL_VERSIONS:
        # 2026-07-28 has no standing GET stream: change notifications arrive only on a
        # subscriptions/listen stream the client opens; the SDK tees them to message_handler.
        tools_cap = client.server_capabilities.tools
        if tools_cap is not None and tools_cap.list_changed:
            tg = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(tg.cancel_scope.cancel)
            await tg.start(listen_for_changes, client)
    return V2(client)


async def listen_for_changes(client: Any, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
    started = False
    try:
        async with client.listen(tools_list_changed=True) as sub:
            log.info("subscriptions/listen acknowledged: %s", sub.honored)
            task_status.started()
            started = True
            async for event in sub:
                log.info("listen event: %r", event)
    except Exception as exc:  # a lost listen stream leaves the driver running, without changes
        log.warning("subscriptions/listen failed: %r", exc)
        if not started:
            raise


class V2:
    def __init__(self, client: Any) -> None:
        self.client = client

    def ready(self) -> dict[str, Any]:
        c = self.client
        return {
            "ready": True,
            "protocol_version": c.protocol_version,
            "server_info": dump(c.server_info),
            "capabilities": dump(c.server_capabilities),
            "sdk": SDK_NAME,
        }

    async def list_page(self, cursor: str | None) -> tuple[list[Any], str | None]:
        page = await self.client.list_tools(cursor=cursor)
        return page.tools, page.next_cursor

    async def call(self, name: str, arguments: dict[str, Any] | None) -> Any:
        return await self.client.call_tool(name, arguments)


async def connect_v1(stack: AsyncExitStack, url: str, token: str, changes: Changes, failures: HttpFailures) -> Any:
    import httpx
    from mcp import ClientSession, types

    pinned = os.environ.get("MCP_PROTOCOL_VERSION") or None
    negotiation = os.environ.get("MCP_NEGOTIATION") or None
    if negotiation not in (None, "legacy"):
        raise Setup(f"{SDK_NAME} only has the initialize handshake (MCP_NEGOTIATION=legacy)")
    if pinned is not None and pinned != types.LATEST_PROTOCOL_VERSION:
        raise Setup(f"{SDK_NAME} always offers {types.LATEST_PROTOCOL_VERSION} in initialize; it cannot pin {pinned}")

    try:
        from mcp.client.streamable_http import streamable_http_client
    except ImportError:  # before 1.24: headers went to the (now deprecated) streamablehttp_client
        from mcp.client.streamable_http import streamablehttp_client

        streams = await stack.enter_async_context(streamablehttp_client(url, headers=auth_headers(token)))
    else:
        http = await stack.enter_async_context(
            httpx.AsyncClient(
                headers=auth_headers(token),
                timeout=httpx.Timeout(30.0, read=300.0),
                event_hooks={"response": [failures.on_response]},
            )
        )
        streams = await stack.enter_async_context(streamable_http_client(url, http_client=http))
    session = await stack.enter_async_context(
        ClientSession(
            streams[0],
            streams[1],
            read_timeout_seconds=timedelta(seconds=REQUEST_TIMEOUT_S),
            message_handler=changes.handler,
            client_info=types.Implementation(name="toolgate-test-driver-python", version=SDK_VERSION),
        )
    )
    return V1(session, await session.initialize())


class V1:
    def __init__(self, session: Any, init: Any) -> None:
        self.session = session
        self.init = init

    def ready(self) -> dict[str, Any]:
        return {
            "ready": True,
            "protocol_version": self.init.protocolVersion,
            "server_info": dump(self.init.serverInfo),
            "capabilities": dump(self.init.capabilities),
            "sdk": SDK_NAME,
        }

    async def list_page(self, cursor: str | None) -> tuple[list[Any], str | None]:
        page = await self.session.list_tools(cursor)
        return page.tools, page.nextCursor

    async def call(self, name: str, arguments: dict[str, Any] | None) -> Any:
        return await self.session.call_tool(name, arguments)


def result_json(result: Any) -> dict[str, Any]:
    d = dump(result)
    return {
        "result": {
            "content": d.get("content", []),
            "structuredContent": d.get("structuredContent"),
            "isError": bool(d.get("isError", False)),
        }
    }


async def answer(conn: Any, changes: Changes, cmd: dict[str, Any]) -> dict[str, Any]:
    op = cmd.get("op")
    if op == "list":
        tools: list[Any] = []
        cursor: str | None = None
        for _ in range(10_000):
            page, cursor = await conn.list_page(cursor)
            tools.extend(page)
            if cursor is None:
                return {"tools": [tool_json(t) for t in tools]}
        raise RuntimeError("tools/list did not end after 10000 pages")
    if op == "list_page":
        page, cursor = await conn.list_page(cmd.get("cursor"))
        return {"tools": [tool_json(t) for t in page], "next_cursor": cursor}
    if op == "call":
        return result_json(await conn.call(cmd["name"], cmd.get("arguments")))
    if op == "changes":
        return {"list_changed": changes.take()}
    if op == "wait_changed":
        return {"list_changed": await changes.wait(float(cmd.get("timeout_ms", 0)))}
    raise ValueError(f"unknown op {op!r}")


def with_status(answer: dict[str, Any], failures: HttpFailures) -> dict[str, Any]:
    if failures.status is not None:
        (answer["error"] if isinstance(answer.get("error"), dict) else answer)["http_status"] = failures.status
    return answer


async def read_line() -> str:
    return await anyio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True)


async def main() -> int:
    url = os.environ.get("MCP_URL") or (sys.argv[1] if len(sys.argv) > 1 else "")
    token = os.environ.get("MCP_TOKEN") or (sys.argv[2] if len(sys.argv) > 2 else "")
    changes = Changes()
    failures = HttpFailures()
    state = {"ready": False, "pending": False}
    try:
        async with AsyncExitStack() as stack:
            if not url or not token:
                raise Setup("MCP_URL and MCP_TOKEN are required")
            connect = connect_v2 if SDK_MAJOR >= 2 else connect_v1
            conn = await connect(stack, url, token, changes, failures)
            ready = conn.ready()
            pinned = os.environ.get("MCP_PROTOCOL_VERSION") or None
            if pinned is not None and ready["protocol_version"] != pinned:
                raise Setup(f"negotiated {ready['protocol_version']}, not the pinned {pinned}")
            emit(ready)
            state["ready"] = True

            while True:
                line = await read_line()
                if not line:  # stdin closed: same as close
                    break
                line = line.strip()
                if not line:
                    continue
                try:
                    cmd = json.loads(line)
                    if cmd.get("op") == "close":
                        break
                    state["pending"] = True
                    failures.status = None
                    emit(await answer(conn, changes, cmd))
                except Exception as exc:
                    log.debug("command failed", exc_info=True)
                    emit(with_status(error_json(exc), failures))
                state["pending"] = False
            # Leaving the stack ends the session: the SDK's transport sends DELETE when the server
            # gave it a session id, then the HTTP client closes.
    except Exception as exc:
        # The 1.x transport lets an HTTP error (a 401, say) escape its task group: that cancels
        # whatever awaited the session and surfaces here, as an exception group, on the way out.
        log.debug("session failed", exc_info=True)
        failure = leaf(exc)
        message = f"{type(failure).__name__}: {failure}"
        if not state["ready"]:
            emit(with_status({"ready": False, "error": message, "sdk": SDK_NAME}, failures))
        elif state["pending"]:
            emit(with_status({"error": {"code": None, "message": f"session lost: {message}"}}, failures))
        else:
            log.warning("closing the session failed: %s", message)
            emit({"closed": True})
            return 0
        return 1
    emit({"closed": True})
    return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))
