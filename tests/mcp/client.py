"""Drive this service's MCP server with the official MCP Python SDK.

    client.py http <url> <token> <session_id>
    client.py stdio <openprogram exe> <state dir> <session_id>

Prints one JSON object: what the calls answered (the Rust test checks it).
"""

import asyncio
import json
import sys

import httpx2
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


async def exercise(session: ClientSession, sid: str) -> dict:
    init = await session.initialize()
    out: dict = {"server": init.server_info.name}
    tools = (await session.list_tools()).tools
    out["tools"] = [t.name for t in tools]
    out["read_only"] = all(t.annotations and t.annotations.read_only_hint for t in tools)
    out["schemas"] = all(t.input_schema.get("type") == "object" for t in tools)

    async def call(name: str, args: dict) -> dict:
        r = await session.call_tool(name, args)
        return {"error": bool(r.is_error), "data": r.structured_content,
                "text": "".join(getattr(c, "text", "") for c in r.content)}

    out["sessions_search"] = await call("sessions_search", {"query": "parser"})
    out["search"] = await call("search", {"query": "parser"})
    first = (out["search"]["data"] or {}).get("results", [{}])[0].get("id", "")
    out["fetch"] = await call("fetch", {"id": first})
    out["sessions_list"] = await call("sessions_list", {"limit": 5})
    out["session_get"] = await call("session_get", {"session_id": sid, "format": "markdown"})
    out["turn_get"] = await call("turn_get", {"session_id": sid, "turn": 1})
    out["recent_activity"] = await call("recent_activity", {"since": 0})
    # Hostile calls: an MCP error or a tool error, never a crash.
    hostile = {}
    try:
        r = await session.call_tool("no_such_tool", {})
        hostile["unknown_tool"] = "error" if r.is_error else "answered"
    except Exception as e:  # a protocol error
        hostile["unknown_tool"] = "mcp_error:" + type(e).__name__
    for name, args in [
        ("wrong_type", ("sessions_search", {"query": 5})),
        ("huge_limit", ("sessions_list", {"limit": 10**15})),
        ("missing", ("turn_get", {})),
        ("no_session", ("session_get", {"session_id": "../../etc"})),
        ("bad_cursor", ("sessions_list", {"cursor": "zzz"})),
    ]:
        try:
            r = await session.call_tool(args[0], args[1])
            hostile[name] = "error" if r.is_error else "answered"
        except Exception as e:
            hostile[name] = "mcp_error:" + type(e).__name__
    out["hostile"] = hostile
    # Still serving after all that.
    out["after"] = await call("sessions_list", {"limit": 1})
    return out


async def main() -> None:
    mode, where, extra, sid = sys.argv[1:5]
    if mode == "http":
        headers = {"Authorization": f"Bearer {extra}"}
        async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
            async with streamable_http_client(where, http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    out = await exercise(session, sid)
    else:
        params = StdioServerParameters(
            command=where, args=["mcp"], env={"OPENPROGRAM_STATE_DIR": extra, "PATH": "/usr/bin:/bin"}
        )
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                out = await exercise(session, sid)
    print(json.dumps(out))


asyncio.run(main())
