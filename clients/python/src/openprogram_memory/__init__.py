"""Client for openprogram-memory.

- :class:`Client`: a small typed client of the REST API (sessions, turns,
  search, export, the change feed, the session store).
- :class:`OpenProgramSessionStore`: a ``SessionStore`` for the Claude Agent
  SDK that keeps an application's agent transcripts in openprogram-memory,
  where they are sessions like any other (web UI, search, replay).
"""

from .client import ApiError, Client
from .session_store import OpenProgramSessionStore

__all__ = ["ApiError", "Client", "OpenProgramSessionStore"]
