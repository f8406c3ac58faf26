#!/usr/bin/env python3
"""Record what Gemini CLI really writes to disk for its chat history.

Runs the real ``@google/gemini-cli`` (pinned below) offline against the
scripted fake Gemini API in ``fakemodel/gemini.py``, one scenario at a time,
with ``HOME`` a throwaway folder. A watcher thread polls ``HOME/.gemini`` every
~10 ms and notes each change of a file under ``.gemini/tmp/`` (and
``.gemini/projects.json``): bytes appended, a whole rewrite, or a deletion.

Output, per scenario, in ``recordings/gemini-cli/<scenario>/``:

* ``files/``        the final tree, paths relative to ``HOME/.gemini``
* ``writes.jsonl``  the changes in order; replaying them rebuilds ``files/``
* ``manifest.json`` the tool version, the steps run and independent counts

Every occurrence of the throwaway home (``/tmp/op-agent-rec-gemini/home/user``) is
replaced by ``/home/user``. Gemini CLI's ``projectHash`` is the sha256 of the
project path as it ran (``/tmp/op-agent-rec-gemini/home/user/project``) and is kept
as written.

Usage: ``python3 tests/agents/record_gemini_cli.py [scenario ...]``
(no argument: all scenarios). Needs node >= 20, npm, git and tmux.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "fakemodel"))
import gemini as fakemodel  # noqa: E402

VERSION = "0.61.0"
CACHE = Path.home() / ".cache" / "openprogram-agents" / "gemini-cli"
GEMINI_BIN = CACHE / "node_modules" / ".bin" / "gemini"
ROOT = Path("/tmp/op-agent-rec-gemini")  # its own: other recorders use /tmp/op-agent-rec
HOME = ROOT / "home" / "user"
PROJECT = HOME / "project"
GEMINI_DIR = HOME / ".gemini"
NEUTRAL_HOME = "/home/user"
OUT = HERE / "recordings" / "gemini-cli"
POLL = 0.01
MAX_RECORDING = 300 * 1024

SETTINGS = {
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "security": {"folderTrust": {"enabled": False}, "auth": {"selectedType": "gemini-api-key"}},
    "ui": {"hideTips": True, "hideBanner": True},
}


# --------------------------------------------------------------------------- install

def install() -> None:
    pkg = CACHE / "node_modules" / "@google" / "gemini-cli" / "package.json"
    if pkg.exists() and json.loads(pkg.read_text()).get("version") == VERSION and GEMINI_BIN.exists():
        return
    CACHE.mkdir(parents=True, exist_ok=True)
    subprocess.run(["npm", "install", "--no-fund", "--no-audit", "--prefix", str(CACHE),
                    f"@google/gemini-cli@{VERSION}"], check=True)


# --------------------------------------------------------------------------- watcher

def _decode_prefix(data: bytes) -> bytes:
    """Drop an unfinished UTF-8 sequence at the end (the rest comes next poll)."""
    for cut in range(0, 4):
        try:
            (data[: len(data) - cut] if cut else data).decode("utf-8")
            return data[: len(data) - cut] if cut else data
        except UnicodeDecodeError:
            continue
    return data


class Watcher(threading.Thread):
    """Polls the files under .gemini/tmp (and .gemini/projects.json)."""

    def __init__(self, base: Path, t0: float):
        super().__init__(daemon=True)
        self.base = base
        self.t0 = t0
        self.state: dict[str, bytes] = {}
        self.events: list[dict] = []
        self.stop_flag = threading.Event()

    def files(self) -> dict[str, Path]:
        found = {}
        tmp = self.base / "tmp"
        if tmp.is_dir():
            for dirpath, _dirs, names in os.walk(tmp):
                for n in names:
                    p = Path(dirpath) / n
                    found[str(p.relative_to(self.base))] = p
        pj = self.base / "projects.json"
        if pj.exists():
            found["projects.json"] = pj
        return found

    def poll(self) -> None:
        now = self.files()
        t_ms = round((time.monotonic() - self.t0) * 1000)
        for rel, p in sorted(now.items()):
            try:
                data = p.read_bytes()
            except (FileNotFoundError, IsADirectoryError, PermissionError):
                continue
            data = _decode_prefix(data)
            old = self.state.get(rel)
            if old == data:
                continue
            if old is not None and data.startswith(old):
                self.events.append({"t_ms": t_ms, "path": rel, "op": "append", "data": data[len(old):].decode()})
            else:
                self.events.append({"t_ms": t_ms, "path": rel, "op": "write", "data": data.decode()})
            self.state[rel] = data
        for rel in sorted(set(self.state) - set(now)):
            self.events.append({"t_ms": t_ms, "path": rel, "op": "delete", "data": ""})
            del self.state[rel]

    def run(self) -> None:
        while not self.stop_flag.is_set():
            self.poll()
            time.sleep(POLL)

    def stop(self) -> None:
        self.stop_flag.set()
        self.join()
        self.poll()

    def text_of(self, needle: str) -> bool:
        return any(needle.encode() in d for r, d in self.state.items() if "/chats/" in r)


# --------------------------------------------------------------------------- a scenario run

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def git(*args: str) -> None:
    subprocess.run(["git", *args], cwd=PROJECT, check=True, capture_output=True, env=base_env())


def base_env() -> dict:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(HOME),
        "USER": "user",
        "LOGNAME": "user",
        "LANG": "C.UTF-8",
        "TZ": "UTC",
        "TERM": "xterm-256color",
        "COLORTERM": "truecolor",
        "SHELL": "/bin/bash",
        "GIT_AUTHOR_NAME": "user", "GIT_AUTHOR_EMAIL": "user@example.com",
        "GIT_COMMITTER_NAME": "user", "GIT_COMMITTER_EMAIL": "user@example.com",
    }


def fresh_home() -> None:
    shutil.rmtree(ROOT, ignore_errors=True)
    PROJECT.mkdir(parents=True)
    GEMINI_DIR.mkdir(parents=True)
    (GEMINI_DIR / "settings.json").write_text(json.dumps(SETTINGS, indent=2) + "\n")
    (PROJECT / "README.md").write_text("# demo\n\nA tiny project for recording Gemini CLI.\n")
    (PROJECT / "main.py").write_text('def greet(name):\n    return "hello " + name\n\n\nprint(greet("world"))\n')
    git("init", "-q", "-b", "main")
    git("add", ".")
    git("commit", "-q", "-m", "initial")


class Run:
    def __init__(self, name: str, script: list[dict]):
        self.name = name
        fresh_home()
        self.log_path = ROOT / f"{name}-requests.jsonl"
        self.server = fakemodel.serve(script, 0, str(self.log_path))
        self.t0 = time.monotonic()
        self.watcher = Watcher(GEMINI_DIR, self.t0)
        self.watcher.start()
        self.steps: list[str] = []
        self.env = base_env() | {
            "GEMINI_API_KEY": "fake",
            "GOOGLE_GEMINI_BASE_URL": f"http://127.0.0.1:{self.server.server_port}",
            "GEMINI_TELEMETRY_ENABLED": "false",
            "NO_BROWSER": "true",
        }

    # -- non-interactive
    def gemini(self, prompt: str, resume: str | None = None, kill_when=None, timeout: float = 120) -> int:
        args = [str(GEMINI_BIN), "-p", prompt, "--approval-mode", "yolo"]
        if resume:
            args += ["--resume", resume]
        proc = subprocess.Popen(args, cwd=PROJECT, env=self.env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        out = {"stdout": b"", "stderr": b""}

        def drain(name, stream):
            out[name] = stream.read()
        readers = [threading.Thread(target=drain, args=(k, getattr(proc, k)), daemon=True) for k in out]
        for r in readers:
            r.start()
        deadline = time.monotonic() + timeout
        killed = False
        while proc.poll() is None:
            if kill_when and not killed and kill_when(self):
                os.killpg(proc.pid, signal.SIGKILL)
                killed = True
            if time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)
                raise RuntimeError(f"{self.name}: gemini timed out")
            time.sleep(0.02)
        for r in readers:
            r.join(5)
        (ROOT / f"{self.name}-run{len(self.steps)}.out").write_bytes(out["stdout"] + b"\n--- stderr\n" + out["stderr"])
        if proc.returncode != 0 and not killed:
            sys.stderr.write(out["stderr"].decode(errors="replace")[-3000:])
            raise RuntimeError(f"{self.name}: gemini exited {proc.returncode}")
        return proc.returncode

    def session_ids(self) -> list[str]:
        ids = []
        for p in sorted((GEMINI_DIR / "tmp").glob("*/chats/*.jsonl")):
            first = p.read_text().split("\n", 1)[0]
            ids.append(json.loads(first)["sessionId"])
        return ids

    def settle(self, seconds: float = 0.5) -> None:
        time.sleep(seconds)

    def requests(self) -> list[dict]:
        if not self.log_path.exists():
            return []
        return [json.loads(line) for line in self.log_path.read_text().splitlines()]

    def finish(self, scenario: str, notes: list[str] | None = None) -> Path:
        time.sleep(0.3)
        self.watcher.stop()
        self.server.shutdown()
        return write_recording(scenario, self.watcher, self.steps, notes or [])


# --------------------------------------------------------------------------- tmux (interactive)

class Tmux:
    def __init__(self, run: Run, session: str, extra_args: list[str] | None = None):
        self.run = run
        self.session = session
        env_args = [f"{k}={v}" for k, v in run.env.items()]
        cmd = ["env", "-i", *env_args, str(GEMINI_BIN), "--approval-mode", "yolo", *(extra_args or [])]
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
        subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "160", "-y", "50", "-c", str(PROJECT),
                        *cmd], check=True)

    def screen(self) -> str:
        r = subprocess.run(["tmux", "capture-pane", "-p", "-t", self.session], capture_output=True, text=True)
        return r.stdout

    def wait_for(self, predicate, timeout: float = 60, what: str = "") -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.1)
        raise RuntimeError(f"tmux: timed out waiting for {what}\n{self.screen()}")

    def type(self, text: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.session, "-l", text], check=True)
        time.sleep(1.0)  # an Enter sent right after the text is taken as part of a paste
        subprocess.run(["tmux", "send-keys", "-t", self.session, "Enter"], check=True)

    def alive(self) -> bool:
        return subprocess.run(["tmux", "has-session", "-t", self.session], capture_output=True).returncode == 0

    def close(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.session], capture_output=True)


# --------------------------------------------------------------------------- output

def neutral(text: str) -> str:
    return text.replace(str(HOME), NEUTRAL_HOME)


def replay(events: list[dict]) -> dict[str, str]:
    tree: dict[str, str] = {}
    for e in events:
        if e["op"] == "append":
            tree[e["path"]] = tree.get(e["path"], "") + e["data"]
        elif e["op"] == "write":
            tree[e["path"]] = e["data"]
        elif e["op"] == "delete":
            tree.pop(e["path"], None)
    return tree


def read_tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text(encoding="utf-8")
            for p in sorted(root.rglob("*")) if p.is_file()}


def write_recording(scenario: str, watcher: Watcher, steps: list[str], notes: list[str]) -> Path:
    dest = OUT / scenario
    shutil.rmtree(dest, ignore_errors=True)
    files_dir = dest / "files"
    files_dir.mkdir(parents=True)
    final_raw = {rel: data.decode() for rel, data in watcher.state.items()}
    # The raw replay must give the raw final tree, and the neutral replay the neutral tree.
    assert replay(watcher.events) == final_raw, f"{scenario}: raw replay differs from the final tree"
    events = [{**e, "path": neutral(e["path"]), "data": neutral(e["data"])} for e in watcher.events]
    for rel, text in final_raw.items():
        p = files_dir / neutral(rel)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(neutral(text).encode())
    with open(dest / "writes.jsonl", "w", encoding="utf-8") as f:
        for e in events:
            f.write(json.dumps(e, ensure_ascii=False) + "\n")
    check_replay(dest)
    manifest = {
        "tool": "gemini-cli",
        "version": VERSION,
        "scenario": scenario,
        "steps": steps,
        "notes": notes + [
            f"Paths: files/ is relative to HOME/.gemini; HOME was {HOME} and is written as {NEUTRAL_HOME}.",
            "The project folder under tmp/ is the short name Gemini CLI registers in projects.json ('project').",
            "projectHash in the records is sha256 of the project path as run, "
            f"'{PROJECT}' = {hashlib.sha256(str(PROJECT).encode()).hexdigest()}, kept as written "
            f"(sha256 of '{NEUTRAL_HOME}/project' would be {hashlib.sha256((NEUTRAL_HOME + '/project').encode()).hexdigest()}).",
            "writes.jsonl comes from polling every ~10 ms: two writes closer together than a poll show as one change.",
        ],
        "expect": expect(read_tree(files_dir)),
    }
    (dest / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    check_clean(dest)
    return dest


def check_replay(dest: Path) -> None:
    events = [json.loads(line) for line in (dest / "writes.jsonl").read_text(encoding="utf-8").splitlines()]
    got = replay(events)
    want = read_tree(dest / "files")
    if got != want:
        diff = sorted(set(got) ^ set(want)) or [k for k in got if got[k] != want.get(k)]
        raise AssertionError(f"{dest.name}: replaying writes.jsonl does not give files/: {diff}")


def check_clean(dest: Path) -> None:
    size = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())
    if size > MAX_RECORDING:
        print(f"warning: {dest.name} is {size} bytes", file=sys.stderr)
    host = re.compile(r"(?<![\w.-])" + re.escape(socket.gethostname()) + r"(?![\w-])")
    for p in dest.rglob("*"):
        if not p.is_file():
            continue
        text = p.read_text(encoding="utf-8")
        if p.name == "manifest.json":  # its notes name the throwaway path on purpose
            text = text.replace(str(ROOT), "")
        for b in ("/tmp/op-agent-rec", "/root/"):
            if b in text:
                raise AssertionError(f"{p}: holds {b!r}")
        if host.search(text):
            raise AssertionError(f"{p}: holds the host name")


# --------------------------------------------------------------------------- expectations

EXPECT_MEANING = {
    "conversations": "distinct sessionId values over the chat files' header lines (one per conversation)",
    "chat_files": "files tmp/<project>/chats/**/*.jsonl (a resume in a later minute leaves an extra stub file with the same sessionId)",
    "user_prompts": "distinct ids of top-level type:'user' records with a text part and no functionResponse part (typed prompts)",
    "tool_result_user_records": "distinct ids of top-level type:'user' records whose parts are only functionResponse (a tool's result sent back to the model)",
    "model_text_replies": "distinct ids of top-level type:'gemini' records whose last version has non-empty text content",
    "gemini_records": "distinct ids of top-level type:'gemini' records (text and/or toolCalls)",
    "tool_calls": "distinct toolCalls[].id over the last version of every gemini record",
    "tool_results": "toolCalls entries (last version) that hold a result",
    "records_by_id_written": "top-level lines with an id (a record written again in full counts again)",
    "header_records": "lines with sessionId and no id/type (the metadata line at a file's top; a fresh start or a resume writes one)",
    "set_records": "lines {'$set': …}",
    "set_messages_records": "lines {'$set': {'messages': …}} (the model's context replaced)",
    "set_keys": "how often each key appears in $set patches",
    "rewind_records": "lines {'$rewindTo': id}",
    "other_types": "count of other top-level type values (info, error, warning, …)",
}


def parts_of(content) -> list:
    if isinstance(content, str):
        return [{"text": content}]
    if isinstance(content, dict):
        return [content]
    return [p if isinstance(p, dict) else {"text": str(p)} for p in (content or [])]


def expect(tree: dict[str, str]) -> dict:
    totals = {k: 0 for k in EXPECT_MEANING if k not in ("set_keys", "other_types")}
    set_keys: dict[str, int] = {}
    other: dict[str, int] = {}
    convs: dict[str, dict] = {}
    for rel, text in sorted(tree.items()):
        if "/chats/" not in rel or not rel.endswith(".jsonl"):
            continue
        totals["chat_files"] += 1
        last: dict[str, dict] = {}
        order: list[str] = []
        headers = []
        for line in text.splitlines():
            if not line.strip():
                continue
            rec = json.loads(line)
            if "$set" in rec:
                totals["set_records"] += 1
                for k in rec["$set"]:
                    set_keys[k] = set_keys.get(k, 0) + 1
                if "messages" in rec["$set"]:
                    totals["set_messages_records"] += 1
                continue
            if "$rewindTo" in rec:
                totals["rewind_records"] += 1
                continue
            if "id" in rec:
                totals["records_by_id_written"] += 1
                if rec["id"] not in last:
                    order.append(rec["id"])
                last[rec["id"]] = rec
                continue
            if "sessionId" in rec:
                totals["header_records"] += 1
                headers.append(rec)
        sid = headers[0].get("sessionId") if headers else rel
        conv = convs.setdefault(sid, {"sessionId": sid, "files": [], "startTime": None, "kind": None,
                                      "header_startTimes": [], "prompts": []})
        conv["files"].append(rel)
        conv["header_startTimes"] += [h.get("startTime") for h in headers]
        conv["kind"] = conv["kind"] or (headers[0].get("kind") if headers else None)
        for rid in order:
            rec = last[rid]
            kind = rec.get("type")
            parts = parts_of(rec.get("content"))
            if kind == "user":
                fr = any("functionResponse" in p for p in parts)
                texts = [p["text"] for p in parts if p.get("text")]
                if texts and not fr:
                    totals["user_prompts"] += 1
                    conv["prompts"].append("".join(texts))
                elif fr and not texts:
                    totals["tool_result_user_records"] += 1
            elif kind == "gemini":
                totals["gemini_records"] += 1
                if any(p.get("text") for p in parts):
                    totals["model_text_replies"] += 1
                for tc in rec.get("toolCalls") or []:
                    totals["tool_calls"] += 1
                    if tc.get("result") is not None:
                        totals["tool_results"] += 1
            else:
                other[str(kind)] = other.get(str(kind), 0) + 1
    for conv in convs.values():
        conv["startTime"] = min((t for t in conv["header_startTimes"] if t), default=None)
    totals["conversations"] = len(convs)
    return {**totals, "set_keys": set_keys, "other_types": other,
            "conversations_detail": sorted(convs.values(), key=lambda c: c["startTime"] or ""),
            "meaning": EXPECT_MEANING | {
                "conversations_detail": "per sessionId: its files, the startTime of its first header (the session "
                                        "start), every header's startTime (later ones are resumes), the typed "
                                        "prompts in file and line order"}}


# --------------------------------------------------------------------------- scenarios

def fc(name: str, **args) -> dict:
    return {"functionCall": {"name": name, "args": args}}


def t(text: str) -> dict:
    return {"text": text}


def next_minute() -> None:
    """Sleep into the next UTC minute: a chat file is named by the minute it was
    opened in, and a resume within the same minute opens the same name."""
    time.sleep(61 - time.time() % 60)


def early_in_minute() -> None:
    """Make sure the next ~20 s stay within one UTC minute."""
    if time.time() % 60 > 35:
        next_minute()


def scenario_multi_turn_tools() -> Path:
    p1, p2, p3 = ("Look around the project and start a notes file.",
                  "Update the README and add a todo list.",
                  "What is in notes.txt now?")
    readme = str(PROJECT / "README.md")
    script = [
        {"prompt": p1, "step": 0, "parts": [t("I'll list the files and read the README."),
                                            fc("run_shell_command", command="ls", description="List files"),
                                            fc("read_file", file_path=readme)]},
        {"prompt": p1, "step": 1, "parts": [fc("run_shell_command", command="echo x > notes.txt",
                                               description="Start notes")]},
        {"prompt": p1, "step": 2, "parts": [t("The project has README.md and main.py; I started notes.txt.")]},
        {"prompt": p2, "step": 0, "parts": [t("Editing the README and writing todo.txt."),
                                            fc("replace", file_path=readme, instruction="Add a usage line",
                                               old_string="A tiny project for recording Gemini CLI.\n",
                                               new_string="A tiny project for recording Gemini CLI.\n\nRun: python3 main.py\n"),
                                            fc("write_file", file_path=str(PROJECT / "todo.txt"),
                                               content="- add tests\n- add docs\n")]},
        {"prompt": p2, "step": 1, "parts": [t("README updated and todo.txt written.")]},
        {"prompt": p3, "step": 0, "parts": [fc("read_file", file_path=str(PROJECT / "notes.txt"))]},
        {"prompt": p3, "step": 1, "parts": [t("notes.txt holds a single line: x")]},
    ]
    run = Run("multi_turn_tools", script)
    run.gemini(p1)
    run.steps.append(f"gemini -p {p1!r} --approval-mode yolo  (new conversation; 2 model steps with tools: "
                     "ls + read_file in one reply, then echo x > notes.txt, then a text answer)")
    sid = run.session_ids()[0]
    next_minute()
    run.gemini(p2, resume=sid)
    run.steps.append(f"(waited into the next minute) gemini -p {p2!r} --resume <sessionId>  "
                     "(replace + write_file in one reply, then text)")
    next_minute()
    run.gemini(p3, resume="latest")
    run.steps.append(f"(waited into the next minute) gemini -p {p3!r} --resume latest  (read_file notes.txt, then text)")
    return run.finish("multi_turn_tools")


def scenario_slow_step() -> Path:
    p = "Run the slow build step."
    script = [
        {"prompt": p, "step": 0, "parts": [t("Running the build; it takes a while."),
                                           fc("run_shell_command", command="sleep 8 && echo built",
                                              description="Slow build")]},
        {"prompt": p, "step": 1, "delay": 5, "parts": [t("The build finished: built.")]},
    ]
    run = Run("slow_step", script)
    run.gemini(p)
    run.steps.append(f"gemini -p {p!r} --approval-mode yolo: the model calls run_shell_command "
                     "'sleep 8 && echo built'; the fake model waits 5 s before the text answer that follows "
                     "the tool result")
    return run.finish("slow_step", ["Look at t_ms in writes.jsonl for the gaps: ~8 s while the shell "
                                    "command runs, ~5 s while the model 'thinks' after the tool result."])


def scenario_resume_same_minute() -> Path:
    p1, p2 = "Write hello into greeting.txt.", "Read greeting.txt back."
    script = [
        {"prompt": p1, "step": 0, "parts": [fc("write_file", file_path=str(PROJECT / "greeting.txt"), content="hello\n")]},
        {"prompt": p1, "step": 1, "parts": [t("Wrote greeting.txt.")]},
        {"prompt": p2, "step": 0, "parts": [fc("read_file", file_path=str(PROJECT / "greeting.txt"))]},
        {"prompt": p2, "step": 1, "parts": [t("greeting.txt says hello.")]},
    ]
    run = Run("resume_same_minute", script)
    early_in_minute()
    run.gemini(p1)
    run.steps.append(f"gemini -p {p1!r} (write_file, then text)")
    run.gemini(p2, resume="latest")
    run.steps.append(f"at once, in the same UTC minute: gemini -p {p2!r} --resume latest (read_file, then text)")
    return run.finish("resume_same_minute", ["The resume starts in the minute the conversation was opened in, "
                                             "so the CLI's fresh start opens the same file name and appends "
                                             "a second header line to the resumed file."])


def scenario_killed_then_resumed() -> Path:
    p1, p2 = "Run the long migration.", "Please continue where you left off."
    script = [
        {"prompt": p1, "step": 0, "parts": [t("Starting the migration."),
                                            fc("run_shell_command", command="sleep 1 && echo migrated > migration.log",
                                               description="Migrate")]},
        {"prompt": p1, "step": 1, "delay": 30, "parts": [t("Migration done (never reached: killed).")]},
        {"prompt": p2, "step": 0, "parts": [fc("read_file", file_path=str(PROJECT / "migration.log"))]},
        {"prompt": p2, "step": 1, "parts": [t("The migration had finished: migration.log says migrated.")]},
    ]
    run = Run("killed_then_resumed", script)

    def tool_done_and_model_waiting(r: Run) -> bool:
        # the functionCall (with its result) is in the chat file and the model's next reply is pending
        return r.watcher.text_of('"toolCalls"') and any(
            q.get("kind") == "main" and q.get("step") == 1 for q in r.requests())

    rc = run.gemini(p1, kill_when=tool_done_and_model_waiting)
    run.steps.append(f"gemini -p {p1!r}: the model calls run_shell_command; once the tool call and its result "
                     f"are in the chat file and the model's next reply is pending (30 s delay), the process "
                     f"group gets SIGKILL (exit {rc})")
    next_minute()
    run.gemini(p2, resume="latest")
    run.steps.append(f"(waited into the next minute) gemini -p {p2!r} --resume latest: read_file migration.log, "
                     "then a text answer")
    return run.finish("killed_then_resumed")


def scenario_killed_during_tool() -> Path:
    p1, p2 = "Run the slow test suite.", "Did the tests finish? Run them again quickly."
    script = [
        {"prompt": p1, "step": 0, "parts": [t("Running the test suite."),
                                            fc("run_shell_command", command="sleep 6 && echo passed",
                                               description="Slow tests")]},
        {"prompt": p1, "step": 1, "parts": [t("Tests passed (never reached: killed).")]},
        {"prompt": p2, "step": 0, "parts": [fc("run_shell_command", command="echo passed", description="Quick tests")]},
        {"prompt": p2, "step": 1, "parts": [t("They pass now.")]},
    ]
    run = Run("killed_during_tool", script)
    seen = {}

    def tool_running(r: Run) -> bool:
        # the model's text record is in the file and the shell command has been running ~2 s
        if "at" not in seen and r.watcher.text_of("Running the test suite."):
            seen["at"] = time.monotonic()
        return "at" in seen and time.monotonic() - seen["at"] > 2

    rc = run.gemini(p1, kill_when=tool_running)
    run.steps.append(f"gemini -p {p1!r}: the model answers a text and a run_shell_command 'sleep 6 && echo passed'; "
                     f"2 s into the command (its call not yet in the file) the process group gets SIGKILL (exit {rc})")
    next_minute()
    run.gemini(p2, resume="latest")
    run.steps.append(f"(waited into the next minute) gemini -p {p2!r} --resume latest: a shell call, then text")
    return run.finish("killed_during_tool", ["While a tool runs, the file holds the model's record without its "
                                             "toolCalls: they are written only once the tools are done, with "
                                             "their results. A kill then loses the call altogether."])


def scenario_two_conversations() -> Path:
    p1, p2 = "Say hello for the first conversation.", "Count the Python files in this second conversation."
    script = [
        {"prompt": p1, "step": 0, "parts": [t("Hello from the first conversation.")]},
        {"prompt": p2, "step": 0, "parts": [fc("run_shell_command", command="ls *.py | wc -l",
                                               description="Count Python files")]},
        {"prompt": p2, "step": 1, "parts": [t("There is 1 Python file.")]},
    ]
    run = Run("two_conversations", script)
    run.gemini(p1)
    run.steps.append(f"gemini -p {p1!r} (conversation 1: one text answer)")
    run.gemini(p2)
    run.steps.append(f"gemini -p {p2!r} (conversation 2, new session in the same project: a shell call, then text)")
    return run.finish("two_conversations")


def scenario_compress() -> Path:
    p1 = "Read main.py and README.md and explain the project."
    p2 = "Now add a docstring to greet."
    main_py = str(PROJECT / "main.py")
    # varied sentences: a text that repeats itself trips the CLI's loop detector
    long_text = " ".join([
        "The project is a tiny greeting program.",
        "main.py defines greet(name), which returns the string 'hello ' followed by the name it is given.",
        "At the bottom of main.py the script prints greet('world'), so running it shows hello world.",
        "README.md is short: a title, demo, and one sentence saying the project exists for recording Gemini CLI.",
        "There are no tests yet, no packaging metadata, and no dependencies beyond the Python standard library.",
        "The repository is a git repository on branch main with a single initial commit by the user.",
        "Nothing reads input from the command line; the greeting target is fixed in the source code.",
        "A natural next step would be documenting greet, adding a test, and accepting a name argument.",
        "Style-wise, the code uses four-space indentation and plain string concatenation rather than f-strings.",
        "Overall it is a minimal example meant to exercise file reads, edits and shell commands.",
    ])
    script = [
        {"prompt": p1, "step": 0, "parts": [fc("read_file", file_path=main_py),
                                            fc("read_file", file_path=str(PROJECT / "README.md"))]},
        {"prompt": p1, "step": 1, "parts": [t(long_text)]},
        {"prompt": p2, "step": 0, "parts": [fc("replace", file_path=main_py, instruction="Add a docstring",
                                               old_string="def greet(name):\n",
                                               new_string='def greet(name):\n    """Say hello."""\n')]},
        {"prompt": p2, "step": 1, "parts": [t("Added a docstring to greet.")]},
    ]
    run = Run("compress", script)
    tm = Tmux(run, "op-gemini-rec")
    screen_has = lambda s: (lambda: s in tm.screen())  # noqa: E731
    try:
        tm.wait_for(screen_has("Type your message"), 60, "the prompt box")
        tm.wait_for(lambda: "Initializing" not in tm.screen(), 60, "the end of initializing")
        time.sleep(1)
        tm.type(p1)
        tm.wait_for(lambda: run.watcher.text_of("The project is a tiny greeting program."), 60, "turn 1")
        time.sleep(2)
        run.steps.append(f"interactive gemini in tmux; typed {p1!r} (two read_file calls in one reply, then a long text)")
        tm.type("/compress")
        tm.wait_for(lambda: any(q.get("kind") == "side" and "state_snapshot" in json.dumps(q.get("reply"))
                                for q in run.requests()), 60, "the compression request")
        time.sleep(3)
        run.steps.append("typed /compress (the fake model answers the summary request with a <state_snapshot>)")
        tm.type(p2)
        tm.wait_for(lambda: run.watcher.text_of("Added a docstring to greet."), 60, "turn 2")
        time.sleep(2)
        run.steps.append(f"typed {p2!r} (replace, then text)")
        (ROOT / "compress-screen.txt").write_text(tm.screen())
        tm.type("/quit")
        tm.wait_for(lambda: not tm.alive(), 20, "exit")
        run.steps.append("typed /quit")
    finally:
        if tm.alive():
            (ROOT / "compress-screen.txt").write_text(tm.screen())
        tm.close()
    return run.finish("compress")


SCENARIOS = {
    "multi_turn_tools": scenario_multi_turn_tools,
    "slow_step": scenario_slow_step,
    "killed_then_resumed": scenario_killed_then_resumed,
    "killed_during_tool": scenario_killed_during_tool,
    "compress": scenario_compress,
    "resume_same_minute": scenario_resume_same_minute,
    "two_conversations": scenario_two_conversations,
}


def main(argv: list[str]) -> int:
    install()
    names = argv or list(SCENARIOS)
    failed = []
    for name in names:
        print(f"== {name}", flush=True)
        try:
            dest = SCENARIOS[name]()
            m = json.loads((dest / "manifest.json").read_text())
            summary = {k: v for k, v in m["expect"].items() if isinstance(v, int)}
            print(f"   ok: {dest}  {summary}", flush=True)
        except Exception as e:  # noqa: BLE001 - report and go on with the next scenario
            failed.append(name)
            print(f"   FAILED: {e}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
