"""A typed client of the openprogram-memory REST API (standard library only)."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Iterator, Literal, NotRequired, TypedDict

Role = Literal["user", "assistant", "tool", "system", "code"]


class Node(TypedDict, total=False):
    """A node to write (``id`` optional: the server makes one)."""

    id: str
    role: Role
    content: Any
    caller: str
    name: str
    metadata: dict[str, Any]
    output: Any


class TurnOutcome(TypedDict, total=False):
    session_id: str
    turn: int
    commit: str
    short_sha: str
    project_commit: str | None
    repeated: bool


class StoreKey(TypedDict):
    project_key: str
    session_id: str
    subpath: NotRequired[str]


class StoredSession(TypedDict):
    session_id: str
    mtime: int
    id: str


class ChangeEvent(TypedDict, total=False):
    kind: Literal[
        "commit",
        "project_commit",
        "session_deleted",
        "session_archived",
        "session_unarchived",
    ]
    session_id: str
    project_id: str
    branch: str
    turn: int
    commit: str
    session_commit: str
    node_ids: list[str]
    time: float


class Change(TypedDict):
    seq: int
    cursor: str
    event: ChangeEvent


class ChangesPage(TypedDict):
    events: list[Change]
    next_cursor: str
    more: bool


class ApiError(Exception):
    """An error answer: its HTTP status, machine-readable ``code`` and message."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message


class Client:
    """A client of one openprogram-memory server.

    ``url`` defaults to ``$OPENPROGRAM_URL`` or ``http://127.0.0.1:8765``;
    ``token`` to ``$OPENPROGRAM_TOKEN`` (needed off loopback).
    """

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        timeout: float = 60.0,
    ) -> None:
        self.url = (url or os.environ.get("OPENPROGRAM_URL") or "http://127.0.0.1:8765").rstrip("/")
        self.token = token if token is not None else os.environ.get("OPENPROGRAM_TOKEN")
        self.timeout = timeout

    # ----- plumbing ------------------------------------------------------

    def _request(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        raw: bool = False,
        timeout: float | None = None,
    ) -> Any:
        url = self.url + path
        if query:
            pairs = {k: v for k, v in query.items() if v is not None}
            url += "?" + urllib.parse.urlencode(pairs)
        data = None
        req_headers = {"Accept": "application/json", **(headers or {})}
        if body is not None:
            data = json.dumps(body).encode()
            req_headers["Content-Type"] = "application/json"
        if self.token:
            req_headers["Authorization"] = f"Bearer {self.token}"
        req = urllib.request.Request(url, data=data, method=method, headers=req_headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout or self.timeout) as resp:
                payload = resp.read()
        except urllib.error.HTTPError as e:
            text = e.read().decode(errors="replace")
            try:
                err = json.loads(text)
                raise ApiError(e.code, err.get("code", "error"), err.get("error", text)) from None
            except (ValueError, AttributeError):
                raise ApiError(e.code, "error", text) from None
        if raw:
            return payload
        return json.loads(payload) if payload else None

    @staticmethod
    def _quote(part: str) -> str:
        return urllib.parse.quote(part, safe="")

    # ----- sessions and turns --------------------------------------------

    def session(self, session_id: str) -> dict[str, Any]:
        return self._request("GET", f"/api/sessions/{self._quote(session_id)}")

    def messages(self, session_id: str) -> list[dict[str, Any]]:
        return self._request("GET", f"/api/sessions/{self._quote(session_id)}/messages")["messages"]

    def append(self, session_id: str, node: Node) -> dict[str, Any]:
        """Append one node (a user message opens a turn)."""
        return self._request("POST", f"/api/sessions/{self._quote(session_id)}/messages", node)

    def end_turn(self, session_id: str, idempotency_key: str | None = None, **fields: Any) -> TurnOutcome:
        """End the open turn: one commit in the session's repository."""
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return self._request("POST", f"/api/sessions/{self._quote(session_id)}/turns", fields, headers=headers)

    def whole_turn(
        self,
        session_id: str,
        nodes: list[Node],
        idempotency_key: str | None = None,
        **fields: Any,
    ) -> TurnOutcome:
        """A whole turn in one request: its nodes (the user message first) and its end."""
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        body = {"nodes": nodes, **fields}
        return self._request("POST", f"/api/sessions/{self._quote(session_id)}/turns", body, headers=headers)

    def revert_preview(self, session_id: str, turn: int, through: int | None = None) -> dict[str, Any]:
        """What undoing turn ``turn`` (through ``through``) would change, and why it cannot be done now."""
        query = {"through": through} if through is not None else None
        return self._request("GET", f"/api/sessions/{self._quote(session_id)}/turns/{int(turn)}/revert", query=query)

    def revert_turns(self, session_id: str, turn: int, through: int | None = None) -> dict[str, Any]:
        """Undo the agent's changes of turn ``turn`` (through ``through``) in the project: one new commit."""
        query = {"through": through} if through is not None else None
        return self._request("POST", f"/api/sessions/{self._quote(session_id)}/turns/{int(turn)}/revert", query=query)

    def agent_turns(self, project_id: str, limit: int = 100) -> list[dict[str, Any]]:
        """The agent's turns in a project per session, committed and held."""
        path = f"/api/projects/{self._quote(project_id)}/agent-turns"
        return self._request("GET", path, query={"limit": limit})["sessions"]

    def apply_agent_turn(self, project_id: str, session_id: str, turn: int) -> dict[str, Any]:
        """Land a held agent turn on the project's branch."""
        path = f"/api/projects/{self._quote(project_id)}/agent-turns/{self._quote(session_id)}/{int(turn)}/apply"
        return self._request("POST", path)

    def search(self, q: str, limit: int = 20, **filters: Any) -> dict[str, Any]:
        """Full-text search (``project_id``, ``role``, ``since``, ``until``, ``archived``, ``group``)."""
        return self._request("GET", "/api/search", query={"q": q, "limit": limit, **filters})

    def export(self, session_id: str) -> bytes:
        """The session's repository as a git bundle (``git clone x.bundle``)."""
        return self._request("GET", f"/api/sessions/{self._quote(session_id)}/export", raw=True)

    # ----- the change feed -----------------------------------------------

    def changes(self, since: str | None = None, limit: int = 100, wait: float = 0) -> ChangesPage:
        """A page of the change feed after ``since`` (waiting up to ``wait`` s for one)."""
        return self._request(
            "GET",
            "/api/changes",
            query={"since": since, "limit": limit, "wait": wait},
            timeout=self.timeout + wait,
        )

    def follow_changes(self, since: str | None = None, wait: float = 30) -> Iterator[Change]:
        """Every change after ``since``, forever (each with the cursor to resume from)."""
        cursor = since
        while True:
            page = self.changes(cursor, limit=1000, wait=wait)
            yield from page["events"]
            cursor = page["next_cursor"]

    # ----- the session store of agent SDKs --------------------------------

    def store_append(self, key: StoreKey, entries: list[dict[str, Any]]) -> dict[str, Any]:
        return self._request("POST", "/api/session-store/append", {"key": key, "entries": entries})

    def store_load(self, key: StoreKey) -> list[dict[str, Any]] | None:
        return self._request("POST", "/api/session-store/load", {"key": key})["entries"]

    def store_sessions(self, project_key: str) -> list[StoredSession]:
        return self._request("GET", "/api/session-store/sessions", query={"project_key": project_key})["sessions"]

    def store_subkeys(self, project_key: str, session_id: str) -> list[str]:
        return self._request(
            "GET",
            "/api/session-store/subkeys",
            query={"project_key": project_key, "session_id": session_id},
        )["subkeys"]

    def store_delete(self, key: StoreKey) -> None:
        self._request("POST", "/api/session-store/delete", {"key": key})
