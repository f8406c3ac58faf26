#!/usr/bin/env python3
"""Record what Claude Code really writes under ~/.claude/projects/.

Runs the real `claude` (npm package @anthropic-ai/claude-code, pinned below)
offline against the fake Anthropic server in fakemodel/anthropic.py, one
scenario at a time, with HOME in a throwaway folder, and keeps for each
scenario under recordings/claude-code/<scenario>/:

  files/         the final tree written under .claude/projects/ (neutralised)
  writes.jsonl   every change seen while it ran, in order (append / write /
                 delete), replaying to files/ exactly (checked here)
  manifest.json  the version, the steps run and counts computed from the raw
                 records (see EXPECT_DOC)

    python3 tests/agents/record_claude_code.py                # every scenario
    python3 tests/agents/record_claude_code.py compact slow_step
    python3 tests/agents/record_claude_code.py --list
    python3 tests/agents/record_claude_code.py --recount      # manifests' counts from files/

Stdlib only (Python 3.11). Needs node/npm (to install the tool once into
~/.cache/openprogram-agents/claude-code) and tmux for the interactive scenario.
"""

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "fakemodel"))
from anthropic import FakeAnthropic  # noqa: E402

VERSION = "2.1.332"
PACKAGE = "@anthropic-ai/claude-code"
CACHE = Path.home() / ".cache" / "openprogram-agents" / "claude-code"
ROOT = Path("/tmp/op-agent-rec")
HOME = ROOT / "home" / "user"
PROJECT = HOME / "project"
OUT = HERE / "recordings" / "claude-code"
MODEL = "claude-sonnet-4-5-20250929"
# A short system prompt and a few tools keep each recording small: the tool
# records the system prompt and every tool's schema once per conversation
# (the `prompt_snapshot` attachment and the `api-request-shape` record),
# about 110 KB with the defaults.
SYSTEM_PROMPT = "You are Claude Code, used here to record test transcripts. Be brief."
TOOLS = "Bash,Read,Edit,Write"

FAKE_HOME = "/home/user"


# ---------------------------------------------------------------- install
def claude_bin():
    """The installed binary (installing the pinned version when missing)."""
    pkg = CACHE / "node_modules" / "@anthropic-ai" / "claude-code" / "package.json"
    have = json.loads(pkg.read_text())["version"] if pkg.exists() else None
    if have != VERSION:
        CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "install", "--no-fund", "--no-audit", "--prefix", str(CACHE),
                        f"{PACKAGE}@{VERSION}"], check=True)
    # The wrapper's postinstall copies the platform binary over bin/claude.exe;
    # when install scripts did not run, use the platform package's binary.
    for cand in [CACHE / "node_modules" / "@anthropic-ai" / "claude-code-linux-x64" / "claude",
                 CACHE / "node_modules" / "@anthropic-ai" / "claude-code-linux-arm64" / "claude",
                 CACHE / "node_modules" / ".bin" / "claude"]:
        if cand.exists() and cand.stat().st_size > 1_000_000:
            return str(cand)
    raise SystemExit("claude binary not found after npm install")


# ---------------------------------------------------------------- neutralise
def neutral(text):
    text = text.replace(str(HOME), FAKE_HOME)
    esc = str(HOME).replace("/", "-")  # -tmp-op-agent-rec-home-user
    text = text.replace(esc, FAKE_HOME.replace("/", "-"))
    return text


def neutral_path(rel):
    return neutral(rel)


# ---------------------------------------------------------------- watcher
class Watcher:
    """Polls HOME/.claude/projects every ~10 ms and records each change."""

    def __init__(self, base, t0):
        self.base = Path(base)
        self.t0 = t0
        self.seen = {}  # rel -> bytes
        self.events = []
        self.stop_flag = threading.Event()
        self.thread = None

    def poll(self):
        now = {}
        if self.base.exists():
            for dirpath, _dirs, files in os.walk(self.base):
                for name in files:
                    p = Path(dirpath) / name
                    rel = str(p.relative_to(self.base.parent))  # projects/...
                    try:
                        now[rel] = p.read_bytes()
                    except (FileNotFoundError, PermissionError):
                        continue
        t = round((time.monotonic() - self.t0) * 1000)
        for rel, data in now.items():
            old = self.seen.get(rel)
            if old == data:
                continue
            try:
                new_text = data.decode("utf-8")
            except UnicodeDecodeError:
                continue  # caught mid multi-byte character: next poll
            old_text = None if old is None else old.decode("utf-8")
            self.seen[rel] = data
            self.events.append((t, rel, old_text, new_text))
        for rel in list(self.seen):
            if rel not in now:
                del self.seen[rel]
                self.events.append((t, rel, None, None))

    def run(self):
        while not self.stop_flag.is_set():
            self.poll()
            time.sleep(0.01)
        self.poll()

    def start(self):
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        self.stop_flag.set()
        self.thread.join()

    def writes(self):
        """The changes as neutralised write records."""
        out = []
        prev = {}
        for t, rel, old, new in self.events:
            path = neutral_path(rel)
            if new is None:
                out.append({"t_ms": t, "path": path, "op": "delete", "data": ""})
                prev.pop(path, None)
                continue
            nnew = neutral(new)
            nold = prev.get(path)
            if old is not None and nold is not None and new.startswith(old) and nnew.startswith(nold):
                out.append({"t_ms": t, "path": path, "op": "append", "data": nnew[len(nold):]})
            else:
                out.append({"t_ms": t, "path": path, "op": "write", "data": nnew})
            prev[path] = nnew
        return out


def replay(writes):
    files = {}
    for w in writes:
        if w["op"] == "delete":
            files.pop(w["path"], None)
        elif w["op"] == "append":
            files[w["path"]] = files.get(w["path"], "") + w["data"]
        else:
            files[w["path"]] = w["data"]
    return files


# ---------------------------------------------------------------- counting
EXPECT_DOC = {
    "conversations": "top-level session files projects/<dir>/<sessionId>.jsonl (a fork is a file of its own)",
    "subagent_files": "files projects/<dir>/<sessionId>/subagents/agent-*.jsonl",
    "user_prompts": "records type=user, not isMeta, not isCompactSummary, not isSidechain in a main file, whose content is a string or holds a text block and no tool_result, and is not a slash-command record (<command-name>, <local-command-...>, <command-message>); summed over files, a record copied into a fork or a resumed file counted in each file",
    "assistant_text_replies": "distinct (file, message.id) of assistant records holding a non-empty text block",
    "assistant_messages": "distinct (file, message.id) of assistant records (one record per content block)",
    "synthetic_assistant_messages": "of those, the ones Claude Code made itself (message.model '<synthetic>', e.g. 'No response requested.' after a resume of a killed turn); they are counted in assistant_messages and assistant_text_replies too",
    "tool_calls": "distinct (file, tool_use id) of tool_use blocks in assistant records",
    "tool_results": "tool_result blocks in user records",
    "compact_boundaries": "records type=system subtype=compact_boundary",
    "turn_end_markers": "records type=system subtype turn_duration or stop_hook_summary",
    "titles": "texts of custom-title / ai-title / summary records, in file order",
    "record_types": "per file: count of each record type (attachments as attachment/<kind>, system as system/<subtype>)",
    "per_conversation": "per file (path relative to files/): its user prompts in order, and its counts",
}


def is_prompt(rec):
    if rec.get("type") != "user" or rec.get("isMeta") or rec.get("isCompactSummary"):
        return None
    c = (rec.get("message") or {}).get("content")
    if isinstance(c, str):
        text = c
    elif isinstance(c, list):
        if any(b.get("type") == "tool_result" for b in c):
            return None
        texts = [b.get("text", "") for b in c if b.get("type") == "text"]
        if not texts:
            return None
        text = "\n".join(texts)
    else:
        return None
    s = text.lstrip()
    if s.startswith(("<command-name>", "<command-message>", "<local-command-")):
        return None
    return text


def count_file(text, sub):
    recs = []
    for line in text.splitlines():
        try:
            recs.append(json.loads(line))
        except ValueError:
            pass
    prompts, texts, msgs, calls, results, synthetic = [], set(), set(), set(), 0, set()
    types, titles, boundaries, ends = {}, [], 0, 0
    for r in recs:
        ty = r.get("type", "?")
        key = ty
        if ty == "attachment":
            key += "/" + str((r.get("attachment") or {}).get("type"))
        if ty == "system":
            key += "/" + str(r.get("subtype"))
        types[key] = types.get(key, 0) + 1
        if ty == "system" and r.get("subtype") == "compact_boundary":
            boundaries += 1
        if ty == "system" and r.get("subtype") in ("turn_duration", "stop_hook_summary"):
            ends += 1
        if ty == "custom-title":
            titles.append(["custom-title", r.get("customTitle")])
        if ty == "ai-title":
            titles.append(["ai-title", r.get("aiTitle")])
        if ty == "summary":
            titles.append(["summary", r.get("summary")])
        if ty == "user":
            if r.get("isSidechain") and not sub:
                continue
            p = is_prompt(r)
            if p is not None:
                prompts.append(p)
            c = (r.get("message") or {}).get("content")
            if isinstance(c, list):
                results += sum(1 for b in c if b.get("type") == "tool_result")
        if ty == "assistant":
            m = r.get("message") or {}
            mid = m.get("id") or r.get("uuid")
            msgs.add(mid)
            if m.get("model") == "<synthetic>":
                synthetic.add(mid)
            for b in m.get("content") or []:
                if b.get("type") == "text" and b.get("text", "").strip():
                    texts.add(mid)
                if b.get("type") == "tool_use":
                    calls.add(b.get("id"))
    return {
        "user_prompts": len(prompts), "prompts": prompts,
        "assistant_text_replies": len(texts), "assistant_messages": len(msgs),
        "synthetic_assistant_messages": len(synthetic),
        "tool_calls": len(calls), "tool_results": results,
        "compact_boundaries": boundaries, "turn_end_markers": ends,
        "titles": titles, "record_types": dict(sorted(types.items())),
    }


def expect(files):
    per = {}
    tot = {"conversations": 0, "subagent_files": 0, "user_prompts": 0, "assistant_text_replies": 0,
           "assistant_messages": 0, "synthetic_assistant_messages": 0, "tool_calls": 0, "tool_results": 0, "compact_boundaries": 0,
           "turn_end_markers": 0, "titles": []}
    for path in sorted(files):
        if not path.endswith(".jsonl"):
            continue
        sub = "/subagents/" in path
        c = count_file(files[path], sub)
        per[path] = c
        if sub:
            tot["subagent_files"] += 1
        elif path.count("/") == 2:
            tot["conversations"] += 1
        for k in ("user_prompts", "assistant_text_replies", "assistant_messages",
                  "synthetic_assistant_messages", "tool_calls",
                  "tool_results", "compact_boundaries", "turn_end_markers"):
            tot[k] += c[k]
        tot["titles"] += c["titles"]
    tot["per_conversation"] = per
    tot["meaning"] = EXPECT_DOC
    return tot


# ---------------------------------------------------------------- running
class Run:
    """One scenario: fresh HOME, the fake server, the watcher."""

    def __init__(self, name, claude):
        self.name = name
        self.claude = claude
        self.steps = []
        self.notes = []
        if ROOT.exists():
            shutil.rmtree(ROOT)
        PROJECT.mkdir(parents=True)
        (PROJECT / "README.md").write_text("# Demo\n\nA small project for recordings.\n")
        (PROJECT / "hello.py").write_text('print("hello")\n')
        git = ["git", "-c", "user.name=Test", "-c", "user.email=test@example.com"]
        subprocess.run(git + ["init", "-q", "-b", "main", "."], cwd=PROJECT, check=True)
        subprocess.run(git + ["add", "."], cwd=PROJECT, check=True)
        subprocess.run(git + ["commit", "-q", "-m", "init"], cwd=PROJECT, check=True,
                       env=dict(os.environ, GIT_AUTHOR_DATE="2025-01-01T00:00:00Z",
                                GIT_COMMITTER_DATE="2025-01-01T00:00:00Z"))
        # What a user who set Claude Code up once has: onboarding done, the
        # project trusted, the API key approved, bypass mode accepted.
        (HOME / ".claude").mkdir(parents=True, exist_ok=True)
        (HOME / ".claude.json").write_text(json.dumps({
            "hasCompletedOnboarding": True, "lastOnboardingVersion": VERSION,
            "bypassPermissionsModeAccepted": True, "numStartups": 5,
            "customApiKeyResponses": {"approved": ["sk-fake"[-20:]], "rejected": []},
            "projects": {str(PROJECT): {"hasTrustDialogAccepted": True, "allowedTools": [],
                                        "hasCompletedProjectOnboarding": True}},
        }))
        (HOME / ".claude" / "settings.json").write_text(json.dumps({"theme": "dark"}))
        (ROOT / "requests").mkdir()
        self.server = FakeAnthropic([], str(ROOT / "requests.jsonl"), dump_dir=str(ROOT / "requests")).start()
        self.t0 = time.monotonic()
        self.watcher = Watcher(HOME / ".claude" / "projects", self.t0).start()

    def env(self):
        e = {k: v for k, v in os.environ.items()
             if not k.startswith(("ANTHROPIC_", "CLAUDE", "OPENAI", "GEMINI"))}
        e.update({
            "HOME": str(HOME), "USER": "user", "LOGNAME": "user", "SHELL": "/bin/bash",
            "ANTHROPIC_BASE_URL": self.server.url, "ANTHROPIC_API_KEY": "sk-fake",
            "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_BUG_COMMAND": "1",
            "IS_SANDBOX": "1",  # allows --dangerously-skip-permissions as root
            "TERM": "xterm-256color", "LANG": "C.UTF-8", "TZ": "UTC",
        })
        e.pop("XDG_CONFIG_HOME", None)
        e.pop("XDG_DATA_HOME", None)
        return e

    def script(self, rules):
        self.server.set_script(rules)

    def args(self, extra_tools=""):
        tools = TOOLS + ("," + extra_tools if extra_tools else "")
        return ["--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions",
                "--model", MODEL, "--system-prompt", SYSTEM_PROMPT, "--tools", tools]

    def claude_p(self, prompt, *more, what, extra_tools="", timeout=120):
        """`claude -p PROMPT ...`; returns the session id from its output."""
        cmd = [self.claude, "-p", prompt, *self.args(extra_tools), *more]
        self.steps.append(what)
        p = subprocess.run(cmd, cwd=PROJECT, env=self.env(), capture_output=True, text=True,
                           timeout=timeout)
        (ROOT / f"out-{len(self.steps)}.jsonl").write_text(p.stdout + "\n--stderr--\n" + p.stderr)
        if p.returncode != 0:
            raise RuntimeError(f"{what}: exit {p.returncode}: {p.stderr[-800:]} {p.stdout[-800:]}")
        sid = None
        for line in p.stdout.splitlines():
            try:
                o = json.loads(line)
            except ValueError:
                continue
            sid = o.get("session_id") or sid
            if o.get("type") == "result" and o.get("is_error"):
                raise RuntimeError(f"{what}: result is an error: {line[:800]}")
        return sid

    def spawn_p(self, prompt, *more, what, extra_tools=""):
        cmd = [self.claude, "-p", prompt, *self.args(extra_tools), *more]
        self.steps.append(what)
        out = open(ROOT / f"out-{len(self.steps)}.jsonl", "w")
        return subprocess.Popen(cmd, cwd=PROJECT, env=self.env(), stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)

    def wait_for(self, pred, timeout=60):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if pred():
                return True
            time.sleep(0.02)
        return False

    def session_text(self):
        base = HOME / ".claude" / "projects"
        return "".join(p.read_text(errors="replace") for p in base.rglob("*.jsonl")) if base.exists() else ""

    def finish(self, expect_ok=None):
        time.sleep(1.0)
        self.watcher.stop()
        self.server.stop()
        writes = self.watcher.writes()
        dest = OUT / self.name
        if dest.exists():
            shutil.rmtree(dest)
        (dest / "files").mkdir(parents=True)
        base = HOME / ".claude"
        final = {}
        for p in sorted((base / "projects").rglob("*")):
            if p.is_file():
                rel = neutral_path(str(p.relative_to(base)))
                final[rel] = neutral(p.read_text())
                target = dest / "files" / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(final[rel])
        with open(dest / "writes.jsonl", "w") as f:
            for w in writes:
                f.write(json.dumps(w, ensure_ascii=False) + "\n")
        replayed = replay(writes)
        if replayed != final:
            bad = sorted(set(replayed) ^ set(final)) or [k for k in final if replayed.get(k) != final[k]]
            raise RuntimeError(f"{self.name}: replaying writes.jsonl does not give files/: {bad}")
        leaks = [k for k, v in final.items() if str(ROOT) in v or "/root/" in v]
        if leaks:
            raise RuntimeError(f"{self.name}: throwaway paths left in {leaks}")
        reqs = [json.loads(l) for l in open(ROOT / "requests.jsonl")] if (ROOT / "requests.jsonl").exists() else []
        kinds = {}
        for r in reqs:
            kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
        manifest = {
            "tool": "claude-code", "version": VERSION, "scenario": self.name,
            "model": MODEL,
            "run_with": {"home": FAKE_HOME, "cwd": FAKE_HOME + "/project",
                         "flags": " ".join(self.args()[:-4]) + f" --system-prompt <short> --tools {TOOLS}[,Agent]",
                         "env": "ANTHROPIC_BASE_URL=<fake server> ANTHROPIC_API_KEY=sk-fake DISABLE_TELEMETRY=1 "
                                "DISABLE_AUTOUPDATER=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 IS_SANDBOX=1"},
            "steps": self.steps,
            "notes": self.notes,
            "fake_server_requests": kinds,
            "expect": expect(final),
        }
        (dest / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
        size = sum(len(v.encode()) for v in final.values()) + (dest / "writes.jsonl").stat().st_size
        print(f"{self.name}: {len(final)} files, {len(writes)} writes, {size // 1024} KB; requests {kinds}")
        return manifest

    def abort(self):
        try:
            self.watcher.stop()
        finally:
            self.server.stop()


def text(t):
    return {"type": "text", "text": t}


def tool(name, **inp):
    return {"type": "tool_use", "name": name, "input": inp}


def bash(cmd, desc):
    return tool("Bash", command=cmd, description=desc)


P = str(PROJECT)


# ---------------------------------------------------------------- scenarios
MULTI_RULES = [
    {"prompt": "Turn one: look around", "step": 0,
     "content": [text("I'll look at the project first."), bash("ls", "List files"),
                 tool("Read", file_path=P + "/README.md")]},
    {"prompt": "Turn one: look around", "step": 1,
     "content": [{"type": "thinking", "thinking": "The user wants a notes file; write x into it."},
                 bash("echo x > notes.txt", "Write notes.txt")]},
    {"prompt": "Turn one: look around", "step": 2,
     "content": [text("Turn one done: the project has README.md and hello.py; I wrote notes.txt.")]},
    {"prompt": "Turn two: edit the readme", "step": 0,
     "content": [tool("Read", file_path=P + "/README.md")]},
    {"prompt": "Turn two: edit the readme", "step": 1,
     "content": [text("Editing the title."),
                 tool("Edit", file_path=P + "/README.md", old_string="# Demo", new_string="# Demo project")]},
    {"prompt": "Turn two: edit the readme", "step": 2,
     "content": [tool("Write", file_path=P + "/todo.txt", content="- record more agents\n")]},
    {"prompt": "Turn two: edit the readme", "step": 3,
     "content": [text("Turn two done: README.md retitled and todo.txt written.")]},
    {"prompt": "Turn three: summarise", "step": 0,
     "content": [text("Summary: we listed the files, wrote notes.txt, retitled README.md and added todo.txt.")]},
]


def run_multi(r, name_fork=False):
    r.script(MULTI_RULES + FORK_RULES)
    sid = r.claude_p("Turn one: look around the project and write notes.txt.",
                     what="claude -p 'Turn one: look around the project and write notes.txt.' (new conversation; Bash ls + Read in one message, then Bash echo x > notes.txt, then text)")
    sid2 = r.claude_p("Turn two: edit the readme and add a todo file.", "--resume", sid,
                      what="claude -p 'Turn two: edit the readme and add a todo file.' --resume <id> (Read, Edit, Write, text)")
    sid3 = r.claude_p("Turn three: summarise what we did.", "--continue",
                      what="claude -p 'Turn three: summarise what we did.' --continue (text only)")
    r.notes.append(f"session ids: turn1 {sid}, turn2 {sid2}, turn3 {sid3}")
    return sid


def sc_multi_turn_tools(r):
    run_multi(r)


FORK_RULES = [
    {"prompt": "Turn four on a fork", "step": 0, "content": [bash("ls | wc -l", "Count files")]},
    {"prompt": "Turn four on a fork", "step": 1, "content": [text("The fork counts 4 files.")]},
    {"prompt": "Turn five from an earlier point", "step": 0,
     "content": [text("Answering from the earlier point of the conversation.")]},
]


def first_assistant_uuid_with(sid, needle):
    path = next((HOME / ".claude" / "projects").glob(f"*/{sid}.jsonl"))
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") == "assistant" and needle in json.dumps(rec.get("message")):
            return rec["uuid"]
    return None


def sc_fork_session(r):
    sid = run_multi(r)
    fid = r.claude_p("Turn four on a fork: count the files.", "--resume", sid, "--fork-session",
                     what="claude -p 'Turn four on a fork: count the files.' --resume <id of turns 1-3> --fork-session (Bash, text)")
    r.notes.append(f"fork session id {fid} (from {sid})")
    at = first_assistant_uuid_with(sid, "Turn one done")
    try:
        aid = r.claude_p("Turn five from an earlier point.", "--resume", sid, "--resume-session-at", at,
                         what="claude -p 'Turn five from an earlier point.' --resume <id of turns 1-3> "
                              "--resume-session-at <uuid of the assistant record 'Turn one done...'> (text)")
        r.notes.append(f"--resume-session-at {at}: session id {aid}")
    except RuntimeError as e:
        r.notes.append(f"--resume-session-at {at} failed: {str(e)[:400]}")


COMPACT_RULES = [
    {"prompt": "Compact turn one", "step": 0, "content": [bash("echo compact > c.txt", "Write c.txt")]},
    {"prompt": "Compact turn one", "step": 1, "content": [text("Wrote c.txt.")]},
    {"prompt": "Compact turn two", "step": 0, "content": [text("Nothing else to do before compacting.")]},
    {"prompt": "After compact", "step": 0, "content": [bash("cat c.txt", "Read c.txt")]},
    {"prompt": "After compact", "step": 1, "content": [text("c.txt still says compact.")]},
]


def sc_compact(r):
    r.script(COMPACT_RULES)
    sid = r.claude_p("Compact turn one: write c.txt.", what="claude -p 'Compact turn one: write c.txt.' (Bash, text)")
    r.claude_p("Compact turn two: anything else?", "--resume", sid,
               what="claude -p 'Compact turn two: anything else?' --resume <id> (text)")
    r.claude_p("/compact", "--resume", sid, what="claude -p '/compact' --resume <id> (the fake server answers the summary request)")
    r.claude_p("After compact: check c.txt.", "--resume", sid,
               what="claude -p 'After compact: check c.txt.' --resume <id> (Bash, text)")


SUB_RULES = [
    {"prompt": "Delegate: ask a helper", "step": 0,
     "content": [text("I'll ask a helper agent."),
                 tool("Agent", description="Count project files", subagent_type="counter",
                      prompt="Helper task: count the files in the project and report the number.",
                      run_in_background=False)]},
    {"prompt": "Helper task: count the files", "step": 0, "content": [bash("ls | wc -l", "Count files")]},
    {"prompt": "Helper task: count the files", "step": 1, "content": [text("There are 2 files.")]},
    {"prompt": "Delegate: ask a helper", "step": 1, "content": [text("The helper counted 2 files.")]},
]


# A custom agent with one tool and a short prompt: the built-in
# general-purpose agent records its prompt and ~50 KB of tool schemas.
AGENTS = {"counter": {"description": "Counts files in the project.",
                      "prompt": "You count files. Use Bash. Answer with the number.", "tools": ["Bash"]}}


def sc_subagent(r):
    r.script(SUB_RULES)
    r.claude_p("Delegate: ask a helper to count the files.", "--agents", json.dumps(AGENTS), extra_tools="Agent",
               what="claude -p 'Delegate: ask a helper to count the files.' --tools Bash,Read,Edit,Write,Agent "
                    "--agents '{\"counter\": {tools: [Bash], short prompt}}' (the model calls Agent with "
                    "subagent_type counter, run_in_background false; the sub-agent runs Bash ls | wc -l and "
                    "answers; then the main agent answers)")


SLOW_RULES = [
    {"prompt": "Slow step: run the long command", "step": 0,
     "content": [bash("sleep 8 && echo slept", "Sleep 8 seconds")]},
    {"prompt": "Slow step: run the long command", "step": 1, "delay": 5,
     "content": [text("Done waiting: the command slept 8 seconds.")]},
]


def sc_slow_step(r):
    r.script(SLOW_RULES)
    r.claude_p("Slow step: run the long command.",
               what="claude -p 'Slow step: run the long command.' (Bash sleep 8; the model's reply after the tool result is delayed 5 s)")


KILL_RULES = [
    {"prompt": "Kill me: start a long job", "step": 0,
     "content": [text("Starting the job."), bash("echo started > job.txt && sleep 30", "Long job")]},
    {"prompt": "Kill me: start a long job", "step": 1, "content": [text("The job finished.")]},
    {"prompt": "Continue from where you left off", "step": 0,
     "content": [bash("cat job.txt", "Check the job")]},
    {"prompt": "Continue from where you left off", "step": 1,
     "content": [text("The job had started; finished now.")]},
]


def sc_killed_then_resumed(r):
    r.script(KILL_RULES)
    proc = r.spawn_p("Kill me: start a long job.",
                     what="claude -p 'Kill me: start a long job.' (Bash 'echo started > job.txt && sleep 30'); "
                          "SIGKILL to the claude process once the tool_use record is in the file and job.txt exists")
    ok = r.wait_for(lambda: "sleep 30" in r.session_text() and (PROJECT / "job.txt").exists(), 60)
    time.sleep(0.5)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the orphaned `sleep 30`
    except ProcessLookupError:
        pass
    r.notes.append(f"killed with tool_use written: {ok}")
    sid = None
    for p in (HOME / ".claude" / "projects").glob("*/*.jsonl"):
        sid = p.stem
    time.sleep(0.5)
    r.claude_p("Continue from where you left off.", "--resume", sid,
               what="claude -p 'Continue from where you left off.' --resume <id> (Bash cat job.txt, text)")


# ---------------------------------------------------------------- interactive (tmux)
class Tmux:
    """Claude Code's interactive UI in a detached tmux session."""

    def __init__(self, r, name="ccrec", env_drop=()):
        self.r, self.name = r, name
        env = {k: v for k, v in r.env().items() if k not in env_drop}
        keep = ("HOME", "USER", "LOGNAME", "SHELL", "PATH", "TERM", "LANG", "TZ", "IS_SANDBOX")
        envs = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()
                        if k in keep or k.startswith(("ANTHROPIC_", "DISABLE_", "CLAUDE_CODE_")))
        args = " ".join(shlex.quote(a) for a in r.args()[3:])  # no stream-json flags
        cmd = f"cd {shlex.quote(str(PROJECT))} && exec env -i {envs} {shlex.quote(r.claude)} {args}"
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
        subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", "160", "-y", "50", cmd], check=True)

    def screen(self):
        return subprocess.run(["tmux", "capture-pane", "-p", "-t", self.name],
                              capture_output=True, text=True).stdout

    def keys(self, *k, pause=0.6):
        subprocess.run(["tmux", "send-keys", "-t", self.name, *k], check=True)
        time.sleep(pause)

    def type(self, text):
        self.keys("-l", text, pause=0.4)
        self.keys("Enter")

    def wait_screen(self, needle, timeout=30):
        if not self.r.wait_for(lambda: needle in self.screen(), timeout):
            raise RuntimeError(f"tmux: {needle!r} not on screen:\n{self.screen()}")

    def close(self):
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True)


EDIT_RULES = [
    {"prompt": "Interactive one: list the files", "step": 0, "content": [bash("ls", "List files")]},
    {"prompt": "Interactive one: list the files", "step": 1, "content": [text("Answer one: README.md and hello.py.")]},
    {"prompt": "Interactive two: first wording", "step": 0, "content": [text("Answer two, first wording.")]},
    {"prompt": "Interactive two: edited wording", "step": 0, "content": [text("Answer two, edited wording.")]},
]


def sc_edited_prompt(r):
    r.script(EDIT_RULES)
    t = Tmux(r)
    r.steps.append("claude (interactive, in tmux) --dangerously-skip-permissions --model ... --system-prompt <short> --tools Bash,Read,Edit,Write")
    try:
        t.wait_screen("bypass permissions", 40)
        t.type("Interactive one: list the files.")
        r.steps.append("typed 'Interactive one: list the files.' (Bash ls, text)")
        t.wait_screen("Answer one", 30)
        t.type("Interactive two: first wording.")
        r.steps.append("typed 'Interactive two: first wording.' (text)")
        t.wait_screen("Answer two, first wording", 30)
        time.sleep(1)
        t.keys("Escape", pause=0.3)
        t.keys("Escape", pause=1.5)
        t.wait_screen("Rewind", 10)
        t.keys("Up")  # from "(current)" to the last prompt
        t.keys("Enter", pause=1.0)
        t.wait_screen("Restore conversation", 10)
        t.keys("Enter", pause=1.0)  # 1. Restore conversation: the prompt comes back into the input box
        t.keys("C-u")
        r.steps.append("Esc Esc (Rewind), Up to 'Interactive two: first wording.', Enter, "
                       "'1. Restore conversation', Ctrl-U to clear the prompt it put back")
        t.type("Interactive two: edited wording.")
        r.steps.append("typed 'Interactive two: edited wording.' (text)")
        t.wait_screen("Answer two, edited wording", 30)
        time.sleep(1.5)
        t.type("/exit")
        r.steps.append("typed /exit")
        r.wait_for(lambda: "bypass permissions" not in t.screen(), 10)
        time.sleep(1)
    finally:
        t.close()


TITLE_RULES = [
    {"prompt": "Title me: say hello", "step": 0, "content": [text("Hello from the titled session.")]},
    {"system": "You are naming a coding session", "content": [text('{"title": "Hello greeting"}')]},
]


def sc_titles(r):
    """Interactive, with non-essential traffic allowed (the tool may ask the
    model for a title); then /rename gives the session a title of the user's."""
    r.script(TITLE_RULES)
    t = Tmux(r, env_drop=("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",))
    r.steps.append("claude (interactive, in tmux, without CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC) "
                   "--dangerously-skip-permissions --model ... --system-prompt <short> --tools Bash,Read,Edit,Write")
    try:
        t.wait_screen("bypass permissions", 40)
        t.type("Title me: say hello.")
        r.steps.append("typed 'Title me: say hello.' (text)")
        t.wait_screen("Hello from the titled session", 30)
        time.sleep(3)
        t.type("/rename My chosen title")
        r.steps.append("typed '/rename My chosen title'")
        time.sleep(3)
        t.type("/exit")
        r.steps.append("typed /exit")
        r.wait_for(lambda: "bypass permissions" not in t.screen(), 10)
        time.sleep(1)
    finally:
        t.close()


SCENARIOS = {
    "multi_turn_tools": sc_multi_turn_tools,
    "fork_session": sc_fork_session,
    "compact": sc_compact,
    "subagent": sc_subagent,
    "slow_step": sc_slow_step,
    "killed_then_resumed": sc_killed_then_resumed,
    "edited_prompt": sc_edited_prompt,
    "titles": sc_titles,
}


def recount():
    """Recompute `expect` in every manifest from its files/ (no tool run)."""
    for man in sorted(OUT.glob("*/manifest.json")):
        base = man.parent / "files"
        files = {str(p.relative_to(base)): p.read_text() for p in sorted(base.rglob("*")) if p.is_file()}
        m = json.loads(man.read_text())
        m["expect"] = expect(files)
        man.write_text(json.dumps(m, indent=1, ensure_ascii=False) + "\n")
        print(f"{man.parent.name}: recounted")


def main(argv):
    if "--list" in argv:
        print("\n".join(SCENARIOS))
        return 0
    if "--recount" in argv:
        recount()
        return 0
    names = [a for a in argv if not a.startswith("-")] or list(SCENARIOS)
    claude = claude_bin()
    failed = []
    for name in names:
        print(f"== {name}", flush=True)
        r = Run(name, claude)
        try:
            SCENARIOS[name](r)
        except Exception as e:  # noqa: BLE001
            r.abort()
            print(f"{name}: FAILED: {e}", flush=True)
            failed.append(name)
            continue
        r.finish()
    if failed:
        print("failed:", ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
