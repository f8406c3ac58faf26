"""An example runner: answers messages sent from the web UI's composer and
records a tool call as a tool node of its answer.

It registers over the WebSocket (``register_runner``), claims what it is
offered (``claim_run``), then writes its turn with the REST client: an
assistant node that calls a tool, the tool node (``caller``: that assistant
node) with the tool's output, the answer streamed into a second assistant
node, and the end of the turn (one commit).

    pip install websockets ./clients/python
    OPENPROGRAM_URL=http://127.0.0.1:8765 python clients/python/examples/tool_runner.py

``--once`` answers one message and exits (the test suite runs it so).
"""

from __future__ import annotations

import json
import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "src"))

from websockets.sync.client import connect  # noqa: E402

from openprogram_memory import Client  # noqa: E402


def answer(client: Client, session_id: str, text: str) -> None:
    """One turn: a tool call, its result, the answer, the end."""
    call = client.append(
        session_id,
        {
            "role": "assistant",
            "content": "Let me count the words.",
            "metadata": {"tool_calls": [{"name": "word_count", "arguments": {"text": text}}]},
        },
    )
    words = len(text.split())
    client.append(
        session_id,
        {
            "role": "tool",
            "name": "word_count",
            "caller": call["node"]["id"],
            "content": {"text": text},
            "output": {"words": words},
        },
    )
    reply = client.append(session_id, {"role": "assistant", "content": ""})
    path = f"/api/sessions/{session_id}/messages/{reply['node']['id']}"
    sentence = f"Your message has {words} words."
    shown = ""
    for word in sentence.split(" "):
        shown = f"{shown} {word}".strip()
        client._request("PATCH", path, {"content": shown})
    client.end_turn(session_id)


def main() -> None:
    once = "--once" in sys.argv
    client = Client()
    url = client.url.replace("http", "ws", 1) + "/ws"
    headers = {"Authorization": f"Bearer {client.token}"} if client.token else None
    with connect(url, additional_headers=headers) as ws:
        ws.send(json.dumps({"action": "register_runner", "name": "word-counter", "sessions": "all"}))
        print("registered", flush=True)
        for raw in ws:
            frame = json.loads(raw)
            data = frame.get("data") or {}
            if frame.get("type") == "run_requested":
                ws.send(json.dumps({"action": "claim_run", "session_id": data["session_id"], "msg_id": data["msg_id"]}))
            elif frame.get("type") == "run_claimed":
                answer(client, data["session_id"], data["text"])
                if once:
                    return


if __name__ == "__main__":
    main()
