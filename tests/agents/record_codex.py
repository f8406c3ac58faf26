#!/usr/bin/env python3
"""Records what the real Codex CLI writes to disk, run offline against fakemodel/openai.py.

    python3 tests/agents/record_codex.py [scenario ...]      # default: all scenarios
    python3 tests/agents/record_codex.py --recount           # manifests' counts again from files/

Installs `@openai/codex@VERSION` into ~/.cache/openprogram-agents/codex (npm; the package
ships its native binary), starts the fake Responses API server on a free loopback port,
and runs each scenario with HOME and CODEX_HOME under a throwaway folder
(HOME=/tmp/cdxhm, as long as /home/user; the project in $HOME/project, a small git repository).
A watcher thread polls $CODEX_HOME every ~10 ms and records each change of a transcript
(sessions/**, archived_sessions/**, session_index.jsonl) as an append, a whole rewrite or
a deletion.  Output: tests/agents/recordings/codex/<scenario>/{files/, writes.jsonl,
manifest.json} (and sqlite/*.json: the rows of Codex's own SQLite projections of its
threads, which are not transcripts), with the throwaway home replaced by /home/user.  Replaying writes.jsonl
in order is checked to give files/ exactly.  Needs no network but npm's registry.
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

TOOL = "codex"
PACKAGE = "@openai/codex"
VERSION = "0.171.0"
CACHE = os.path.expanduser("~/.cache/openprogram-agents/codex")
# HOME has as many bytes as /home/user, which replaces it: a fork's session_meta.history_base
# points into its parent's rollout by byte offset (end_byte_offset), kept true that way.
BASE = "/tmp/cdxhm"  # a folder of its own: other recorders clear /tmp/op-agent-rec
HOME = BASE
PROJECT = HOME + "/project"
CODEX_HOME = HOME + "/.codex"
OUT = os.path.join(HERE, "recordings", "codex")
WATCHED = ("sessions/", "archived_sessions/", "session_index.jsonl")
MODEL = "gpt-5.5"  # a slug Codex knows: its metadata offers apply_patch (freeform)

# --------------------------------------------------------------------------- scenarios
# Each step runs `codex exec` (the first) or `codex exec resume <id>` (the others) with
# one typed prompt.  The script's turns are matched by a substring of that prompt.

PATCH_README = """*** Begin Patch
*** Update File: README.md
@@
 # Demo project
-A tiny projet to try agents on.
+A tiny project to try agents on.
*** End Patch
"""

SCENARIOS = {
    "multi_turn_tools": {
        "model": MODEL,
        "steps": [
            "List the files here and tell me what README.md says.",
            "Fix the typo in README.md.",
            "Run the tests and tell me if they pass.",
        ],
        "script": {"turns": [
            {"match": "List the files here", "steps": [
                {"items": [{"type": "text", "text": "I'll list the files first."},
                           {"type": "call", "name": ["exec_command", "shell"], "arguments": {"cmd": "ls"}}]},
                {"items": [{"type": "call", "name": ["exec_command", "shell"], "arguments": {"cmd": "cat README.md"}}]},
                {"items": [{"type": "text", "text": "The project holds README.md, calc.py and test_calc.py. README.md says: \"A tiny projet to try agents on.\" (with a typo)."}]}]},
            {"match": "Fix the typo", "steps": [
                {"items": [{"type": "patch", "name": ["apply_patch"], "input": PATCH_README}]},
                {"items": [{"type": "text", "text": "Fixed: \"projet\" is now \"project\" in README.md."}]}]},
            {"match": "Run the tests", "steps": [
                {"items": [{"type": "call", "name": ["exec_command", "shell"], "arguments": {"cmd": "python3 -m unittest -q 2>&1 | tail -3"}}]},
                {"items": [{"type": "text", "text": "All tests pass (2 tests, OK)."}]}]},
        ]},
    },
    "subagent": {
        # The fallback metadata of an unknown slug offers the multi_agent_v1 tools
        # (spawn_agent, wait_agent, ...); gpt-5.5's does not.
        "model": "fake-model",
        "steps": ["Ask a helper agent to count the lines of calc.py, then report."],
        "script": {"turns": [
            {"match": "Ask a helper agent", "steps": [
                {"items": [{"type": "text", "text": "I'll hand this to a helper."},
                           {"type": "call", "name": "spawn_agent", "namespace": "multi_agent_v1",
                            "arguments": {"message": "Count the lines of calc.py and answer with the number."}}]},
                {"items": [{"type": "call", "name": "wait_agent", "namespace": "multi_agent_v1",
                            "arguments": {"targets": ["$out.agent_id"], "timeout_ms": 60000}}]},
                {"items": [{"type": "text", "text": "The helper counted 6 lines in calc.py."}]}]},
            {"match": "Count the lines of calc.py", "steps": [
                {"items": [{"type": "call", "name": ["exec_command", "shell"], "arguments": {"cmd": "wc -l calc.py"}}]},
                {"items": [{"type": "text", "text": "6"}]}]},
        ]},
    },
    "fork": {
        # `codex exec fork <id>`: a new thread continuing a copy of the first; in paginated
        # history mode its session_meta names the parent's rollout as history_base
        "model": MODEL,
        "steps": [
            "Show me calc.py.",
            {"cmd": "fork", "prompt": "In this fork, add a sub function to calc.py."},
            {"cmd": "resume_first", "prompt": "Back in the original: what does mul do?"},
        ],
        "script": {"turns": [
            {"match": "Show me calc.py", "steps": [
                {"items": [{"type": "call", "name": ["exec_command", "shell"], "arguments": {"cmd": "cat calc.py"}}]},
                {"items": [{"type": "text", "text": "calc.py defines add and mul."}]}]},
            {"match": "add a sub function", "steps": [
                {"items": [{"type": "patch", "name": ["apply_patch"], "input": "*** Begin Patch\n*** Update File: calc.py\n@@\n def mul(a, b):\n     return a * b\n+\n+\n+def sub(a, b):\n+    return a - b\n*** End Patch\n"}]},
                {"items": [{"type": "text", "text": "Added sub(a, b) to calc.py."}]}]},
            {"match": "what does mul do", "steps": [
                {"items": [{"type": "text", "text": "mul(a, b) returns a * b."}]}]},
        ]},
    },
    "slow_step": {
        "model": MODEL,
        "steps": ["Wait eight seconds, then say done."],
        "script": {"turns": [
            {"match": "Wait eight seconds", "steps": [
                {"items": [{"type": "text", "text": "Sleeping now."},
                           {"type": "call", "name": ["exec_command", "shell"], "arguments": {"cmd": "sleep 8 && echo slept", "yield_time_ms": 20000}}]},
                {"delay": 5, "items": [{"type": "text", "text": "Done: slept 8 seconds."}]}]},
        ]},
    },
}

# --------------------------------------------------------------------------- helpers


def install():
    exe = os.path.join(CACHE, "node_modules", ".bin", "codex")
    pkg = os.path.join(CACHE, "node_modules", "@openai", "codex", "package.json")
    if os.path.exists(pkg) and json.load(open(pkg)).get("version") == VERSION and os.path.exists(exe):
        return exe
    os.makedirs(CACHE, exist_ok=True)
    subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", CACHE, f"{PACKAGE}@{VERSION}"], check=True)
    return exe


def make_project():
    shutil.rmtree(BASE, ignore_errors=True)
    os.makedirs(PROJECT)
    os.makedirs(CODEX_HOME)
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


def watched(rel):
    return any(rel == w or rel.startswith(w) for w in WATCHED)


class Watcher(threading.Thread):
    """Polls CODEX_HOME; keeps, per file, each distinct content seen, with its time."""

    def __init__(self, root, t0):
        super().__init__(daemon=True)
        self.root, self.t0 = root, t0
        self.seen = {}      # rel -> last bytes (None when deleted)
        self.events = []    # (t_ms, rel, bytes or None)
        self.stop_flag = threading.Event()

    def scan(self):
        now = {}
        for dp, dn, fn in os.walk(self.root):
            for n in fn:
                full = os.path.join(dp, n)
                rel = os.path.relpath(full, self.root)
                if not watched(rel):
                    continue
                try:
                    with open(full, "rb") as f:
                        now[rel] = f.read()
                except FileNotFoundError:
                    pass
        t = round((time.monotonic() - self.t0) * 1000)
        for rel, data in now.items():
            if self.seen.get(rel) != data:
                self.seen[rel] = data
                self.events.append((t, rel, data))
        for rel in list(self.seen):
            if rel not in now and self.seen[rel] is not None:
                self.seen[rel] = None
                self.events.append((t, rel, None))

    def run(self):
        while not self.stop_flag.is_set():
            self.scan()
            time.sleep(0.01)

    def stop(self):
        self.stop_flag.set()
        self.join()
        self.scan()


def neutral_text(s):
    assert len(HOME) == len("/home/user")
    s = s.replace(HOME, "/home/user")
    host = socket.gethostname()
    assert not (host and len(host) > 3 and host in s), "the host name is in a transcript"
    return s


def check_history_base(disk):
    """A thread continued from another file: its history_base must point at a line end there."""
    by_id = {}
    for rel, text in disk.items():
        first = text.split("\n", 1)[0]
        if first.strip():
            by_id[json.loads(first)["payload"].get("id")] = text
    for rel, text in disk.items():
        first = text.split("\n", 1)[0]
        if not first.strip():
            continue
        hb = json.loads(first)["payload"].get("history_base")
        if not hb:
            continue
        parent = by_id[hb["thread_id"]].encode()
        off = hb["end_byte_offset"]
        assert parent[off - 1:off] == b"\n", f"{rel}: history_base.end_byte_offset is not at a line end"
        lines = parent[:off].decode().splitlines()
        assert json.loads(lines[-1])["ordinal"] == hb["end_ordinal_exclusive"] - 1, f"{rel}: history_base ordinal"
        print(f"  {rel}: history_base -> {hb['thread_id']} up to byte {off} (ordinal {hb['end_ordinal_exclusive']}) checked", flush=True)


def derive_ops(events):
    """Neutralised write order: appends where a file grew, whole writes else, deletions."""
    ops, last = [], {}
    for t, rel, data in events:
        if data is None:
            ops.append({"t_ms": t, "path": rel, "op": "delete"})
            last.pop(rel, None)
            continue
        text = neutral_text(data.decode("utf-8", "replace"))
        old = last.get(rel)
        if old is not None and text.startswith(old):
            if text == old:
                continue
            ops.append({"t_ms": t, "path": rel, "op": "append", "data": text[len(old):]})
        else:
            ops.append({"t_ms": t, "path": rel, "op": "write", "data": text})
        last[rel] = text
    return ops, last


def replay(ops):
    state = {}
    for o in ops:
        if o["op"] == "delete":
            state.pop(o["path"], None)
        elif o["op"] == "append":
            state[o["path"]] = state[o["path"]] + o["data"]
        else:
            state[o["path"]] = o["data"]
    return state


# --------------------------------------------------------------------------- counting

INJECTED = ("<environment_context", "<user_instructions", "<permissions", "# AGENTS.md", "<skills_instructions",
            "<collaboration_mode", "<turn_aborted", "<subagent_notification")


def expect_from(files):
    """Counts computed straight from the rollout lines (not by our importer)."""
    convs = []
    for rel in sorted(files):
        if not os.path.basename(rel).startswith("rollout-"):
            continue
        recs = [json.loads(l) for l in files[rel].splitlines() if l.strip()]
        metas = [r["payload"] for r in recs if r.get("type") == "session_meta"]
        meta = metas[0] if metas else {}
        src = meta.get("source")
        parent = None
        if isinstance(src, dict):
            spawn = ((src.get("subagent") or {}) if isinstance(src.get("subagent"), dict) else {}).get("thread_spawn") or {}
            parent = spawn.get("parent_thread_id")
        items = [r["payload"] for r in recs if r.get("type") == "response_item"]
        prompts = []
        for it in items:
            if it.get("type") == "message" and it.get("role") == "user":
                text = "\n".join(c.get("text", "") for c in it.get("content", []) if isinstance(c, dict))
                if not text.lstrip().startswith(INJECTED):
                    prompts.append(text)
        events = [r["payload"] for r in recs if r.get("type") == "event_msg"]
        types = {}
        for r in recs:
            k = r.get("type")
            if k in ("event_msg", "response_item"):
                k = f"{k}/{r['payload'].get('type')}"
            types[k] = types.get(k, 0) + 1
        convs.append({
            "file": rel,
            "id": meta.get("id"),
            "parent": parent,
            "forked_from": meta.get("forked_from_id"),
            "source": src,
            "history_mode": meta.get("history_mode"),
            "history_base": meta.get("history_base"),
            "session_meta_lines": len(metas),
            "prompts": prompts,
            "assistant_texts": sum(1 for it in items if it.get("type") == "message" and it.get("role") == "assistant"),
            "tool_calls": sum(1 for it in items if it.get("type") in ("function_call", "custom_tool_call", "local_shell_call")),
            "tool_results": sum(1 for it in items if it.get("type") in ("function_call_output", "custom_tool_call_output")),
            "turns_completed": sum(1 for e in events if e.get("type") == "task_complete"),
            "turns_aborted": sum(1 for e in events if e.get("type") == "turn_aborted"),
            "record_types": dict(sorted(types.items())),
        })
    ids = {c["id"] for c in convs}
    threads = sorted(ids)
    return {
        "meaning": {
            "conversations": "distinct session_meta ids among rollout-* files (a thread may span several files)",
            "files": "rollout-* files",
            "user_prompts": "response_item message role=user whose text is not injected context (<environment_context>, <subagent_notification>, AGENTS.md, ...), in threads that are not sub-agents (forks included): the typed prompts",
            "subagent_task_messages": "the same messages in sub-agent threads: the task the parent gave (spawn_agent's message)",
            "assistant_texts": "response_item message role=assistant",
            "tool_calls": "response_item function_call + custom_tool_call + local_shell_call",
            "tool_results": "response_item function_call_output + custom_tool_call_output",
            "turns_completed": "event_msg task_complete",
            "subagents": "threads whose session_meta.source.subagent.thread_spawn.parent_thread_id names a parent",
            "forks": "threads whose session_meta has forked_from_id (`codex exec fork`): in paginated history mode the file holds only the fork's own lines, and session_meta.history_base points into the parent's rollout (thread_id, end_ordinal_exclusive, end_byte_offset)",
        },
        "conversations": len(threads),
        "files": len(convs),
        "user_prompts": sum(len(c["prompts"]) for c in convs if not c["parent"]),
        "subagent_task_messages": sum(len(c["prompts"]) for c in convs if c["parent"]),
        "assistant_texts": sum(c["assistant_texts"] for c in convs),
        "tool_calls": sum(c["tool_calls"] for c in convs),
        "tool_results": sum(c["tool_results"] for c in convs),
        "turns_completed": sum(c["turns_completed"] for c in convs),
        "subagents": [{"id": c["id"], "parent": c["parent"]} for c in convs if c["parent"]],
        "forks": [{"id": c["id"], "forked_from": c["forked_from"], "history_base": c["history_base"]} for c in convs if c["forked_from"]],
        "per_file": convs,
    }


# --------------------------------------------------------------------------- running


def run_scenario(name, exe):
    sc = SCENARIOS[name]
    print(f"== codex {name}", flush=True)
    make_project()
    log_path = os.path.join(BASE, "requests.jsonl")
    script = dict(sc["script"], model=sc["model"])
    srv, port = fakemodel.serve(script, 0, log_path)
    with open(os.path.join(CODEX_HOME, "config.toml"), "w") as f:
        f.write(f'''model = "{sc["model"]}"
model_provider = "fake"
check_for_update_on_startup = false

[model_providers.fake]
name = "Fake"
base_url = "http://127.0.0.1:{port}/v1"
wire_api = "responses"
env_key = "FAKE_API_KEY"
request_max_retries = 1
stream_max_retries = 1

[analytics]
enabled = false
''')
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": HOME, "CODEX_HOME": CODEX_HOME,
           "XDG_CONFIG_HOME": HOME + "/.config", "XDG_DATA_HOME": HOME + "/.local/share",
           "XDG_CACHE_HOME": HOME + "/.cache", "XDG_STATE_HOME": HOME + "/.local/state",
           "FAKE_API_KEY": "sk-fake", "TERM": "dumb", "LANG": "C.UTF-8", "USER": "user", "LOGNAME": "user",
           "NO_COLOR": "1"}
    t0 = time.monotonic()
    w = Watcher(CODEX_HOME, t0)
    w.start()
    steps, session_id = [], None
    flags = ["--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "--json"]
    first_id = None
    for i, step in enumerate(sc["steps"]):
        kind, prompt = ("exec" if i == 0 else "resume", step) if isinstance(step, str) else (step["cmd"], step["prompt"])
        if kind == "exec":
            cmd = [exe, "exec"] + flags + [prompt]
        elif kind == "fork":
            cmd = [exe, "exec", "fork"] + flags + [session_id, prompt]
        elif kind == "resume_first":
            cmd = [exe, "exec", "resume"] + flags + [first_id, prompt]
        else:
            cmd = [exe, "exec", "resume"] + flags + [session_id, prompt]
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
            if e.get("type") == "thread.started":
                session_id = e.get("thread_id")
                first_id = first_id or session_id
        steps.append({"t_start_ms": ts, "t_end_ms": te, "command": "exec" if kind == "exec" else "exec " + kind.replace("_first", ""),
                      "thread_id": session_id,
                      "prompt": prompt, "exit_code": p.returncode,
                      "final_message": next((e["item"].get("text") for e in reversed(events)
                                             if e.get("type") == "item.completed" and (e.get("item") or {}).get("type") == "agent_message"), None)})
        print(f"  step {i}: rc={p.returncode} {te - ts} ms session={session_id}", flush=True)
        if p.returncode != 0:
            print(p.stderr[-3000:], flush=True)
        time.sleep(0.3)
    time.sleep(0.5)
    w.stop()
    srv.shutdown()
    ops, final = derive_ops(w.events)
    # the files as they are on disk at the end, neutralised
    disk = {}
    for dp, dn, fn in os.walk(CODEX_HOME):
        for n in fn:
            full = os.path.join(dp, n)
            rel = os.path.relpath(full, CODEX_HOME)
            if watched(rel):
                disk[rel] = neutral_text(open(full, "rb").read().decode("utf-8", "replace"))
    check_history_base(disk)
    replayed = replay(ops)
    assert replayed == disk, "replaying writes.jsonl does not give the files on disk"
    out = os.path.join(OUT, name)
    shutil.rmtree(out, ignore_errors=True)
    for rel, text in disk.items():
        dst = os.path.join(out, "files", rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with open(dst, "w") as f:
            f.write(text)
    # Codex also projects the threads into SQLite (not transcripts; kept to show what it holds)
    os.makedirs(os.path.join(out, "sqlite"), exist_ok=True)
    for db in ("thread_history_1.sqlite", "state_5.sqlite"):
        path = os.path.join(CODEX_HOME, db)
        if not os.path.exists(path):
            continue
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        tables = [r[0] for r in con.execute("select name from sqlite_master where type='table' and name not like '_sqlx%'")]
        dump = {}
        for t in tables:
            cur = con.execute(f'select * from "{t}"')
            cols = [d[0] for d in cur.description]
            rows = [dict(zip(cols, r)) for r in cur.fetchall()]
            if rows:
                dump[t] = rows
        con.close()
        with open(os.path.join(out, "sqlite", db.replace(".sqlite", ".json")), "w") as f:
            f.write(neutral_text(json.dumps(dump, indent=1, ensure_ascii=False, default=str)) + "\n")
    with open(os.path.join(out, "writes.jsonl"), "w") as f:
        for o in ops:
            f.write(json.dumps(o, ensure_ascii=False) + "\n")
    # requests the fake model saw: just which turn/step each answered, for the manifest
    reqs = []
    for line in open(log_path):
        r = json.loads(line)
        reqs.append({"path": r.get("path"), "info": r.get("info"), "tools": r.get("tools")})
    manifest = {
        "tool": TOOL, "version": VERSION, "scenario": name, "model": sc["model"],
        "home": "/home/user", "cwd": "/home/user/project",
        "steps": steps,
        "typed_prompts": [s if isinstance(s, str) else s["prompt"] for s in sc["steps"]],
        "model_requests": [{"turn": (r["info"] or {}).get("turn"), "step": (r["info"] or {}).get("step"),
                            "side": (r["info"] or {}).get("side")} for r in reqs],
        "tools_offered": sorted({t for r in reqs for t in (r["tools"] or [])}),
        "expect": expect_from(disk),
        "write_ops": {k: sum(1 for o in ops if o["op"] == k) for k in ("append", "write", "delete")},
    }
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, ensure_ascii=False)
        f.write("\n")
    size = sum(os.path.getsize(os.path.join(dp, n)) for dp, dn, fn in os.walk(out) for n in fn)
    print(f"  wrote {out}: {len(ops)} ops, {size // 1024} KB", flush=True)
    return manifest


def recount():
    """Recomputes manifest.json's expect from the recorded files/ (no tool run)."""
    for name in sorted(os.listdir(OUT)):
        root = os.path.join(OUT, name, "files")
        disk = {}
        for dp, dn, fn in os.walk(root):
            for n in fn:
                disk[os.path.relpath(os.path.join(dp, n), root)] = open(os.path.join(dp, n)).read()
        mpath = os.path.join(OUT, name, "manifest.json")
        m = json.load(open(mpath))
        m["expect"] = expect_from(disk)
        with open(mpath, "w") as f:
            json.dump(m, f, indent=1, ensure_ascii=False)
            f.write("\n")
        print(name, {k: v for k, v in m["expect"].items() if k not in ("meaning", "per_file")})


def main():
    if sys.argv[1:] == ["--recount"]:
        return recount()
    names = sys.argv[1:] or list(SCENARIOS)
    exe = install()
    for n in names:
        run_scenario(n, exe)


if __name__ == "__main__":
    main()
