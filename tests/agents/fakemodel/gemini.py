#!/usr/bin/env python3
"""A scripted stand-in for the Gemini API, enough for Gemini CLI to run offline.

Python 3.11 standard library only. Point the CLI at it with
``GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:<port>`` and ``GEMINI_API_KEY=fake``.

Endpoints (``<model>`` is whatever the CLI asks for):

* ``POST /v1beta/models/<model>:streamGenerateContent?alt=sse`` -- the chat.
  A request that offers tools (``tools`` with ``functionDeclarations``) and is
  not a side call is a *main* request: its reply comes from the script. Others
  (or no matching script entry) get a plain text reply.
* ``POST /v1beta/models/<model>:generateContent`` -- side calls: next-speaker
  checks, loop checks, routing, titles, compression summaries. A request with
  ``generationConfig.responseSchema`` / ``responseJsonSchema`` or
  ``responseMimeType: application/json`` gets JSON made from the schema;
  a compression request gets a ``<state_snapshot>``; anything else a short text.
* ``POST /v1beta/models/<model>:countTokens`` -- a length-based estimate.
* ``POST /v1beta/models/<model>:embedContent`` / ``batchEmbedContents``.
* anything else: logged, answered 404 with a JSON error.

The script is a JSON list of replies, chosen by looking at the request so the
run is deterministic and a retried request gets the same answer::

    [{"prompt": "list the files",   # substring of the turn's typed prompt
      "step": 0,                    # model calls into the turn: 0 = first,
                                    # 1 = after the first functionResponse, ...
      "delay": 5,                   # optional seconds to wait before answering
      "parts": [{"text": "..."},
                {"functionCall": {"name": "run_shell_command",
                                  "args": {"command": "ls"}}}]}]

The *turn's typed prompt* is the last text part of the last user content
holding a text part and no ``functionResponse``; *step* counts the contents after it that hold a
``functionResponse``. Side requests never consume or match the script.

Every request is appended to the log file (``--log``) as one JSON line.

Run: ``python3 gemini.py --script script.json --port 0 --port-file p.txt``
(``--port 0`` picks a free port and writes it to ``--port-file``).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

FALLBACK_TEXT = "OK."


def has_function_response(content: dict) -> bool:
    return any(isinstance(p, dict) and "functionResponse" in p for p in content.get("parts", []))


def turn_position(contents: list[dict]) -> tuple[str | None, int]:
    """The turn's typed prompt and how many tool results came after it."""
    step = 0
    for content in reversed(contents):
        if content.get("role", "user") != "user":
            continue
        if has_function_response(content):
            step += 1
            continue
        texts = [p["text"] for p in content.get("parts", []) if isinstance(p, dict) and p.get("text")]
        if texts:
            # The CLI may send the session context and the prompt as parts of
            # one content: the typed prompt is the last text part.
            return texts[-1], step
    return None, step


def from_schema(schema: dict | None, key: str = ""):
    """A small value that satisfies a JSON schema (first enum value wins)."""
    if not isinstance(schema, dict):
        return "ok"
    if "enum" in schema and schema["enum"]:
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    kind = (kind or "").lower()
    if kind == "object" or "properties" in schema:
        return {k: from_schema(v, k) for k, v in (schema.get("properties") or {}).items()}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        low = schema.get("minimum", 0)
        high = schema.get("maximum", low)
        return low if low >= 0 or high < 0 else min(0, high)
    if kind == "boolean":
        return False
    return f"fake {key or 'value'}"


class Model:
    def __init__(self, script: list[dict], log_path: str | None):
        self.script = script
        self.log_path = log_path
        self.lock = threading.Lock()

    def log(self, entry: dict) -> None:
        if not self.log_path:
            return
        with self.lock, open(self.log_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")

    def scripted(self, body: dict) -> dict | None:
        prompt, step = turn_position(body.get("contents") or [])
        if prompt is None:
            return None
        for reply in self.script:
            if reply.get("prompt", "") in prompt and reply.get("step", 0) == step:
                return reply
        return None


def is_main(body: dict) -> bool:
    tools = body.get("tools") or []
    has_tools = any(isinstance(t, dict) and t.get("functionDeclarations") for t in tools)
    cfg = body.get("generationConfig") or {}
    json_out = cfg.get("responseMimeType") == "application/json" or "responseSchema" in cfg or "responseJsonSchema" in cfg
    return has_tools and not json_out


def side_reply(body: dict) -> list[dict]:
    cfg = body.get("generationConfig") or {}
    schema = cfg.get("responseJsonSchema") or cfg.get("responseSchema")
    if schema or cfg.get("responseMimeType") == "application/json":
        return [{"text": json.dumps(from_schema(schema))}]
    blob = json.dumps(body)
    if "state_snapshot" in blob:
        return [{"text": "<state_snapshot>\n<overall_goal>Work on the small project as asked.</overall_goal>\n"
                 "<key_knowledge>The project has README.md and main.py; notes.txt was written.</key_knowledge>\n"
                 "<file_system_state>CWD: project</file_system_state>\n"
                 "<recent_actions>Listed files, read and edited files.</recent_actions>\n"
                 "<current_plan>Wait for the next request.</current_plan>\n</state_snapshot>"}]
    return [{"text": "Fake session title"}]


def usage(body: dict, parts: list[dict]) -> dict:
    prompt = max(1, len(json.dumps(body.get("contents", []))) // 4)
    out = max(1, len(json.dumps(parts)) // 4)
    return {"promptTokenCount": prompt, "candidatesTokenCount": out, "totalTokenCount": prompt + out}


def candidate(parts: list[dict], finish: str | None) -> dict:
    c = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        c["finishReason"] = finish
    return c


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    model: Model  # set on the class by serve()

    def log_message(self, fmt, *args):  # keep stderr quiet
        pass

    def _send_json(self, obj: dict, status: int = 200) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.model.log({"t": time.time(), "method": "GET", "path": self.path})
        self._send_json({"error": {"code": 404, "message": "not here", "status": "NOT_FOUND"}}, 404)

    def do_POST(self):
        try:
            self._post()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the CLI went away (killed, or gave up): nothing to answer

    def _post(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {}
        path = urlsplit(self.path).path
        action = path.rsplit(":", 1)[-1] if ":" in path else ""
        entry = {"t": time.time(), "method": "POST", "path": self.path, "action": action}

        if action in ("streamGenerateContent", "generateContent"):
            reply = self.model.scripted(body) if is_main(body) else None
            if reply is not None:
                parts = [dict(p) for p in reply["parts"]]
                kind = "main"
            elif is_main(body):
                parts, kind = [{"text": FALLBACK_TEXT}], "main-unscripted"
            else:
                parts, kind = side_reply(body), "side"
            prompt, step = turn_position(body.get("contents") or [])
            shape = [(c.get("role"), [next(iter(p), "") for p in c.get("parts", [])])
                     for c in body.get("contents") or []]
            entry.update(kind=kind, prompt=(prompt or "")[:200], step=step, reply=parts, contents=shape)
            self.model.log(entry)
            delay = float((reply or {}).get("delay", 0))
            if delay:
                time.sleep(delay)
            finish = "STOP"
            if action == "generateContent":
                self._send_json({"candidates": [candidate(parts, finish)], "usageMetadata": usage(body, parts),
                                 "modelVersion": "fake-gemini"})
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            # Text first, one chunk per part; the last chunk carries finishReason and usage.
            chunks = [[p] for p in parts] or [[{"text": ""}]]
            for i, chunk in enumerate(chunks):
                last = i == len(chunks) - 1
                obj = {"candidates": [candidate(chunk, finish if last else None)], "modelVersion": "fake-gemini"}
                if last:
                    obj["usageMetadata"] = usage(body, parts)
                self.wfile.write(b"data: " + json.dumps(obj).encode() + b"\r\n\r\n")
                self.wfile.flush()
            self.close_connection = True
            return
        if action == "countTokens":
            n = max(1, len(raw) // 4)
            self.model.log({**entry, "kind": "countTokens"})
            self._send_json({"totalTokens": n})
            return
        if action in ("embedContent", "batchEmbedContents"):
            self.model.log({**entry, "kind": "embed"})
            vec = {"values": [0.0] * 8}
            if action == "embedContent":
                self._send_json({"embedding": vec})
            else:
                self._send_json({"embeddings": [vec for _ in body.get("requests", [])]})
            return
        self.model.log({**entry, "kind": "unknown", "body": raw.decode("utf-8", "replace")[:2000]})
        self._send_json({"error": {"code": 404, "message": "not here", "status": "NOT_FOUND"}}, 404)


def serve(script: list[dict], port: int = 0, log_path: str | None = None) -> ThreadingHTTPServer:
    """Start the server on 127.0.0.1 in a background thread; returns it (see .server_port)."""
    handler = type("ScriptedHandler", (Handler,), {"model": Model(script, log_path)})
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--script", help="JSON file: list of scripted replies")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--log")
    args = ap.parse_args()
    script = json.load(open(args.script)) if args.script else []
    server = serve(script, args.port, args.log)
    if args.port_file:
        with open(args.port_file, "w") as f:
            f.write(str(server.server_port))
    print(f"fake gemini on http://127.0.0.1:{server.server_port}", file=sys.stderr, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.shutdown()


if __name__ == "__main__":
    main()
