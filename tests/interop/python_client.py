"""Drives a nexo server with the official Python SDK client (`mcp` 2.x), for scripts/interop.

    python_client.py --server morse|utils|dns|files|music|everything --transport stdio|http|sse
                     --mode legacy|auto|2026-07-28 [--expect-revision REVISION] TARGET

TARGET is the command line of a stdio server, or the URL (`.../mcp` for
Streamable HTTP, `.../sse` for the legacy HTTP+SSE transport). One real
exchange: list the tools, call one and check its result, and read a resource
where the server has one. Prints what it saw; exits 0 when every check held,
1 otherwise.

`--mode legacy` is the SDK's initialize handshake (2025 era); `auto` probes
`server/discover` first and falls back to the handshake, so with
`--expect-revision 2026-07-28` it proves the server's discover answer was
accepted; `2026-07-28` adopts that revision without a probe. Over SSE only
legacy exists.
"""

import argparse
import shlex
import sys
import traceback

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.sse import sse_client

# What the music server says of an empty library (scripts/interop starts it
# on one).
EMPTY_LIBRARY = '{\n  "workspace": "default",\n  "playlists": []\n}'

# Per server: (tool, arguments, expected text, expected structuredContent
# "result" or None), then (resource URI, expected text) or None.
CHECKS = {
    "morse": (("morse", {"texto": "SOS"}, "... --- ...", "... --- ..."), None),
    "utils": (
        (
            "sha256",
            {"text": "abc"},
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
        ),
        None,
    ),
    "dns": (("ping", {}, "pong", "pong"), None),
    "files": (("read_text_file", {"path": "notes.md"}, "hello from nexo files\n", None), None),
    "music": (
        ("list_playlists", {}, EMPTY_LIBRARY, None),
        ("music://playlists", EMPTY_LIBRARY),
    ),
    "everything": (
        ("test_simple_text", {}, "This is a simple text response for testing.", None),
        ("test://static-text", "This is the content of the static text resource."),
    ),
}


class CheckFailed(Exception):
    pass


def expect(cond: bool, what: str) -> None:
    if not cond:
        raise CheckFailed(what)


async def exchange(client: Client, server: str) -> None:
    (tool, args, text, structured), resource = CHECKS[server]
    tools = await client.list_tools()
    names = sorted(t.name for t in tools.tools)
    print(f"tools/list: {', '.join(names)}")
    expect(tool in names, f"tool `{tool}` not listed")

    result = await client.call_tool(tool, args)
    texts = [c.text for c in result.content if getattr(c, "type", None) == "text"]
    print(f"tools/call {tool}: is_error={result.is_error} text={texts!r} structured={result.structured_content!r}")
    expect(not result.is_error, f"`{tool}` reported an error")
    expect(texts == [text], f"`{tool}` answered {texts!r}, expected [{text!r}]")
    if structured is not None:
        got = (result.structured_content or {}).get("result")
        expect(got == structured, f"`{tool}` structuredContent.result is {got!r}, expected {structured!r}")

    if resource is not None:
        uri, want = resource
        listed = await client.list_resources()
        uris = [str(r.uri) for r in listed.resources]
        print(f"resources/list: {', '.join(uris)}")
        expect(uri in uris, f"resource `{uri}` not listed")
        read = await client.read_resource(uri)
        got = [getattr(c, "text", None) for c in read.contents]
        print(f"resources/read {uri}: {got!r}")
        expect(got == [want], f"`{uri}` read {got!r}, expected [{want!r}]")


async def run(args: argparse.Namespace) -> None:
    if args.transport == "stdio":
        argv = shlex.split(args.target)
        target = StdioServerParameters(command=argv[0], args=argv[1:])
    elif args.transport == "sse":
        target = sse_client(args.target)
    else:
        target = args.target
    async with Client(target, mode=args.mode, read_timeout_seconds=20.0) as client:
        info = client.server_info
        name = f"{info.name} {info.version}" if info else "(anonymous)"
        print(f"connected: mode={args.mode} server={name}")
        print(f"revision: {client.protocol_version}")
        if args.expect_revision:
            expect(
                client.protocol_version == args.expect_revision,
                f"negotiated {client.protocol_version}, expected {args.expect_revision}",
            )
        await exchange(client, args.server)


def innermost(exc: BaseException) -> BaseException:
    """The one error inside anyio's task-group wrappers."""
    while len(getattr(exc, "exceptions", ())) == 1:
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return exc


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True, choices=sorted(CHECKS))
    parser.add_argument("--transport", required=True, choices=["stdio", "http", "sse"])
    parser.add_argument("--mode", default="legacy")
    parser.add_argument("--expect-revision")
    parser.add_argument("target")
    args = parser.parse_args()
    try:
        anyio.run(run, args)
    except Exception as err:  # noqa: BLE001 - every failure becomes one FAILED line
        cause = innermost(err)
        if not isinstance(cause, CheckFailed):
            traceback.print_exception(err)
            cause = f"{type(cause).__name__}: {cause}"
        print(f"FAILED: {cause}", flush=True)
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
