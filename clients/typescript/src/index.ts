/**
 * Client for openprogram-memory: a typed REST client (`Client`) and a
 * `SessionStore` for the Claude Agent SDK (`OpenProgramSessionStore`) that
 * keeps an application's agent transcripts as sessions of the service
 * (one node per entry, one commit per turn; the web UI, search and replay
 * show them like any other).
 */
import type {
  SessionKey,
  SessionStore,
  SessionStoreEntry,
} from "@anthropic-ai/claude-agent-sdk";

export type Role = "user" | "assistant" | "tool" | "system" | "code";

/** A node to write (`id` optional: the server makes one). */
export interface NodeInput {
  id?: string;
  role: Role;
  content?: unknown;
  caller?: string;
  name?: string;
  metadata?: Record<string, unknown>;
  output?: unknown;
}

export interface TurnOutcome {
  session_id: string;
  turn: number;
  commit: string;
  short_sha: string;
  project_commit?: string | null;
  repeated?: boolean;
}

/** A key of the session store, as the server names its parts. */
export interface StoreKey {
  project_key: string;
  session_id: string;
  subpath?: string;
}

export interface StoredSession {
  session_id: string;
  /** Last written, epoch milliseconds. */
  mtime: number;
  /** The server's session id. */
  id: string;
}

export interface ChangeEvent {
  kind:
    | "commit"
    | "project_commit"
    | "session_deleted"
    | "session_archived"
    | "session_unarchived";
  session_id: string;
  project_id?: string;
  branch?: string;
  turn?: number;
  commit?: string;
  session_commit?: string;
  node_ids?: string[];
  time: number;
}

export interface ChangesPage {
  events: { seq: number; cursor: string; event: ChangeEvent }[];
  next_cursor: string;
  more: boolean;
}

/** An error answer: HTTP status, machine-readable `code`, message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(`${status} ${code}: ${message}`);
  }
}

export interface ClientOptions {
  /** Default `http://127.0.0.1:8765`. */
  url?: string;
  /** The API token (needed off loopback). */
  token?: string;
}

/** A client of one openprogram-memory server. */
export class Client {
  readonly url: string;
  readonly token?: string;

  constructor(options: ClientOptions = {}) {
    this.url = (options.url ?? "http://127.0.0.1:8765").replace(/\/+$/, "");
    this.token = options.token;
  }

  private async request<T>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<T> {
    const h: Record<string, string> = { Accept: "application/json", ...headers };
    if (body !== undefined) h["Content-Type"] = "application/json";
    if (this.token) h["Authorization"] = `Bearer ${this.token}`;
    const res = await fetch(this.url + path, {
      method,
      headers: h,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) {
      let code = "error";
      let message = text;
      try {
        const err = JSON.parse(text) as { code?: string; error?: string };
        code = err.code ?? code;
        message = err.error ?? message;
      } catch {
        // not JSON: the text is the message
      }
      throw new ApiError(res.status, code, message);
    }
    return (text ? JSON.parse(text) : null) as T;
  }

  private static q(part: string): string {
    return encodeURIComponent(part);
  }

  session(id: string): Promise<Record<string, unknown>> {
    return this.request("GET", `/api/sessions/${Client.q(id)}`);
  }

  /** Append one node (a user message opens a turn). */
  append(id: string, node: NodeInput): Promise<Record<string, unknown>> {
    return this.request("POST", `/api/sessions/${Client.q(id)}/messages`, node);
  }

  /** End the open turn: one commit in the session's repository. */
  endTurn(id: string, fields: Record<string, unknown> = {}, idempotencyKey?: string): Promise<TurnOutcome> {
    const headers: Record<string, string> = idempotencyKey ? { "Idempotency-Key": idempotencyKey } : {};
    return this.request("POST", `/api/sessions/${Client.q(id)}/turns`, fields, headers);
  }

  /** A whole turn in one request: its nodes (the user message first) and its end. */
  wholeTurn(id: string, nodes: NodeInput[], fields: Record<string, unknown> = {}, idempotencyKey?: string): Promise<TurnOutcome> {
    return this.endTurn(id, { nodes, ...fields }, idempotencyKey);
  }

  /** What undoing turn `turn` (through `through`) would change, and why it cannot be done now. */
  revertPreview(id: string, turn: number, through?: number): Promise<Record<string, unknown>> {
    const q = through === undefined ? "" : `?through=${through}`;
    return this.request("GET", `/api/sessions/${Client.q(id)}/turns/${turn}/revert${q}`);
  }

  /** Undo the agent's changes of turn `turn` (through `through`) in the project: one new commit. */
  revertTurns(id: string, turn: number, through?: number): Promise<Record<string, unknown>> {
    const q = through === undefined ? "" : `?through=${through}`;
    return this.request("POST", `/api/sessions/${Client.q(id)}/turns/${turn}/revert${q}`);
  }

  /** The agent's turns in a project per session, committed and held. */
  async agentTurns(projectId: string, limit = 100): Promise<Array<Record<string, unknown>>> {
    const r = await this.request<{ sessions: Array<Record<string, unknown>> }>("GET", `/api/projects/${Client.q(projectId)}/agent-turns?limit=${limit}`);
    return r.sessions;
  }

  /** Land a held agent turn on the project's branch. */
  applyAgentTurn(projectId: string, sessionId: string, turn: number): Promise<Record<string, unknown>> {
    return this.request("POST", `/api/projects/${Client.q(projectId)}/agent-turns/${Client.q(sessionId)}/${turn}/apply`);
  }

  /** Full-text search (`project_id`, `role`, `since`, `until`, `archived`, `group`). */
  search(q: string, filters: Record<string, string | number | boolean> = {}): Promise<Record<string, unknown>> {
    const params = new URLSearchParams({ q, ...Object.fromEntries(Object.entries(filters).map(([k, v]) => [k, String(v)])) });
    return this.request("GET", `/api/search?${params}`);
  }

  /** The session's repository as a git bundle. */
  async export(id: string): Promise<Uint8Array> {
    const h: Record<string, string> = this.token ? { Authorization: `Bearer ${this.token}` } : {};
    const res = await fetch(`${this.url}/api/sessions/${Client.q(id)}/export`, { headers: h });
    if (!res.ok) throw new ApiError(res.status, "error", await res.text());
    return new Uint8Array(await res.arrayBuffer());
  }

  /** A page of the change feed after `since`, waiting up to `wait` s for one. */
  changes(since?: string, limit = 100, wait = 0): Promise<ChangesPage> {
    const params = new URLSearchParams({ limit: String(limit), wait: String(wait) });
    if (since) params.set("since", since);
    return this.request("GET", `/api/changes?${params}`);
  }

  storeAppend(key: StoreKey, entries: SessionStoreEntry[]): Promise<Record<string, unknown>> {
    return this.request("POST", "/api/session-store/append", { key, entries });
  }

  async storeLoad(key: StoreKey): Promise<SessionStoreEntry[] | null> {
    const r = await this.request<{ entries: SessionStoreEntry[] | null }>("POST", "/api/session-store/load", { key });
    return r.entries;
  }

  async storeSessions(projectKey: string): Promise<StoredSession[]> {
    const r = await this.request<{ sessions: StoredSession[] }>(
      "GET",
      `/api/session-store/sessions?${new URLSearchParams({ project_key: projectKey })}`,
    );
    return r.sessions;
  }

  async storeSubkeys(projectKey: string, sessionId: string): Promise<string[]> {
    const params = new URLSearchParams({ project_key: projectKey, session_id: sessionId });
    const r = await this.request<{ subkeys: string[] }>("GET", `/api/session-store/subkeys?${params}`);
    return r.subkeys;
  }

  async storeDelete(key: StoreKey): Promise<void> {
    await this.request("POST", "/api/session-store/delete", { key });
  }
}

/** The server takes bodies up to 1 MiB by default: larger batches go in several appends. */
const MAX_REQUEST_BYTES = 768 * 1024;
const MAX_REQUEST_ENTRIES = 1000;

function chunks(entries: SessionStoreEntry[]): SessionStoreEntry[][] {
  const out: SessionStoreEntry[][] = [];
  let current: SessionStoreEntry[] = [];
  let size = 0;
  for (const e of entries) {
    const n = JSON.stringify(e).length;
    if (current.length && (size + n > MAX_REQUEST_BYTES || current.length >= MAX_REQUEST_ENTRIES)) {
      out.push(current);
      current = [];
      size = 0;
    }
    current.push(e);
    size += n;
  }
  if (current.length) out.push(current);
  return out;
}

/**
 * The Claude Agent SDK's `SessionStore` over the server's
 * `/api/session-store` calls: `options.sessionStore = new
 * OpenProgramSessionStore(new Client({ url, token }))`. `namespace`
 * prefixes every project key (tenants, or a test's own space).
 */
export class OpenProgramSessionStore implements SessionStore {
  /** Appends of one process are stored in call order. */
  private order: Promise<unknown> = Promise.resolve();

  constructor(
    readonly client: Client = new Client(),
    readonly namespace?: string,
  ) {}

  private key(key: { projectKey: string; sessionId: string; subpath?: string }): StoreKey {
    const project_key = this.namespace ? `${this.namespace}/${key.projectKey}` : key.projectKey;
    const out: StoreKey = { project_key, session_id: key.sessionId };
    if (key.subpath) out.subpath = key.subpath;
    return out;
  }

  append(key: SessionKey, entries: SessionStoreEntry[]): Promise<void> {
    if (entries.length === 0) return Promise.resolve();
    const k = this.key(key);
    const run = this.order.then(async () => {
      for (const chunk of chunks(entries)) await this.client.storeAppend(k, chunk);
    });
    this.order = run.catch(() => undefined);
    return run;
  }

  load(key: SessionKey): Promise<SessionStoreEntry[] | null> {
    return this.client.storeLoad(this.key(key));
  }

  async listSessions(projectKey: string): Promise<Array<{ sessionId: string; mtime: number }>> {
    const rows = await this.client.storeSessions(this.key({ projectKey, sessionId: "-" }).project_key);
    return rows.map((r) => ({ sessionId: r.session_id, mtime: Math.floor(r.mtime) }));
  }

  delete(key: SessionKey): Promise<void> {
    return this.client.storeDelete(this.key(key));
  }

  listSubkeys(key: { projectKey: string; sessionId: string }): Promise<string[]> {
    const k = this.key(key);
    return this.client.storeSubkeys(k.project_key, k.session_id);
  }
}
