"""A small MCP server on the official Python SDK (`mcp` 2.x), for scripts/interop.

    python_server.py stdio
    python_server.py http|sse        (binds 127.0.0.1 on a free port)

One tool, `add(a, b)` -> the sum as text and `structuredContent {"result": n}`,
and one resource, `fixture://greeting` -> `hello from the python sdk`.
Over HTTP it binds the socket itself (port 0) and prints
`interop: listening on http://127.0.0.1:PORT` on stderr before serving, so
the script never guesses a free port.

Quirk: in mcp 2.x FastMCP is called MCPServer (`mcp.server.fastmcp` raises on
import), and `run()` takes no socket, so the HTTP modes build the Starlette app
and run uvicorn on our socket.
"""

import socket
import sys

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer

GREETING = "hello from the python sdk"

server = MCPServer("interop-python-fixture", version="1.0.0")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.resource("fixture://greeting", name="greeting", mime_type="text/plain")
def greeting() -> str:
    """A fixed greeting."""
    return GREETING


async def serve_http(mode: str) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    app = server.sse_app() if mode == "sse" else server.streamable_http_app()
    config = uvicorn.Config(app, log_level="warning")
    path = "/sse" if mode == "sse" else "/mcp"
    print(f"interop: listening on http://127.0.0.1:{port}{path}", file=sys.stderr, flush=True)
    await uvicorn.Server(config).serve(sockets=[sock])


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if mode == "stdio":
        server.run("stdio")
    elif mode in ("http", "sse"):
        anyio.run(serve_http, mode)
    else:
        sys.exit(f"usage: {sys.argv[0]} stdio|http|sse")


if __name__ == "__main__":
    main()
