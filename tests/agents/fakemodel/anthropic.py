#!/usr/bin/env python3
"""A fake Anthropic Messages API for recording what agent tools write.

Stdlib only. Serves `POST /v1/messages` (streaming SSE and plain JSON),
`POST /v1/messages/count_tokens`, and answers anything else with a small
JSON body (logged as unknown).

Replies come from a *script*: a list of rules, each

    {"prompt": "substring of the turn's prompt",   # required
     "step": 0,            # how many assistant messages follow that prompt
                           # in the request (0: the first reply of the turn,
                           # 1: the reply after the first tool results, ...)
     "delay": 0.0,         # seconds to wait before answering (a slow model)
     "first_delay": 0.0,   # seconds to wait after the first streamed block
     "content": [          # blocks of the reply, in order
        {"type": "thinking", "thinking": "..."},
        {"type": "text", "text": "..."},
        {"type": "tool_use", "name": "Bash", "input": {...}, "id": "toolu_.."}],
     "stop_reason": "end_turn" | "tool_use"   # default: tool_use if any
    }

A rule may instead hold {"system": "substring of the system prompt",
"content": [...]}: it answers any request whose system prompt holds it
(side requests such as title generation), checked first.

A request is an *agent* request when it offers tools; its prompt is the
text of the last user message that holds no tool_result (system reminders
included, so match on a distinctive substring). The rule whose prompt
occurs in that text and whose step equals the number of assistant messages
after it answers. Requests are matched, not counted, so a retry or a
resumed conversation gets the same answer: the script is never consumed.

Requests without tools (title generation, topic detection, quota checks,
summaries) and agent requests that no rule matches get a short text reply
(`side_reply`), or, when the request asks for structured output
(`output_config.format` json_schema), a JSON object filled from the schema;
compaction requests get a summary. Every request is
appended to the log file as one JSON line (path, kind, rule, a digest of
the request).

Used as a module (`FakeAnthropic(script, log_path).start()`) or run:
    python3 anthropic.py --port 0 --script script.json --log requests.jsonl
"""

import argparse
import hashlib
import json
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL_DEFAULT = "claude-sonnet-4-5-20250929"


def _blocks(content):
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content or []


def _text_of(msg):
    return "\n".join(
        b.get("text", "") for b in _blocks(msg.get("content")) if b.get("type") == "text"
    )


def _system_text(req):
    s = req.get("system")
    if isinstance(s, str):
        return s
    if isinstance(s, list):
        return "\n".join(b.get("text", "") for b in s if isinstance(b, dict))
    return ""


def _fill(schema, name):
    """A value for a JSON schema (structured-output side requests)."""
    t = schema.get("type")
    if schema.get("enum"):
        return schema["enum"][0]
    if t == "string":
        return f"Fake {name}"
    if t in ("integer", "number"):
        return 0
    if t == "boolean":
        return False
    if t == "array":
        return []
    if t == "object":
        return {k: _fill(v, k) for k, v in (schema.get("properties") or {}).items()}
    return None


def turn_position(messages):
    """(prompt text, step): the last user message without tool results and
    the number of assistant messages after it."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.get("role") != "user":
            continue
        if any(b.get("type") == "tool_result" for b in _blocks(m.get("content"))):
            continue
        step = sum(1 for n in messages[i + 1 :] if n.get("role") == "assistant")
        return _text_of(m), step
    return "", 0


class FakeAnthropic:
    def __init__(self, script=None, log_path=None, side_reply="OK.", host="127.0.0.1", port=0,
                 dump_dir=None):
        self.script = list(script or [])
        self.dump_dir = dump_dir  # when set, every request body is saved there whole
        self.log_path = log_path
        self.side_reply = side_reply
        self.host, self.port = host, port
        self.lock = threading.Lock()
        self.httpd = None
        self.counter = 0
        self.unknown = []

    # -- choosing a reply -------------------------------------------------
    def set_script(self, script):
        with self.lock:
            self.script = list(script)

    def choose(self, req):
        """(kind, rule) for a messages request."""
        messages = req.get("messages") or []
        last = messages[-1] if messages else {}
        last_text = _text_of(last) if last.get("role") == "user" else ""
        tools = req.get("tools") or []
        prompt, step = turn_position(messages)
        with self.lock:
            script = list(self.script)
        system = _system_text(req)
        for rule in script:
            if rule.get("system") and rule["system"] in system:
                return "side-scripted", rule
        if tools:
            for rule in script:
                if rule.get("prompt") and rule["prompt"] in prompt and rule.get("step", 0) == step:
                    return "agent", rule
        low = last_text.lower()
        if "summary" in low and ("conversation" in low or "compact" in low):
            return "compact", {
                "content": [
                    {
                        "type": "text",
                        "text": "<analysis>Short conversation.</analysis>\n<summary>\n"
                        "1. Primary Request and Intent: the user asked for small file "
                        "operations in the project.\n2. Pending Tasks: none.\n"
                        "3. Current Work: done.\n</summary>",
                    }
                ],
                "stop_reason": "end_turn",
            }
        kind = "agent-unmatched" if tools else "side"
        reply = self.side_reply
        fmt = (req.get("output_config") or {}).get("format") or req.get("output_format") or {}
        if fmt.get("type") == "json_schema":  # structured output: an object of the schema
            props = (fmt.get("schema") or {}).get("properties") or {}
            reply = json.dumps({k: _fill(v, k) for k, v in props.items()})
        return kind, {"content": [{"type": "text", "text": reply}], "stop_reason": "end_turn"}

    # -- logging ------------------------------------------------------------
    def log(self, entry):
        if not self.log_path:
            return
        with self.lock:
            with open(self.log_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(entry, ensure_ascii=False) + "\n")

    def next_id(self, prefix):
        with self.lock:
            self.counter += 1
            n = self.counter
        return f"{prefix}_fake{n:04d}{uuid.uuid4().hex[:16]}"

    # -- serving ------------------------------------------------------------
    def start(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt, *args):  # quiet
                pass

            def _body(self):
                n = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(n) if n else b""
                try:
                    return json.loads(raw or b"{}")
                except ValueError:
                    return {"_raw": raw.decode("utf-8", "replace")}

            def _json(self, code, obj):
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("request-id", "req_fake")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                fake.log({"t": time.time(), "method": "GET", "path": self.path, "kind": "unknown"})
                fake.unknown.append(("GET", self.path))
                if self.path.startswith("/v1/models"):
                    return self._json(200, {"data": [{"id": MODEL_DEFAULT, "type": "model",
                                                      "display_name": "Fake", "created_at": "2025-01-01T00:00:00Z"}],
                                            "has_more": False, "first_id": MODEL_DEFAULT, "last_id": MODEL_DEFAULT})
                return self._json(200, {})

            def do_HEAD(self):
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def do_POST(self):
                req = self._body()
                path = self.path.split("?")[0]
                if path.endswith("/v1/messages/count_tokens"):
                    n = len(json.dumps(req)) // 4
                    fake.log({"t": time.time(), "method": "POST", "path": self.path, "kind": "count_tokens"})
                    return self._json(200, {"input_tokens": n})
                if path.endswith("/v1/messages"):
                    return self.messages(req)
                fake.log({"t": time.time(), "method": "POST", "path": self.path, "kind": "unknown",
                          "body": str(req)[:500]})
                fake.unknown.append(("POST", self.path))
                return self._json(200, {})

            def messages(self, req):
                kind, rule = fake.choose(req)
                if fake.dump_dir:
                    with open(f"{fake.dump_dir}/{time.time():.3f}-{kind}.json", "w") as f:
                        json.dump(req, f, indent=1)
                prompt, step = turn_position(req.get("messages") or [])
                tools = [t.get("name") for t in req.get("tools") or []]
                fake.log({
                    "t": time.time(), "method": "POST", "path": self.path, "kind": kind,
                    "rule": rule.get("prompt"), "step": step, "stream": bool(req.get("stream")),
                    "model": req.get("model"), "n_messages": len(req.get("messages") or []),
                    "tools": tools, "prompt_tail": prompt[-200:],
                    "system_head": _system_text(req)[:200],
                    "digest": hashlib.sha1(json.dumps(req, sort_keys=True).encode()).hexdigest()[:12],
                })
                if rule.get("delay"):
                    time.sleep(float(rule["delay"]))
                model = req.get("model") or MODEL_DEFAULT
                content = []
                for b in rule.get("content", []):
                    b = dict(b)
                    if b["type"] == "tool_use":
                        b.setdefault("id", fake.next_id("toolu"))
                    if b["type"] == "thinking":
                        b.setdefault("signature", "fakesig" + hashlib.sha1(b["thinking"].encode()).hexdigest())
                    content.append(b)
                stop = rule.get("stop_reason") or (
                    "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn")
                in_tokens = max(1, len(json.dumps(req.get("messages") or [])) // 4)
                out_tokens = max(1, len(json.dumps(content)) // 4)
                msg_id = fake.next_id("msg")
                usage = {"input_tokens": in_tokens, "cache_creation_input_tokens": 0,
                         "cache_read_input_tokens": 0, "output_tokens": out_tokens}
                if not req.get("stream"):
                    return self._json(200, {
                        "id": msg_id, "type": "message", "role": "assistant", "model": model,
                        "content": content, "stop_reason": stop, "stop_sequence": None, "usage": usage})
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("request-id", "req_fake")
                self.send_header("connection", "close")
                self.end_headers()
                self.close_connection = True

                def ev(name, data):
                    self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                    self.wfile.flush()

                try:
                    ev("message_start", {"type": "message_start", "message": {
                        "id": msg_id, "type": "message", "role": "assistant", "model": model,
                        "content": [], "stop_reason": None, "stop_sequence": None,
                        "usage": dict(usage, output_tokens=1)}})
                    ev("ping", {"type": "ping"})
                    for i, b in enumerate(content):
                        t = b["type"]
                        if t == "text":
                            ev("content_block_start", {"type": "content_block_start", "index": i,
                                                       "content_block": {"type": "text", "text": ""}})
                            text = b["text"]
                            for k in range(0, len(text), 40):
                                ev("content_block_delta", {"type": "content_block_delta", "index": i,
                                                           "delta": {"type": "text_delta", "text": text[k:k + 40]}})
                        elif t == "thinking":
                            ev("content_block_start", {"type": "content_block_start", "index": i,
                                                       "content_block": {"type": "thinking", "thinking": "",
                                                                         "signature": ""}})
                            ev("content_block_delta", {"type": "content_block_delta", "index": i,
                                                       "delta": {"type": "thinking_delta", "thinking": b["thinking"]}})
                            ev("content_block_delta", {"type": "content_block_delta", "index": i,
                                                       "delta": {"type": "signature_delta", "signature": b["signature"]}})
                        elif t == "tool_use":
                            ev("content_block_start", {"type": "content_block_start", "index": i,
                                                       "content_block": {"type": "tool_use", "id": b["id"],
                                                                         "name": b["name"], "input": {}}})
                            js = json.dumps(b.get("input", {}))
                            for k in range(0, len(js), 30):
                                ev("content_block_delta", {"type": "content_block_delta", "index": i,
                                                           "delta": {"type": "input_json_delta",
                                                                     "partial_json": js[k:k + 30]}})
                        ev("content_block_stop", {"type": "content_block_stop", "index": i})
                        if i == 0 and rule.get("first_delay"):
                            time.sleep(float(rule["first_delay"]))
                    ev("message_delta", {"type": "message_delta",
                                         "delta": {"stop_reason": stop, "stop_sequence": None},
                                         "usage": {"output_tokens": out_tokens}})
                    ev("message_stop", {"type": "message_stop"})
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer((self.host, self.port), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    @property
    def url(self):
        return f"http://{self.host}:{self.port}"

    def stop(self):
        if self.httpd:
            self.httpd.shutdown()
            self.httpd.server_close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--script", help="JSON file holding the list of rules")
    ap.add_argument("--log", help="append one JSON line per request here")
    ap.add_argument("--dump", help="save every request body whole in this folder")
    a = ap.parse_args()
    script = json.load(open(a.script)) if a.script else []
    srv = FakeAnthropic(script, a.log, port=a.port, dump_dir=a.dump).start()
    print(srv.url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        srv.stop()


if __name__ == "__main__":
    sys.exit(main())
