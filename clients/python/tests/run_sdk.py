"""The adapter judged by the Claude Agent SDK's own code, against a running
server (``OPENPROGRAM_URL``):

1. the SDK's conformance suite for ``SessionStore`` adapters;
2. a Claude Code transcript on disk (with a sub-agent's) copied into the
   store by the SDK's ``import_session_to_store``, then read back with the
   SDK's store readers: they must agree with the SDK's readers of the disk
   copy, and ``load`` must give back every line as it was.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import pathlib
import sys
import tempfile
import uuid

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "src"))

import claude_agent_sdk as sdk  # noqa: E402
from claude_agent_sdk.testing import run_session_store_conformance  # noqa: E402

from openprogram_memory import ApiError, Client, OpenProgramSessionStore  # noqa: E402


def transcript(sid: str, cwd: str) -> list[dict]:
    def rec(kind: str, u: str, parent: str | None, body: dict, second: int) -> dict:
        return {
            "type": kind,
            "uuid": u,
            "parentUuid": parent,
            "sessionId": sid,
            "timestamp": f"2026-01-05T10:00:{second:02d}.000Z",
            "cwd": cwd,
            "isSidechain": False,
            "userType": "external",
            "version": "2.1.0",
            **body,
        }

    def prompt(text: str) -> dict:
        return {"message": {"role": "user", "content": text}}

    def answer(mid: str, blocks: list, stop: str | None) -> dict:
        return {
            "message": {
                "id": mid,
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": blocks,
                "stop_reason": stop,
                "usage": {"input_tokens": 120, "output_tokens": 40},
            }
        }

    ids = [str(uuid.uuid4()) for _ in range(8)]
    return [
        rec("user", ids[0], None, prompt("Why does the build fail?"), 0),
        rec(
            "assistant",
            ids[1],
            ids[0],
            answer("msg_1", [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "cargo build"}}], "tool_use"),
            1,
        ),
        rec(
            "user",
            ids[2],
            ids[1],
            {
                "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "error[E0425]: cannot find value `x`"}]},
                "toolUseResult": {"stdout": "error[E0425]", "stderr": ""},
            },
            2,
        ),
        rec("assistant", ids[3], ids[2], answer("msg_2", [{"type": "text", "text": "`x` is never declared."}], "end_turn"), 3),
        {"type": "custom-title", "customTitle": "The build", "sessionId": sid},
        rec("user", ids[4], ids[3], prompt("Declare it as a constant"), 10),
        rec("assistant", ids[5], ids[4], answer("msg_3", [{"type": "text", "text": "Added `const X: u32 = 0.5e1 as u32;`."}], "end_turn"), 11),
    ]


def subagent(sid: str, cwd: str) -> list[dict]:
    a, b = str(uuid.uuid4()), str(uuid.uuid4())
    base = {"sessionId": sid, "cwd": cwd, "isSidechain": True, "agentId": "a1b2c3", "userType": "external"}
    return [
        {**base, "type": "user", "uuid": a, "parentUuid": None, "timestamp": "2026-01-05T10:00:04.000Z",
         "message": {"role": "user", "content": "Find where x is used"}},
        {**base, "type": "assistant", "uuid": b, "parentUuid": a, "timestamp": "2026-01-05T10:00:05.000Z",
         "message": {"id": "msg_s", "role": "assistant", "model": "claude-haiku-4-5", "content": [{"type": "text", "text": "src/main.rs:3"}], "stop_reason": "end_turn"}},
    ]


def plain(messages: list) -> list[dict]:
    return [dataclasses.asdict(m) for m in messages]


async def main() -> None:
    client = Client(os.environ["OPENPROGRAM_URL"])

    await run_session_store_conformance(lambda: OpenProgramSessionStore(client, namespace=uuid.uuid4().hex))
    print("conformance: ok")

    with tempfile.TemporaryDirectory() as tmp:
        cwd = os.path.realpath(os.path.join(tmp, "app"))
        os.makedirs(cwd)
        os.environ["CLAUDE_CONFIG_DIR"] = os.path.join(tmp, "claude")
        project_key = sdk.project_key_for_directory(cwd)
        project = pathlib.Path(tmp, "claude", "projects", project_key)
        sid = str(uuid.uuid4())
        lines = transcript(sid, cwd)
        (project / sid / "subagents").mkdir(parents=True)
        (project / f"{sid}.jsonl").write_text("".join(json.dumps(l) + "\n" for l in lines))
        sub_lines = subagent(sid, cwd)
        (project / sid / "subagents" / "agent-a1b2c3.jsonl").write_text(
            "".join(json.dumps(l) + "\n" for l in sub_lines)
        )

        store = OpenProgramSessionStore(client, namespace=uuid.uuid4().hex)
        await sdk.import_session_to_store(sid, store, directory=cwd)

        key = {"project_key": project_key, "session_id": sid}
        assert await store.load(key) == lines, "load gives back every line as written"
        sub_key = {**key, "subpath": "subagents/agent-a1b2c3"}
        assert await store.load(sub_key) == sub_lines
        assert await store.list_subkeys(key) == ["subagents/agent-a1b2c3"]

        disk = plain(sdk.get_session_messages(sid, directory=cwd))
        stored = plain(await sdk.get_session_messages_from_store(store, sid, directory=cwd))
        assert len(disk) >= 4 and stored == disk, (stored, disk)

        infos = await sdk.list_sessions_from_store(store, directory=cwd)
        [info] = [i for i in infos if i.session_id == sid]
        assert info.custom_title == "The build", info
        assert info.first_prompt == "Why does the build fail?", info

        assert await sdk.list_subagents_from_store(store, sid, directory=cwd) == sdk.list_subagents(sid, directory=cwd)
        sub_disk = plain(sdk.get_subagent_messages(sid, "a1b2c3", directory=cwd))
        sub_stored = plain(await sdk.get_subagent_messages_from_store(store, sid, "a1b2c3", directory=cwd))
        assert sub_disk and sub_stored == sub_disk, (sub_stored, sub_disk)

        # Imported again: nothing with a uuid is stored twice.
        await sdk.import_session_to_store(sid, store, directory=cwd)
        again = await store.load(key)
        assert [e for e in again if "uuid" in e] == [e for e in lines if "uuid" in e]

        # On the server: a session with a commit per turn, its text searchable.
        [row] = client.store_sessions(f"{store.namespace}/{project_key}")
        meta = client.session(row["id"])
        assert meta["turn_count"] == 2 and meta["source"] == "claude-agent-sdk", meta
        texts = json.dumps(client.messages(row["id"]))
        assert "Declare it as a constant" in texts
    print("import and read back: ok")

    # The REST client's own calls.
    sid = "py-" + uuid.uuid4().hex[:12]
    start = client.changes("latest")["next_cursor"]
    client.append(sid, {"role": "user", "content": "Where is the parser?"})
    reply = client.append(sid, {"role": "assistant", "content": "In src/parse.rs, zanzibar."})
    client.append(sid, {"role": "tool", "name": "grep", "caller": reply["node"]["id"], "content": "fn parse"})
    one = client.end_turn(sid, idempotency_key=f"{sid}-1")
    assert one["turn"] == 1 and len(one["commit"]) == 40, one
    assert client.end_turn(sid, idempotency_key=f"{sid}-1")["commit"] == one["commit"], "a retried end is the same turn"
    two = client.whole_turn(sid, [{"role": "user", "content": "And the lexer?"}, {"role": "assistant", "content": "src/lex.rs"}])
    assert two["turn"] == 2, two
    page = client.changes(start, wait=5)
    commits = [c["event"]["commit"] for c in page["events"] if c["event"]["session_id"] == sid]
    assert one["commit"] in commits and two["commit"] in commits, page
    bundle = client.export(sid)
    assert bundle.startswith(b"# v2 git bundle"), bundle[:40]
    for _ in range(100):
        hits = client.search("zanzibar")
        if hits.get("total", 0) >= 1:
            break
        await asyncio.sleep(0.1)
    else:
        raise AssertionError(f"not found by search: {hits}")
    try:
        client.end_turn(sid)
        raise AssertionError("an end with no open turn is refused")
    except ApiError as e:
        assert e.status == 409 and e.code == "no_open_turn", e
    print("client: ok")


if __name__ == "__main__":
    asyncio.run(main())
