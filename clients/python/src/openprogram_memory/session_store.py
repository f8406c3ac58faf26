"""A ``SessionStore`` for the Claude Agent SDK backed by openprogram-memory.

Pass it as ``ClaudeAgentOptions(session_store=OpenProgramSessionStore())``:
the SDK mirrors each transcript to the server, which keeps it as a session
(one node per entry, one commit per turn) that the web UI, search and
replay show like any other, and resumes from it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from .client import Client, StoreKey

# The server takes request bodies up to 1 MiB by default: a larger batch is
# sent in several appends, in order.
MAX_REQUEST_BYTES = 768 * 1024
MAX_REQUEST_ENTRIES = 1000


def _key(key: Any, namespace: str | None) -> StoreKey:
    project = key["project_key"]
    if namespace:
        project = f"{namespace}/{project}"
    out: StoreKey = {"project_key": project, "session_id": key["session_id"]}
    if key.get("subpath"):
        out["subpath"] = key["subpath"]
    return out


def _chunks(entries: list[Any]) -> list[list[Any]]:
    chunks: list[list[Any]] = []
    current: list[Any] = []
    size = 0
    for e in entries:
        n = len(json.dumps(e))
        if current and (size + n > MAX_REQUEST_BYTES or len(current) >= MAX_REQUEST_ENTRIES):
            chunks.append(current)
            current, size = [], 0
        current.append(e)
        size += n
    if current:
        chunks.append(current)
    return chunks


class OpenProgramSessionStore:
    """The SDK's ``SessionStore`` protocol (``append``, ``load``, and the
    optional ``list_sessions``, ``delete``, ``list_subkeys``) over the
    server's ``/api/session-store`` calls.

    ``namespace`` prefixes every project key (tenants, or a test's own
    space); ``client`` is a :class:`Client` (by default from the
    environment: ``OPENPROGRAM_URL``, ``OPENPROGRAM_TOKEN``).
    """

    def __init__(self, client: Client | None = None, namespace: str | None = None) -> None:
        self.client = client or Client()
        self.namespace = namespace
        # Appends of one process are stored in call order.
        self._order = asyncio.Lock()

    async def append(self, key: Any, entries: list[Any]) -> None:
        if not entries:
            return
        k = _key(key, self.namespace)
        async with self._order:
            for chunk in _chunks(entries):
                await asyncio.to_thread(self.client.store_append, k, chunk)

    async def load(self, key: Any) -> list[Any] | None:
        return await asyncio.to_thread(self.client.store_load, _key(key, self.namespace))

    async def list_sessions(self, project_key: str) -> list[Any]:
        k = _key({"project_key": project_key, "session_id": "-"}, self.namespace)
        rows = await asyncio.to_thread(self.client.store_sessions, k["project_key"])
        return [{"session_id": r["session_id"], "mtime": int(r["mtime"])} for r in rows]

    async def delete(self, key: Any) -> None:
        await asyncio.to_thread(self.client.store_delete, _key(key, self.namespace))

    async def list_subkeys(self, key: Any) -> list[str]:
        k = _key(key, self.namespace)
        return await asyncio.to_thread(self.client.store_subkeys, k["project_key"], k["session_id"])
