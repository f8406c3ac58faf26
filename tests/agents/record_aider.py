#!/usr/bin/env python3
"""Records what the real Aider writes to disk, run offline against fakemodel/openai.py.

    python3 tests/agents/record_aider.py [scenario ...]   # default: all scenarios
    python3 tests/agents/record_aider.py --recount        # manifests' counts again from files/
    AIDER_VERSION=0.86.2 python3 tests/agents/record_aider.py

Installs `aider-chat==VERSION` into a venv at ~/.cache/openprogram-agents/aider[-VERSION]
(pip), starts the fake Chat Completions server on a free loopback port and runs
`aider --model openai/fake-model --openai-api-base http://127.0.0.1:PORT/v1 --message …`
once per step, in a small git repository at /tmp/op-agent-rec-aider/home/user/project
with HOME=/tmp/op-agent-rec-aider/home/user.  Nothing leaves the machine: the update
check, analytics, release notes and the repo map are off, litellm reads its bundled
model cost map (LITELLM_LOCAL_MODEL_COST_MAP=True), and the fake model's metadata is
given to Aider in a --model-metadata-file and in a fresh ~/.aider/caches copy of the
cost map (else Aider downloads the cost map from GitHub).

A watcher thread polls the project's `.aider.chat.history.md` and `.aider.input.history`
every ~10 ms.  Output: tests/agents/recordings/aider/<scenario>/{files/project/...,
writes.jsonl, manifest.json}, the throwaway home written as /home/user.  Replaying
writes.jsonl is checked to give files/ exactly.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "fakemodel"))
import openai as fakemodel  # noqa: E402

TOOL = "aider"
PACKAGE = "aider-chat"
DEFAULT_VERSION = "0.86.2"
VERSION = os.environ.get("AIDER_VERSION", DEFAULT_VERSION)
SUFFIX = "" if VERSION == DEFAULT_VERSION else "-" + VERSION
CACHE = os.path.expanduser("~/.cache/openprogram-agents/aider" + SUFFIX)
BASE = "/tmp/op-agent-rec-aider"  # a folder of its own: other recorders clear /tmp/op-agent-rec
HOME = BASE + "/home/user"
PROJECT = HOME + "/project"
OUT = os.path.join(HERE, "recordings", "aider" + SUFFIX)
MODEL = "fake-model"
WATCHED = ("project/.aider.chat.history.md", "project/.aider.input.history")

FIX_README = (
    "README.md\n"
    "```\n"
    "<<<<<<< SEARCH\n"
    "A tiny projet to try agents on.\n"
    "=======\n"
    "A tiny project to try agents on.\n"
    ">>>>>>> REPLACE\n"
    "```\n")


def scenarios():
    return {
        "multi_turn": {
            "steps": [
                {"message": "What does calc.py do?", "files": ["calc.py"]},
                {"message": "Fix the typo in README.md.", "files": ["README.md"]},
                {"message": "Is there a test for mul?\nAnswer in one line.", "files": ["test_calc.py"]},
            ],
            "turns": [
                {"match": "What does calc.py do?", "steps": [{"items": [{"type": "text", "text":
                    "calc.py defines two functions:\n\n- `add(a, b)` returns the sum.\n- `mul(a, b)` returns the product.\n\n"
                    "> Both take two numbers; nothing else is in the file."}]}]},
                {"match": "Fix the typo in README.md", "steps": [{"items": [{"type": "text", "text":
                    "The word \"projet\" should be \"project\":\n\n" + FIX_README}]}]},
                {"match": "Is there a test for mul?", "steps": [{"items": [{"type": "text", "text":
                    "Yes: `test_mul` checks that `mul(2, 3)` is 6."}]}]},
            ],
        },
        "slow_step": {
            "steps": [{"message": "Wait a little, then say done.", "files": []}],
            "turns": [
                {"match": "Wait a little", "steps": [{"delay": 5, "items": [{"type": "text", "text": "Done: waited."}]}]},
            ],
        },
    }


# --------------------------------------------------------------------------- helpers


def install():
    exe = os.path.join(CACHE, "bin", "aider")
    ok = False
    if os.path.exists(exe):
        p = subprocess.run([exe, "--version"], capture_output=True, text=True)
        ok = p.stdout.strip().endswith(VERSION)
    if not ok:
        subprocess.run([sys.executable, "-m", "venv", CACHE], check=True)
        subprocess.run([os.path.join(CACHE, "bin", "pip"), "install", "-q", f"{PACKAGE}=={VERSION}"], check=True)
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
    subprocess.run(g + ["config", "user.name", "Test User"], cwd=PROJECT, check=True)
    subprocess.run(g + ["config", "user.email", "user@example.com"], cwd=PROJECT, check=True)
    subprocess.run(g + ["add", "."], cwd=PROJECT, check=True)
    subprocess.run(g + ["commit", "-qm", "Initial commit"], cwd=PROJECT, check=True,
                   env=dict(os.environ, GIT_AUTHOR_DATE="2025-01-01T00:00:00Z", GIT_COMMITTER_DATE="2025-01-01T00:00:00Z"))


def model_metadata():
    """The fake model as litellm's cost map describes a model (no price: nothing to pay)."""
    info = {"max_tokens": 8192, "max_input_tokens": 128000, "max_output_tokens": 8192,
            "input_cost_per_token": 0.0, "output_cost_per_token": 0.0,
            "litellm_provider": "openai", "mode": "chat"}
    return {f"openai/{MODEL}": info, MODEL: info}


class Watcher(threading.Thread):
    """Polls the watched files; keeps each distinct content seen, with its time."""

    def __init__(self, root, t0):
        super().__init__(daemon=True)
        self.root, self.t0 = root, t0
        self.seen = {}      # rel -> last bytes (None when deleted)
        self.events = []    # (t_ms, rel, bytes or None)
        self.stop_flag = threading.Event()

    def scan(self):
        now = {}
        for rel in WATCHED:
            try:
                with open(os.path.join(self.root, rel), "rb") as f:
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
    # Aider echoes its own command line into the history: the venv's aider is written as
    # a user's pipx/uv install would be
    s = s.replace(os.path.join(CACHE, "bin", "aider"), "/home/user/.local/bin/aider")
    s = s.replace(HOME, "/home/user").replace(BASE, "")
    host = socket.gethostname()
    assert not (host and len(host) > 3 and host in s), "the host name is in a transcript"
    return s


def neutral(v):
    if isinstance(v, str):
        return neutral_text(v)
    if isinstance(v, dict):
        return {k: neutral(x) for k, x in v.items()}
    if isinstance(v, list):
        return [neutral(x) for x in v]
    return v


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

STARTED = "# aider chat started at "


def parse_history(text):
    """Sessions of a .aider.chat.history.md, read line by line (not by our importer).

    What Aider writes (aider/io.py): a typed message as `\n#### line  \n#### line  \n`
    (a run of `#### ` lines is one message); its own output as `> ` + the text stripped
    + two spaces and a newline (a text of several lines keeps its inner lines unmarked:
    only the first carries `> `, only the last the two spaces); the model's reply as
    `\n` + the reply stripped + `\n\n`.  So here a `> ` line outside a fenced block
    opens an output message only if it, or a following line before the next blank
    line, ends with two spaces; that line closes it.  A `> ` line of the reply (a
    Markdown quote the model wrote: no two trailing spaces) stays in the reply.  Any
    other non-blank line is the reply, which goes on (blank lines and fenced blocks
    included) until a `#### ` line or an output message.
    """
    sessions = []
    cur = None
    kind = None       # "user" | "reply" | "output" | None: the block being read
    fenced = False
    lines = text.split("\n")

    def output_end(i):
        """The index of the line closing an output message opened at line i, or None."""
        j = i
        while j < len(lines) and lines[j].strip() and not lines[j].startswith(("#### ", STARTED)):
            if lines[j].endswith("  "):
                return j
            j += 1
        return None

    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if line.startswith(STARTED):
            cur = {"started": line[len(STARTED):].strip(), "blocks": []}
            sessions.append(cur)
            kind, fenced = None, False
            continue
        if cur is None:
            continue
        blocks = cur["blocks"]
        if kind == "reply" and fenced:
            blocks[-1]["lines"].append(line)
            if line.lstrip().startswith("```"):
                fenced = False
            continue
        if line.startswith("####"):
            body = line[5:] if line.startswith("#### ") else line[4:]
            body = body[:-2] if body.endswith("  ") else body
            if kind == "user":
                blocks[-1]["lines"].append(body)
            else:
                blocks.append({"kind": "user", "lines": [body]})
            kind = "user"
            continue
        end = output_end(i - 1) if line.startswith("> ") or line == ">" else None
        if end is not None:
            msg = [line[2:]] + lines[i:end + 1]
            msg[-1] = msg[-1][:-2]
            # joined: right after another output message, no blank line between (one run)
            blocks.append({"kind": "output", "lines": msg, "joined": kind == "output"})
            i = end + 1
            kind = "output"
        elif not line.strip():
            if kind == "reply":
                blocks[-1]["lines"].append(line)
            else:
                kind = None
        else:
            if kind != "reply":
                blocks.append({"kind": "reply", "lines": []})
                kind = "reply"
            blocks[-1]["lines"].append(line)
            if line.lstrip().startswith("```"):
                fenced = True
    return sessions


def expect_from(files):
    hist = files.get("project/.aider.chat.history.md", "")
    sessions = parse_history(hist)
    per = []
    for s in sessions:
        b = s["blocks"]
        per.append({
            "started": s["started"],
            "prompts": ["\n".join(x["lines"]) for x in b if x["kind"] == "user"],
            "assistant_replies": [("\n".join(x["lines"])).strip() for x in b if x["kind"] == "reply"],
            "tool_outputs": ["\n".join(x["lines"]).strip() for x in b if x["kind"] == "output"],
            "output_runs": sum(1 for x in b if x["kind"] == "output" and not x["joined"]),
            "block_order": [x["kind"] for x in b],
        })
    inp = files.get("project/.aider.input.history")
    input_entries = []
    if inp is not None:
        # `# <time>` then `+<line>` per line of the input
        for line in inp.split("\n"):
            if line.startswith("# "):
                input_entries.append({"time": line[2:], "lines": []})
            elif line.startswith("+") and input_entries:
                input_entries[-1]["lines"].append(line[1:])
    return {
        "meaning": {
            "sessions": "lines starting '# aider chat started at ' (one per aider process run in the repository)",
            "user_prompts": "runs of consecutive '#### ' lines (outside a fenced reply block), one typed message each; "
                            "the lines of a multi-line message are its '#### ' lines in order (the two trailing spaces "
                            "of Markdown's line break removed)",
            "assistant_replies": "runs of other lines (blank lines, fenced blocks and the model's own '> ' quotes "
                                 "inside them included) between a prompt and the next '#### ' line or Aider output "
                                 "message: one model reply each (trimmed)",
            "tool_outputs": "Aider's own output messages (io.tool_output: startup lines, files added, edits applied, "
                            "token counts): an unfenced line starting '> ' up to the first line ending in two spaces "
                            "(the same line for a one-line message; a message of several lines marks only its first "
                            "line with '> '). Each output call is one message, so a run of '> ' lines counts several. "
                            "A '> ' quote the model wrote (no two trailing spaces) is part of its reply",
            "output_runs": "runs of Aider output messages with no blank line between them (a startup banner, or "
                           "'Tokens: …' then 'Applied edit to …'): what a reader grouping '> ' lines up to a blank "
                           "line sees as one block",
            "input_history_entries": "'# <time>' entries of .aider.input.history, their '+' lines joined",
            "per_session": "each session's start, prompts in order, reply texts, output texts and the order of its blocks",
        },
        "sessions": len(sessions),
        "user_prompts": sum(len(p["prompts"]) for p in per),
        "assistant_replies": sum(len(p["assistant_replies"]) for p in per),
        "tool_outputs": sum(len(p["tool_outputs"]) for p in per),
        "output_runs": sum(p["output_runs"] for p in per),
        "input_history_entries": ["\n".join(e["lines"]) for e in input_entries],
        "per_session": per,
    }


# --------------------------------------------------------------------------- running


def run_scenario(name, exe):
    sc = scenarios()[name]
    print(f"== aider {VERSION} {name}", flush=True)
    make_project()
    log_path = os.path.join(BASE, "requests.jsonl")
    srv, port = fakemodel.serve({"model": MODEL, "turns": sc["turns"], "fallback": "OK."}, 0, log_path)
    meta = model_metadata()
    os.makedirs(HOME + "/.aider/caches")
    meta_path = os.path.join(HOME, ".aider", "model-metadata.json")
    with open(meta_path, "w") as f:
        json.dump(meta, f, indent=1)
    with open(HOME + "/.aider/caches/model_prices_and_context_window.json", "w") as f:
        json.dump(meta, f, indent=1)
    env = {"PATH": os.path.join(CACHE, "bin") + ":/usr/local/bin:/usr/bin:/bin", "HOME": HOME,
           "LITELLM_LOCAL_MODEL_COST_MAP": "True", "AIDER_ANALYTICS": "false", "AIDER_CHECK_UPDATE": "false",
           "TERM": "xterm-256color", "TZ": "UTC", "LANG": "C.UTF-8", "USER": "user", "LOGNAME": "user", "NO_COLOR": "1",
           "GIT_AUTHOR_NAME": "Test User", "GIT_AUTHOR_EMAIL": "user@example.com",
           "GIT_COMMITTER_NAME": "Test User", "GIT_COMMITTER_EMAIL": "user@example.com"}
    base_cmd = [exe, "--model", f"openai/{MODEL}", "--openai-api-base", f"http://127.0.0.1:{port}/v1",
                "--openai-api-key", "sk-fake", "--model-metadata-file", meta_path,
                "--edit-format", "diff", "--map-tokens", "0",
                "--no-auto-commits", "--no-dirty-commits", "--yes-always", "--no-check-update",
                "--no-show-release-notes", "--no-show-model-warnings", "--analytics-disable", "--no-gitignore",
                "--no-pretty", "--no-fancy-input", "--no-detect-urls", "--no-suggest-shell-commands",
                "--encoding", "utf-8"]
    t0 = time.monotonic()
    w = Watcher(HOME, t0)
    w.start()
    steps = []
    for i, st in enumerate(sc["steps"]):
        cmd = base_cmd + ["--message", st["message"]] + st["files"]
        ts = round((time.monotonic() - t0) * 1000)
        p = subprocess.run(cmd, cwd=PROJECT, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)
        te = round((time.monotonic() - t0) * 1000)
        steps.append({"t_start_ms": ts, "t_end_ms": te,
                      "command": "aider --message " + json.dumps(st["message"]) + "".join(" " + x for x in st["files"]),
                      "message": st["message"], "files": st["files"], "exit_code": p.returncode,
                      "stdout_tail": p.stdout[-1500:]})
        print(f"  step {i}: rc={p.returncode} {te - ts} ms", flush=True)
        if p.returncode != 0 or os.environ.get("SHOW"):
            print(p.stdout[-3000:], p.stderr[-3000:], flush=True)
        # a new session header per process: keep the runs in different seconds
        time.sleep(1.2)
    w.stop()
    srv.shutdown()
    ops, last = derive_ops(w.events)
    disk = {}
    for rel in WATCHED:
        fp = os.path.join(HOME, rel)
        if os.path.exists(fp):
            disk[rel] = neutral_text(open(fp, "rb").read().decode("utf-8", "replace"))
    assert replay(ops) == disk, "replaying the watched changes does not give the final files"
    out = os.path.join(OUT, name)
    shutil.rmtree(out, ignore_errors=True)
    for rel, text in disk.items():
        dst = os.path.join(out, "files", rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with open(dst, "w") as f:
            f.write(text)
    with open(os.path.join(out, "writes.jsonl"), "w") as f:
        for o in ops:
            f.write(json.dumps(o, ensure_ascii=False) + "\n")
    reqs = [json.loads(l) for l in open(log_path)]
    readme = open(os.path.join(PROJECT, "README.md")).read()
    git_status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=PROJECT,
                                capture_output=True, text=True).stdout.splitlines()
    project_files = sorted(os.path.relpath(os.path.join(dp, n), PROJECT) for dp, dn, fn in os.walk(PROJECT)
                           for n in fn if "/.git/" not in os.path.join(dp, n) + "/" and not dp.startswith(PROJECT + "/.git"))
    manifest = {
        "tool": TOOL, "version": VERSION, "scenario": name, "model": f"openai/{MODEL}",
        "home": "/home/user", "cwd": "/home/user/project",
        "command": " ".join(["aider"] + base_cmd[1:]).replace(str(port), "PORT"),
        "env": {k: v for k, v in env.items() if k.startswith(("LITELLM", "AIDER"))},
        "steps": steps,
        "model_requests": [{"turn": (r.get("info") or {}).get("turn"), "step": (r.get("info") or {}).get("step"),
                            "fallback": (r.get("info") or {}).get("fallback")} for r in reqs if r.get("api")],
        "unknown_requests": [r.get("path") for r in reqs if r.get("unknown")],
        "project_files_after": project_files,
        "git_status_after": git_status,
        "readme_after": readme,
        "expect": expect_from(disk),
        "write_ops": {k: sum(1 for o in ops if o["op"] == k) for k in ("append", "write", "delete")},
    }
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(neutral(manifest), f, indent=1, ensure_ascii=False)
        f.write("\n")
    e = manifest["expect"]
    print(f"  wrote {out}: {len(ops)} ops; sessions={e['sessions']} prompts={e['user_prompts']} "
          f"replies={e['assistant_replies']} outputs={e['tool_outputs']}", flush=True)


def recount():
    for name in sorted(os.listdir(OUT)):
        mpath = os.path.join(OUT, name, "manifest.json")
        if not os.path.exists(mpath):
            continue
        files = {}
        for rel in WATCHED:
            fp = os.path.join(OUT, name, "files", rel)
            if os.path.exists(fp):
                files[rel] = open(fp).read()
        m = json.load(open(mpath))
        m["expect"] = expect_from(files)
        with open(mpath, "w") as f:
            json.dump(m, f, indent=1, ensure_ascii=False)
            f.write("\n")
        print(f"{name}: recounted", flush=True)


def main():
    args = sys.argv[1:]
    if args == ["--recount"]:
        return recount()
    if args == ["--list"]:
        print("\n".join(scenarios()))
        return
    names = args or list(scenarios())
    exe = install()
    for n in names:
        run_scenario(n, exe)


if __name__ == "__main__":
    main()
