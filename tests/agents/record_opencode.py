#!/usr/bin/env python3
"""Records what the real opencode writes to disk, run offline against fakemodel/openai.py.

    python3 tests/agents/record_opencode.py [scenario ...]   # default: all scenarios
    OPENCODE_VERSION=1.18.33 python3 tests/agents/record_opencode.py

Installs `opencode-ai@VERSION` into ~/.cache/openprogram-agents/opencode[-VERSION] (npm;
the package ships its native binary), starts the fake Chat Completions server on a free
loopback port, declares it as an `@ai-sdk/openai-compatible` provider in
$XDG_CONFIG_HOME/opencode/opencode.json, and runs `opencode run` (then
`opencode run --session <id>`) with HOME and the XDG folders under a throwaway folder
(/tmp/op-agent-rec-opencode/home/user, the project in .../project, a small git repository).
models.dev is not fetched (OPENCODE_DISABLE_MODELS_FETCH=1: the provider is declared whole
in the config), nor the auto-update, LSP downloads or default plugins.

A watcher thread polls opencode.db and its -wal every ~10 ms; after each change it opens
the database read-only and records the rows inserted, updated and deleted in every table
since the last look (keyed by rowid), so the order in which opencode writes sessions,
messages and parts, with their times, is known.  Output:
tests/agents/recordings/opencode/<scenario>/{files/opencode.sql (iterdump of the final
database), files/storage/** (if opencode wrote JSON files), writes.jsonl, manifest.json},
with the throwaway home replaced by /home/user.  Replaying writes.jsonl is checked to give
the final rows.
"""
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "fakemodel"))
import openai as fakemodel  # noqa: E402

TOOL = "opencode"
PACKAGE = "opencode-ai"
VERSION = os.environ.get("OPENCODE_VERSION", "1.18.33")
DEFAULT_VERSION = "1.18.33"
CACHE = os.path.expanduser("~/.cache/openprogram-agents/opencode" + ("" if VERSION == DEFAULT_VERSION else "-" + VERSION))
BASE = "/tmp/op-agent-rec-opencode"  # a folder of its own: other recorders clear /tmp/op-agent-rec
HOME = BASE + "/home/user"
PROJECT = HOME + "/project"
DATA = HOME + "/.local/share/opencode"
OUT = os.path.join(HERE, "recordings", "opencode" + ("" if VERSION == DEFAULT_VERSION else "-" + VERSION))
MODEL = "fake-model"

SIDE = [{"match": "title generator", "text": "Demo project chores"},
        {"match": "summarize", "text": "A summary of the conversation so far."}]


def scenarios():
    P = PROJECT
    sc = {
        "multi_turn_tools": {
            "steps": [
                "List the files here and tell me what README.md says.",
                "Fix the typo in README.md.",
                "Write a NOTES.md saying hello, then run the tests.",
            ],
            "turns": [
                {"match": "List the files here", "steps": [
                    {"items": [{"type": "text", "text": "I'll list the files first."},
                               {"type": "call", "name": "bash", "arguments": {"command": "ls", "description": "Lists the project's files"}}]},
                    {"items": [{"type": "call", "name": "read", "arguments": {"filePath": P + "/README.md"}}]},
                    {"items": [{"type": "text", "text": "The project holds README.md, calc.py and test_calc.py. README.md says: \"A tiny projet to try agents on.\" (with a typo)."}]}]},
                {"match": "Fix the typo", "steps": [
                    {"items": [{"type": "call", "name": "edit", "arguments": {"filePath": P + "/README.md", "oldString": "A tiny projet", "newString": "A tiny project"}}]},
                    {"items": [{"type": "text", "text": "Fixed: \"projet\" is now \"project\" in README.md."}]}]},
                {"match": "Write a NOTES.md", "steps": [
                    {"items": [{"type": "call", "name": "write", "arguments": {"filePath": P + "/NOTES.md", "content": "# Notes\n\nhello\n"}}]},
                    {"items": [{"type": "text", "text": "NOTES.md is written; now the tests."},
                               {"type": "call", "name": "bash", "arguments": {"command": "python3 -m unittest -q 2>&1 | tail -3", "description": "Runs the unit tests"}}]},
                    {"items": [{"type": "text", "text": "All tests pass (2 tests, OK)."}]}]},
            ],
        },
        "slow_step": {
            "steps": ["Wait eight seconds, then say done."],
            "turns": [
                {"match": "Wait eight seconds", "steps": [
                    {"items": [{"type": "text", "text": "Sleeping now."},
                               {"type": "call", "name": "bash", "arguments": {"command": "sleep 8 && echo slept", "description": "Sleeps eight seconds"}}]},
                    {"delay": 5, "items": [{"type": "text", "text": "Done: slept 8 seconds."}]}]},
            ],
        },
        "subagent": {
            "steps": ["Ask a helper agent to count the lines of calc.py, then report."],
            "turns": [
                {"match": "Ask a helper agent", "steps": [
                    {"items": [{"type": "text", "text": "I'll hand this to a helper."},
                               {"type": "call", "name": "task", "arguments": {
                                   "description": "Count calc.py lines", "subagent_type": "general",
                                   "prompt": "Count the lines of calc.py and answer with the number."}}]},
                    {"items": [{"type": "text", "text": "The helper counted 6 lines in calc.py."}]}]},
                {"match": "Count the lines of calc.py", "steps": [
                    {"items": [{"type": "call", "name": "bash", "arguments": {"command": "wc -l calc.py", "description": "Counts lines"}}]},
                    {"items": [{"type": "text", "text": "6"}]}]},
            ],
        },
    }
    # (OPENCODE_EXPERIMENTAL_EVENT_SYSTEM=1, tried on multi_turn_tools with 1.18.33, leaves
    # session_message empty too: the same rows as without it.  A scenario may set "env".)
    return sc


# --------------------------------------------------------------------------- helpers


def install():
    exe = os.path.join(CACHE, "node_modules", "opencode-ai", "bin", "opencode.exe")
    pkg = os.path.join(CACHE, "node_modules", "opencode-ai", "package.json")
    if not (os.path.exists(pkg) and json.load(open(pkg)).get("version") == VERSION):
        os.makedirs(CACHE, exist_ok=True)
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", CACHE, f"{PACKAGE}@{VERSION}"], check=True)
    # the platform package's binary (the wrapper's postinstall links it as bin/opencode.exe)
    for plat in ("opencode-linux-x64", "opencode-linux-x64-baseline"):
        b = os.path.join(CACHE, "node_modules", plat, "bin", "opencode")
        if os.path.exists(b):
            return b
    return exe


def make_project():
    shutil.rmtree(BASE, ignore_errors=True)
    os.makedirs(PROJECT)
    files = {
        "README.md": "# Demo project\nA tiny projet to try agents on.\n",
        "calc.py": "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n",
        "test_calc.py": "import unittest\nfrom calc import add, mul\n\n\nclass T(unittest.TestCase):\n"
                        "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n"
                        "    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n",
    }
    for name, text in files.items():
        with open(os.path.join(PROJECT, name), "w") as f:
            f.write(text)
    g = ["git", "-c", "user.name=Test User", "-c", "user.email=user@example.com", "-c", "init.defaultBranch=main"]
    subprocess.run(g + ["init", "-q"], cwd=PROJECT, check=True)
    subprocess.run(g + ["add", "."], cwd=PROJECT, check=True)
    subprocess.run(g + ["commit", "-qm", "Initial commit"], cwd=PROJECT, check=True,
                   env=dict(os.environ, GIT_AUTHOR_DATE="2025-01-01T00:00:00Z", GIT_COMMITTER_DATE="2025-01-01T00:00:00Z"))


def read_db(path):
    """{table: {rowid: row dict}} of every table, read-only (the -wal included)."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=2)
    try:
        out = {}
        tables = [r[0] for r in con.execute("select name from sqlite_master where type='table' and name not like 'sqlite_%'")]
        for t in tables:
            try:
                cur = con.execute(f'select rowid as __rowid, * from "{t}"')
            except sqlite3.OperationalError:
                cur = con.execute(f'select * from "{t}"')
            cols = [d[0] for d in cur.description]
            rows = {}
            for n, r in enumerate(cur.fetchall()):
                d = dict(zip(cols, r))
                key = d.pop("__rowid", n)
                rows[key] = d
            out[t] = rows
        return out
    finally:
        con.close()


class DbWatcher(threading.Thread):
    def __init__(self, db, t0):
        super().__init__(daemon=True)
        self.db, self.t0 = db, t0
        self.sig = None
        self.state = {}
        self.ops = []       # raw (not neutralised) ops
        self.looks = 0
        self.stop_flag = threading.Event()

    def signature(self):
        s = []
        for suffix in ("", "-wal"):
            try:
                st = os.stat(self.db + suffix)
                s.append((st.st_size, st.st_mtime_ns))
            except FileNotFoundError:
                s.append(None)
        return tuple(s)

    def look(self, force=False):
        sig = self.signature()
        if sig[0] is None or (sig == self.sig and not force):
            return
        t = round((time.monotonic() - self.t0) * 1000)
        try:
            now = read_db(self.db)
        except sqlite3.Error:
            return  # being created or locked: look again at the next tick
        self.sig = sig
        self.looks += 1
        for table in sorted(set(now) | set(self.state)):
            old, new = self.state.get(table, {}), now.get(table, {})
            for k, row in new.items():
                if k not in old:
                    self.ops.append({"t_ms": t, "table": table, "op": "insert", "rowid": k, "row": row})
                elif old[k] != row:
                    self.ops.append({"t_ms": t, "table": table, "op": "update", "rowid": k, "row": row})
            for k, row in old.items():
                if k not in new:
                    self.ops.append({"t_ms": t, "table": table, "op": "delete", "rowid": k, "row": row})
        self.state = now

    def run(self):
        while not self.stop_flag.is_set():
            self.look()
            time.sleep(0.01)

    def stop(self):
        self.stop_flag.set()
        self.join()
        self.look(force=True)


def neutral_text(s):
    s = s.replace(BASE + "/home/user", "/home/user")
    s = s.replace(BASE, "")
    host = socket.gethostname()
    if host and len(host) > 3:
        s = s.replace(host, "host")
    return s


def neutral(v):
    if isinstance(v, str):
        return neutral_text(v)
    if isinstance(v, dict):
        return {k: neutral(x) for k, x in v.items()}
    if isinstance(v, list):
        return [neutral(x) for x in v]
    return v


def replay(ops):
    state = {}
    for o in ops:
        t = state.setdefault(o["table"], {})
        if o["op"] == "delete":
            t.pop(o["rowid"], None)
        else:
            t[o["rowid"]] = o["row"]
    return {k: v for k, v in state.items() if v}


# --------------------------------------------------------------------------- counting


def jl(s):
    try:
        return json.loads(s)
    except Exception:
        return {}


def expect_from(db):
    """Counts computed straight from the final rows (not by our importer)."""
    sessions = sorted(db.get("session", {}).values(), key=lambda r: r["time_created"])
    msgs = [dict(jl(r["data"]), id=r["id"], sessionID=r["session_id"], _created=r["time_created"]) for r in db.get("message", {}).values()]
    parts = [dict(jl(r["data"]), id=r["id"], messageID=r["message_id"], sessionID=r["session_id"]) for r in db.get("part", {}).values()]
    msgs.sort(key=lambda m: (m["_created"], m["id"]))
    parts.sort(key=lambda p: p["id"])
    convs = []
    for s in sessions:
        sid = s["id"]
        sm = [m for m in msgs if m["sessionID"] == sid]
        sp = [p for p in parts if p["sessionID"] == sid]
        prompts = []
        for m in sm:
            if m.get("role") != "user":
                continue
            texts = [p.get("text", "") for p in sp if p["messageID"] == m["id"] and p.get("type") == "text" and not p.get("synthetic")]
            prompts.append("\n".join(texts))
        amsgs = [m for m in sm if m.get("role") == "assistant"]
        tool_parts = [p for p in sp if p.get("type") == "tool"]
        kinds = {}
        for p in sp:
            kinds[p.get("type")] = kinds.get(p.get("type"), 0) + 1
        convs.append({
            "id": sid,
            "parent": s.get("parent_id"),
            "title": s.get("title"),
            "prompts": prompts,
            "user_messages": sum(1 for m in sm if m.get("role") == "user"),
            "assistant_messages": len(amsgs),
            "assistant_finish": [m.get("finish") for m in amsgs],
            "assistant_texts": sum(1 for p in sp if p.get("type") == "text" and any(m["id"] == p["messageID"] for m in amsgs)),
            "tool_calls": len(tool_parts),
            "tool_results": sum(1 for p in tool_parts if (p.get("state") or {}).get("status") in ("completed", "error")),
            "tools": [p.get("tool") for p in tool_parts],
            "part_types": dict(sorted(kinds.items())),
            "session_message_rows": sum(1 for r in db.get("session_message", {}).values() if r["session_id"] == sid),
        })
    return {
        "meaning": {
            "conversations": "rows of table session (a sub-agent's session included)",
            "user_prompts": "messages with role=user in sessions without parent_id (typed prompts); the prompt is their non-synthetic text parts joined",
            "subagent_task_messages": "messages with role=user in child sessions: the task tool's prompt",
            "assistant_messages": "messages with role=assistant (one per model step: a tool step ends with finish=tool-calls)",
            "assistant_texts": "parts of type text in assistant messages",
            "tool_calls": "parts of type tool",
            "tool_results": "tool parts whose state.status is completed or error",
            "subagents": "sessions with parent_id (the task tool's child sessions)",
        },
        "conversations": len(convs),
        "user_prompts": sum(c["user_messages"] for c in convs if not c["parent"]),
        "subagent_task_messages": sum(c["user_messages"] for c in convs if c["parent"]),
        "assistant_messages": sum(c["assistant_messages"] for c in convs),
        "assistant_texts": sum(c["assistant_texts"] for c in convs),
        "tool_calls": sum(c["tool_calls"] for c in convs),
        "tool_results": sum(c["tool_results"] for c in convs),
        "subagents": [{"id": c["id"], "parent": c["parent"]} for c in convs if c["parent"]],
        "row_counts": {t: len(rows) for t, rows in sorted(db.items())},
        "per_conversation": convs,
    }


# --------------------------------------------------------------------------- running


def run_scenario(name, exe):
    sc = scenarios()[name]
    print(f"== opencode {VERSION} {name}", flush=True)
    make_project()
    log_path = os.path.join(BASE, "requests.jsonl")
    srv, port = fakemodel.serve({"model": MODEL, "turns": sc["turns"], "side": SIDE, "fallback": "OK."}, 0, log_path)
    cfg_dir = HOME + "/.config/opencode"
    os.makedirs(cfg_dir)
    config = {
        "$schema": "https://opencode.ai/config.json",
        "provider": {"fake": {
            "npm": "@ai-sdk/openai-compatible", "name": "Fake",
            "options": {"baseURL": f"http://127.0.0.1:{port}/v1", "apiKey": "sk-fake"},
            "models": {MODEL: {"name": "Fake Model", "tool_call": True, "limit": {"context": 128000, "output": 8192}}}}},
        "model": f"fake/{MODEL}", "small_model": f"fake/{MODEL}",
        "autoupdate": False, "share": "disabled",
        "permission": {"edit": "allow", "bash": "allow", "webfetch": "allow"},
    }
    with open(cfg_dir + "/opencode.json", "w") as f:
        json.dump(config, f, indent=1)
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": HOME,
           "XDG_CONFIG_HOME": HOME + "/.config", "XDG_DATA_HOME": HOME + "/.local/share",
           "XDG_CACHE_HOME": HOME + "/.cache", "XDG_STATE_HOME": HOME + "/.local/state",
           "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1",
           "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
           "OPENCODE_DISABLE_SHARE": "1", "TERM": "dumb", "LANG": "C.UTF-8", "USER": "user", "LOGNAME": "user",
           "NO_COLOR": "1"}
    env.update({k: v for k, v in sc.get("env", {}).items()})
    t0 = time.monotonic()
    w = DbWatcher(DATA + "/opencode.db", t0)
    w.start()
    steps, session_id = [], None
    for i, prompt in enumerate(sc["steps"]):
        # `opencode run` quotes a message argument that holds spaces: pass the words apart
        cmd = [exe, "run", "--format", "json"]
        if session_id:
            cmd += ["--session", session_id]
        cmd += prompt.split(" ")
        ts = round((time.monotonic() - t0) * 1000)
        p = subprocess.run(cmd, cwd=PROJECT, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)
        te = round((time.monotonic() - t0) * 1000)
        events = []
        for line in p.stdout.splitlines():
            try:
                events.append(json.loads(line))
            except Exception:
                pass
        for e in events:
            sid = e.get("sessionID") or (e.get("part") or {}).get("sessionID")
            if sid and session_id is None:
                session_id = sid
        texts = [(e.get("part") or {}).get("text") for e in events if e.get("type") == "text"]
        steps.append({"t_start_ms": ts, "t_end_ms": te, "command": "run" + (" --session" if i else ""),
                      "prompt": prompt, "exit_code": p.returncode, "final_text": texts[-1] if texts else None})
        print(f"  step {i}: rc={p.returncode} {te - ts} ms session={session_id}", flush=True)
        if p.returncode != 0 or not texts:
            print(p.stdout[-2000:], p.stderr[-3000:], flush=True)
        time.sleep(0.3)
    time.sleep(0.5)
    w.stop()
    srv.shutdown()
    final = read_db(DATA + "/opencode.db")
    replayed = replay(w.ops)
    assert replayed == {k: v for k, v in final.items() if v}, "replaying the watched changes does not give the final rows"
    out = os.path.join(OUT, name)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.join(out, "files"))
    con = sqlite3.connect(f"file:{DATA}/opencode.db?mode=ro", uri=True)
    with open(os.path.join(out, "files", "opencode.sql"), "w") as f:
        for line in con.iterdump():
            f.write(neutral_text(line) + "\n")
    con.close()
    storage = DATA + "/storage"
    if os.path.isdir(storage):
        for dp, dn, fn in os.walk(storage):
            for n in fn:
                src = os.path.join(dp, n)
                dst = os.path.join(out, "files", "storage", os.path.relpath(src, storage))
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                with open(dst, "w") as f:
                    f.write(neutral_text(open(src, "rb").read().decode("utf-8", "replace")))
    with open(os.path.join(out, "writes.jsonl"), "w") as f:
        for o in w.ops:
            f.write(json.dumps(neutral(o), ensure_ascii=False) + "\n")
    reqs = [json.loads(l) for l in open(log_path)]
    other_files = sorted(os.path.relpath(os.path.join(dp, n), DATA) for dp, dn, fn in os.walk(DATA) for n in fn
                         if "/snapshot/" not in os.path.join(dp, n) and not os.path.relpath(os.path.join(dp, n), DATA).startswith("snapshot/"))
    manifest = {
        "tool": TOOL, "version": VERSION, "scenario": name, "model": f"fake/{MODEL}",
        "env": sc.get("env", {}),
        "home": "/home/user", "cwd": "/home/user/project",
        "steps": steps,
        "typed_prompts": sc["steps"],
        "model_requests": [{"turn": (r.get("info") or {}).get("turn"), "step": (r.get("info") or {}).get("step"),
                            "side": (r.get("info") or {}).get("side")} for r in reqs if r.get("api")],
        "unknown_requests": [r.get("path") for r in reqs if r.get("unknown")],
        "tools_offered": sorted({t for r in reqs for t in (r.get("tools") or [])}),
        "data_dir_files": other_files,
        "db_looks": w.looks,
        "expect": expect_from(final),
        "write_ops": {k: sum(1 for o in w.ops if o["op"] == k) for k in ("insert", "update", "delete")},
        "write_ops_by_table": {t: sum(1 for o in w.ops if o["table"] == t) for t in sorted({o["table"] for o in w.ops})},
    }
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(neutral(manifest), f, indent=1, ensure_ascii=False)
        f.write("\n")
    size = sum(os.path.getsize(os.path.join(dp, n)) for dp, dn, fn in os.walk(out) for n in fn)
    print(f"  wrote {out}: {len(w.ops)} ops, {size // 1024} KB", flush=True)


def main():
    names = sys.argv[1:] or list(scenarios())
    exe = install()
    for n in names:
        run_scenario(n, exe)


if __name__ == "__main__":
    main()
