#!/usr/bin/env python3
"""A scripted fake OpenAI model server (stdlib only) for recording agent tools.

Serves, on 127.0.0.1 only:
  POST /v1/responses          OpenAI Responses API, streamed as SSE (Codex CLI)
  POST /v1/chat/completions   Chat Completions, streamed (stream: true) or not (opencode)
  GET  /v1/models             a list holding the scripted model names
Every other path is answered 404 and logged.

Replies come from a *script* (JSON), chosen by looking at the request, never by
arrival order, so that a retry or a side request never shifts the conversation:

  {"model": "fake-model",
   "turns": [
     {"match": "List the files",               # substring of a user message
      "steps": [                               # step n = reply after n rounds of tool results
        {"delay": 0, "items": [
            {"type": "text", "text": "Let me look."},
            {"type": "call", "name": "shell", "arguments": {"command": ["ls"]}}]},
        {"items": [{"type": "text", "text": "Two files."}]}]}],
   "side": [{"match": "title", "text": "A title"}],   # requests with no tools / side prompts
   "fallback": "OK."}

How a request is matched: the user messages of the request are read from the end;
the first one containing some turn's `match` picks that turn.  The step is the number
of tool-result runs (function_call_output items in Responses, role "tool" messages in
Chat Completions) after that user message.  A step past the end of `steps` repeats the
last step's text only (no calls), so a tool never loops forever.  Requests that match
no turn, or whose system prompt matches a `side` entry (title generation, summaries),
are answered with that entry's text (or `fallback`) and consume nothing.

A call's `name` may be a list of alternatives: the first one that the request offers
as a tool is used (`"name": ["exec_command", "shell"]`).  `arguments` may be a dict
(sent as JSON) or a string; a string value "$out.KEY" inside it is replaced by KEY of the
latest tool result in the request that is a JSON object holding KEY (a spawned agent's id).
`"namespace"` is sent along on a Responses function_call (Codex's multi_agent_v1 tools).  `"type": "custom"` sends a Responses `custom_tool_call`
with `input` (Codex's freeform apply_patch); with `"name": ["apply_patch"]` and
`"type": "patch"` the server picks custom or function form from the tool list.

Every request and its reply are appended to --log as JSON lines (the request body,
the chosen turn/step, unknown paths).

    python3 openai.py --script s.json --port 0 --port-file /tmp/port --log /tmp/req.jsonl
"""
import argparse
import http.server
import itertools
import json
import os
import sys
import threading
import time

_ids = itertools.count(1)
_lock = threading.Lock()


def next_id(prefix):
    with _lock:
        return f"{prefix}_{next(_ids):06d}"


def text_of(content):
    """The text of a message's content (string or list of parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    out = []
    if isinstance(content, list):
        for p in content:
            if isinstance(p, dict):
                t = p.get("text")
                if isinstance(t, str):
                    out.append(t)
            elif isinstance(p, str):
                out.append(p)
    return "\n".join(out)


class Script:
    def __init__(self, data):
        self.data = data
        self.model = data.get("model", "fake-model")
        self.turns = data.get("turns", [])
        self.side = data.get("side", [])
        self.fallback = data.get("fallback", "OK.")

    def find_turn(self, user_texts):
        """user_texts: list of (index, text) of user messages in request order."""
        for idx, text in reversed(user_texts):
            for t in self.turns:
                m = t["match"]
                if m in text:
                    return t, idx
        return None, None

    def side_for(self, system_text, user_text):
        for s in self.side:
            m = s["match"]
            where = s.get("where", "system")
            hay = system_text if where == "system" else user_text if where == "user" else system_text + "\n" + user_text
            if m.lower() in hay.lower():
                return s
        return None


def tool_outputs(items):
    """Texts of the tool results in a request (Responses items or chat messages), last first."""
    out = []
    for it in reversed(items):
        if it.get("type") in ("function_call_output", "custom_tool_call_output") or it.get("role") == "tool":
            o = it.get("output", it.get("content"))
            out.append(o if isinstance(o, str) else text_of(o) if isinstance(o, list) else json.dumps(o))
    return out


def fill(args, outputs):
    """Replaces "$out.KEY" strings in args by KEY of the latest tool output that is JSON holding it."""
    if isinstance(args, dict):
        return {k: fill(v, outputs) for k, v in args.items()}
    if isinstance(args, list):
        return [fill(v, outputs) for v in args]
    if isinstance(args, str) and args.startswith("$out."):
        key = args[5:]
        for o in outputs:
            try:
                d = json.loads(o)
            except Exception:
                continue
            if isinstance(d, dict) and key in d:
                return d[key]
    return args


def pick_name(name, tool_names):
    if isinstance(name, str):
        return name
    for n in name:
        if n in tool_names:
            return n
    return name[0]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fakemodel-openai/1"

    def log_message(self, fmt, *args):  # quiet
        pass

    # --- plumbing -------------------------------------------------------
    def log(self, rec):
        rec["t"] = time.time()
        with _lock:
            with open(self.server.log_path, "a") as f:
                f.write(json.dumps(rec) + "\n")

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        if self.headers.get("Content-Encoding") == "zstd":
            raise ValueError("zstd body not supported")
        if self.headers.get("Content-Encoding") in ("gzip",):
            import gzip
            raw = gzip.decompress(raw)
        try:
            return json.loads(raw or b"{}")
        except Exception:
            return {"_raw": raw.decode("utf-8", "replace")}

    def send_json(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def start_sse(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def sse(self, event, obj):
        if event:
            chunk = f"event: {event}\ndata: {json.dumps(obj)}\n\n"
        else:
            chunk = f"data: {json.dumps(obj) if not isinstance(obj, str) else obj}\n\n"
        self.wfile.write(chunk.encode())
        self.wfile.flush()

    # --- routes ---------------------------------------------------------
    def do_GET(self):
        path = self.path.split("?")[0]
        if path.rstrip("/").endswith("/models"):
            m = self.server.script.model
            self.log({"path": self.path, "method": "GET"})
            return self.send_json(200, {"object": "list", "data": [
                {"id": m, "object": "model", "created": 1700000000, "owned_by": "fake"}],
                "models": [{"slug": m, "display_name": m}]})
        self.log({"path": self.path, "method": "GET", "unknown": True})
        self.send_json(404, {"error": {"message": f"unknown path {self.path}"}})

    def do_POST(self):
        path = self.path.split("?")[0]
        try:
            req = self.body()
        except Exception as e:
            self.log({"path": self.path, "method": "POST", "error": str(e)})
            return self.send_json(400, {"error": {"message": str(e)}})
        if path.endswith("/responses"):
            return self.api_responses(req)
        if path.endswith("/chat/completions"):
            return self.api_chat(req)
        self.log({"path": self.path, "method": "POST", "unknown": True, "body": req})
        self.send_json(404, {"error": {"message": f"unknown path {self.path}"}})

    # --- choosing a reply ----------------------------------------------
    def choose(self, user_texts, runs_after, system_text, has_tools):
        """Returns (reply dict, info dict)."""
        script = self.server.script
        turn, idx = script.find_turn(user_texts)
        last_user = user_texts[-1][1] if user_texts else ""
        side = script.side_for(system_text, last_user)
        if side is not None and (turn is None or side.get("override", True)):
            return {"items": [{"type": "text", "text": side["text"]}], "delay": side.get("delay", 0)}, {"side": side["match"]}
        if turn is None:
            return {"items": [{"type": "text", "text": script.fallback}]}, {"fallback": True}
        step = runs_after(idx)
        steps = turn["steps"]
        if step < len(steps):
            return steps[step], {"turn": turn["match"], "step": step}
        last = steps[-1]
        texts = [i for i in last.get("items", []) if i.get("type") == "text"] or [{"type": "text", "text": script.fallback}]
        return {"items": texts}, {"turn": turn["match"], "step": step, "past_end": True}

    # --- Responses API --------------------------------------------------
    def api_responses(self, req):
        inp = req.get("input") or []
        if isinstance(inp, str):
            inp = [{"type": "message", "role": "user", "content": inp}]
        user_texts = []
        for i, it in enumerate(inp):
            if it.get("type", "message") == "message" and it.get("role") == "user":
                user_texts.append((i, text_of(it.get("content"))))
        system_text = req.get("instructions") or ""
        tools = req.get("tools") or []
        tool_names = {t.get("name") or (t.get("function") or {}).get("name") for t in tools}
        tool_kinds = {(t.get("name") or (t.get("function") or {}).get("name")): t.get("type") for t in tools}

        def runs_after(idx):
            runs, prev = 0, False
            for it in inp[idx + 1:]:
                is_out = it.get("type") in ("function_call_output", "custom_tool_call_output", "local_shell_call_output", "tool_search_output")
                if is_out and not prev:
                    runs += 1
                prev = is_out
            return runs

        reply, info = self.choose(user_texts, runs_after, system_text, bool(tools))
        self.log({"path": self.path, "api": "responses", "info": info, "tools": sorted(n for n in tool_names if n), "body": req})
        delay = reply.get("delay", 0)
        if delay:
            time.sleep(delay)
        resp_id = next_id("resp")
        model = req.get("model") or self.server.script.model
        base = {"id": resp_id, "object": "response", "created_at": int(time.time()), "model": model,
                "status": "in_progress", "output": []}
        self.start_sse()
        seq = itertools.count()
        self.sse("response.created", {"type": "response.created", "sequence_number": next(seq), "response": base})
        self.sse("response.in_progress", {"type": "response.in_progress", "sequence_number": next(seq), "response": base})
        outputs = []
        for n, item in enumerate(reply.get("items", [])):
            kind = item.get("type")
            if kind == "text":
                mid = next_id("msg")
                start = {"type": "message", "id": mid, "role": "assistant", "status": "in_progress", "content": []}
                self.sse("response.output_item.added", {"type": "response.output_item.added", "sequence_number": next(seq), "output_index": n, "item": start})
                self.sse("response.content_part.added", {"type": "response.content_part.added", "sequence_number": next(seq), "item_id": mid, "output_index": n, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}})
                text = item["text"]
                pieces = [text[i:i + 24] for i in range(0, len(text), 24)] or [""]
                for p in pieces:
                    self.sse("response.output_text.delta", {"type": "response.output_text.delta", "sequence_number": next(seq), "item_id": mid, "output_index": n, "content_index": 0, "delta": p})
                    if item.get("chunk_delay"):
                        time.sleep(item["chunk_delay"])
                self.sse("response.output_text.done", {"type": "response.output_text.done", "sequence_number": next(seq), "item_id": mid, "output_index": n, "content_index": 0, "text": text})
                part = {"type": "output_text", "text": text, "annotations": []}
                self.sse("response.content_part.done", {"type": "response.content_part.done", "sequence_number": next(seq), "item_id": mid, "output_index": n, "content_index": 0, "part": part})
                done = {"type": "message", "id": mid, "role": "assistant", "status": "completed", "content": [part]}
            elif kind in ("call", "custom", "patch"):
                name = pick_name(item["name"], tool_names)
                cid = item.get("call_id") or next_id("call")
                fid = next_id("fc")
                args = fill(item.get("arguments", {}), tool_outputs(inp))
                custom = kind == "custom" or (kind == "patch" and tool_kinds.get(name) == "custom")
                if custom:
                    inp_text = item.get("input") if "input" in item else (args if isinstance(args, str) else args.get("input", ""))
                    start = {"type": "custom_tool_call", "id": fid, "status": "in_progress", "call_id": cid, "name": name, "input": ""}
                    done = {"type": "custom_tool_call", "id": fid, "status": "completed", "call_id": cid, "name": name, "input": inp_text}
                    self.sse("response.output_item.added", {"type": "response.output_item.added", "sequence_number": next(seq), "output_index": n, "item": start})
                    self.sse("response.custom_tool_call_input.delta", {"type": "response.custom_tool_call_input.delta", "sequence_number": next(seq), "item_id": fid, "output_index": n, "delta": inp_text})
                else:
                    if kind == "patch":  # function form of apply_patch: {"input": patch}
                        args = {"input": item.get("input", args if isinstance(args, str) else args.get("input", ""))}
                    a = args if isinstance(args, str) else json.dumps(args)
                    start = {"type": "function_call", "id": fid, "status": "in_progress", "call_id": cid, "name": name, "arguments": ""}
                    done = {"type": "function_call", "id": fid, "status": "completed", "call_id": cid, "name": name, "arguments": a}
                    if item.get("namespace"):
                        start["namespace"] = done["namespace"] = item["namespace"]
                    self.sse("response.output_item.added", {"type": "response.output_item.added", "sequence_number": next(seq), "output_index": n, "item": start})
                    self.sse("response.function_call_arguments.delta", {"type": "response.function_call_arguments.delta", "sequence_number": next(seq), "item_id": fid, "output_index": n, "delta": a})
                    self.sse("response.function_call_arguments.done", {"type": "response.function_call_arguments.done", "sequence_number": next(seq), "item_id": fid, "output_index": n, "arguments": a})
            else:
                continue
            self.sse("response.output_item.done", {"type": "response.output_item.done", "sequence_number": next(seq), "output_index": n, "item": done})
            outputs.append(done)
        usage = {"input_tokens": 1000 + 10 * len(inp), "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": 20 * max(1, len(outputs)), "output_tokens_details": {"reasoning_tokens": 0}}
        usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
        fin = dict(base, status="completed", output=outputs, usage=usage)
        self.sse("response.completed", {"type": "response.completed", "sequence_number": next(seq), "response": fin})

    # --- Chat Completions ----------------------------------------------
    def api_chat(self, req):
        msgs = req.get("messages") or []
        user_texts = [(i, text_of(m.get("content"))) for i, m in enumerate(msgs) if m.get("role") == "user"]
        system_text = "\n".join(text_of(m.get("content")) for m in msgs if m.get("role") in ("system", "developer"))
        tools = req.get("tools") or []
        tool_names = {(t.get("function") or {}).get("name") or t.get("name") for t in tools}

        def runs_after(idx):
            runs, prev = 0, False
            for m in msgs[idx + 1:]:
                is_out = m.get("role") == "tool"
                if is_out and not prev:
                    runs += 1
                prev = is_out
            return runs

        reply, info = self.choose(user_texts, runs_after, system_text, bool(tools))
        self.log({"path": self.path, "api": "chat", "info": info, "tools": sorted(n for n in tool_names if n), "body": req})
        delay = reply.get("delay", 0)
        if delay:
            time.sleep(delay)
        cid = next_id("chatcmpl")
        model = req.get("model") or self.server.script.model
        created = int(time.time())
        texts = [i for i in reply.get("items", []) if i.get("type") == "text"]
        calls = [i for i in reply.get("items", []) if i.get("type") in ("call", "custom", "patch")]
        call_objs = []
        for c in calls:
            name = pick_name(c["name"], tool_names)
            args = fill(c.get("arguments", {}), tool_outputs(msgs))
            call_objs.append({"id": c.get("call_id") or next_id("call"), "type": "function",
                              "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}})
        finish = "tool_calls" if call_objs else "stop"
        pt = 1000 + 10 * len(msgs)
        ct = 20 * max(1, len(texts) + len(calls))
        usage = {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct}
        full_text = "\n\n".join(t["text"] for t in texts)
        if not req.get("stream"):
            msg = {"role": "assistant", "content": full_text or None}
            if call_objs:
                msg["tool_calls"] = call_objs
            return self.send_json(200, {"id": cid, "object": "chat.completion", "created": created, "model": model,
                                        "choices": [{"index": 0, "message": msg, "finish_reason": finish}], "usage": usage})
        self.start_sse()

        def chunk(delta, fr=None, use=None):
            o = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                 "choices": [{"index": 0, "delta": delta, "finish_reason": fr}]}
            if use is not None:
                o["usage"] = use
            self.sse(None, o)

        chunk({"role": "assistant", "content": ""})
        chunk_delay = max([t.get("chunk_delay", 0) for t in texts] or [0])
        for p in [full_text[i:i + 24] for i in range(0, len(full_text), 24)]:
            chunk({"content": p})
            if chunk_delay:
                time.sleep(chunk_delay)
        for k, c in enumerate(call_objs):
            chunk({"tool_calls": [{"index": k, "id": c["id"], "type": "function", "function": {"name": c["function"]["name"], "arguments": ""}}]})
            a = c["function"]["arguments"]
            for p in [a[i:i + 40] for i in range(0, len(a), 40)]:
                chunk({"tool_calls": [{"index": k, "function": {"arguments": p}}]})
        chunk({}, finish)
        if (req.get("stream_options") or {}).get("include_usage", True):
            o = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model, "choices": [], "usage": usage}
            self.sse(None, o)
        self.sse(None, "[DONE]")


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def serve(script, port=0, log_path="/dev/null"):
    """Starts the server in a thread; returns (server, port)."""
    srv = Server(("127.0.0.1", port), Handler)
    srv.script = script if isinstance(script, Script) else Script(script)
    srv.log_path = log_path
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    return srv, srv.server_address[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--script", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--log", default="/dev/null")
    a = ap.parse_args()
    with open(a.script) as f:
        script = Script(json.load(f))
    srv, port = serve(script, a.port, a.log)
    if a.port_file:
        with open(a.port_file, "w") as f:
            f.write(str(port))
    print(f"listening on 127.0.0.1:{port}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        srv.shutdown()


if __name__ == "__main__":
    main()
