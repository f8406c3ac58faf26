// The TypeScript adapter against a running server (OPENPROGRAM_URL): the
// SessionStore contracts, then a Claude Code transcript on disk (with a
// sub-agent's) copied in by the SDK's own importSessionToStore and read back
// with the SDK's readers, which must agree with its readers of the disk copy.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { Client, OpenProgramSessionStore, ApiError } from "../dist/index.js";

const client = new Client({ url: process.env.OPENPROGRAM_URL });
const fresh = () => new OpenProgramSessionStore(client, randomUUID().replaceAll("-", ""));
const e = (d) => ({ type: "x", ...d });
const KEY = { projectKey: "proj", sessionId: "sess" };

// --- the SessionStore contracts ---------------------------------------------
{
  const s = fresh();
  await s.append(KEY, [e({ uuid: "b", n: 1 }), e({ uuid: "a", n: 2 })]);
  assert.deepEqual(await s.load(KEY), [e({ uuid: "b", n: 1 }), e({ uuid: "a", n: 2 })]);
  assert.equal(await s.load({ projectKey: "proj", sessionId: "nope" }), null);
  assert.equal(await s.load({ ...KEY, subpath: "nope" }), null);
}
{
  const s = fresh();
  const calls = [
    s.append(KEY, [e({ uuid: "z", n: 1 })]),
    s.append(KEY, [e({ uuid: "a", n: 2 }), e({ uuid: "m", n: 3 })]),
    s.append(KEY, []),
    s.append(KEY, [e({ uuid: "b", n: 4 })]),
  ];
  await Promise.all(calls);
  assert.deepEqual((await s.load(KEY)).map((x) => x.n), [1, 2, 3, 4], "call order kept");
}
{
  const s = fresh();
  const sub1 = { ...KEY, subpath: "subagents/agent-1" };
  const sub2 = { ...KEY, subpath: "subagents/agent-2" };
  await s.append(KEY, [e({ n: 1 })]);
  await s.append(sub1, [e({ n: 2 })]);
  await s.append(sub2, [e({ n: 3 })]);
  await s.append({ projectKey: "other", sessionId: "sess" }, [e({ n: 4 })]);
  assert.deepEqual(await s.load(sub1), [e({ n: 2 })]);
  assert.deepEqual((await s.listSubkeys(KEY)).sort(), ["subagents/agent-1", "subagents/agent-2"]);
  const listed = await s.listSessions("proj");
  assert.deepEqual(listed.map((r) => r.sessionId), ["sess"]);
  assert.ok(listed[0].mtime > 1e12 && Number.isInteger(listed[0].mtime));
  assert.deepEqual(await s.listSessions("never"), []);
  await s.delete(sub1);
  assert.equal(await s.load(sub1), null);
  assert.deepEqual(await s.listSubkeys(KEY), ["subagents/agent-2"]);
  await s.delete(KEY);
  assert.equal(await s.load(KEY), null);
  assert.equal(await s.load(sub2), null);
  assert.deepEqual(await s.load({ projectKey: "other", sessionId: "sess" }), [e({ n: 4 })]);
  await s.delete({ projectKey: "proj", sessionId: "never-written" });
}
{
  // A bad entry is refused with the server's error code, and nothing is stored.
  const s = fresh();
  await assert.rejects(s.append(KEY, [e({ n: 1 }), { no_type: true }]), (err) => err instanceof ApiError && err.code === "invalid_input");
  assert.equal(await s.load(KEY), null);
}

// --- the SDK's import and readers -------------------------------------------
const sdk = await import("@anthropic-ai/claude-agent-sdk");
const tmp = mkdtempSync(join(tmpdir(), "op-ts-"));
const cwd = join(realpathSync(tmp), "app");
mkdirSync(cwd);
process.env.CLAUDE_CONFIG_DIR = join(tmp, "claude");
const projectKey = cwd.replace(/[^a-zA-Z0-9]/g, "-");
const project = join(tmp, "claude", "projects", projectKey);
const sid = randomUUID();
const ids = Array.from({ length: 6 }, () => randomUUID());
const rec = (type, uuid, parentUuid, body, second) => ({
  type, uuid, parentUuid, sessionId: sid, cwd, isSidechain: false, userType: "external", version: "2.1.0",
  timestamp: `2026-01-05T10:00:${String(second).padStart(2, "0")}.000Z`, ...body,
});
const answer = (id, content, stop) => ({ message: { id, type: "message", role: "assistant", model: "claude-sonnet-4-5", content, stop_reason: stop, usage: { input_tokens: 9, output_tokens: 2 } } });
const lines = [
  rec("user", ids[0], null, { message: { role: "user", content: "Why does the build fail?" } }, 0),
  rec("assistant", ids[1], ids[0], answer("m1", [{ type: "tool_use", id: "toolu_1", name: "Bash", input: { command: "cargo build" } }], "tool_use"), 1),
  rec("user", ids[2], ids[1], { message: { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "error[E0425]" }] } }, 2),
  rec("assistant", ids[3], ids[2], answer("m2", [{ type: "text", text: "`x` is never declared." }], "end_turn"), 3),
  { type: "custom-title", customTitle: "The build", sessionId: sid },
  rec("user", ids[4], ids[3], { message: { role: "user", content: "Declare it" } }, 10),
  rec("assistant", ids[5], ids[4], answer("m3", [{ type: "text", text: "Done." }], "end_turn"), 11),
];
const subLines = [
  { type: "user", uuid: randomUUID(), parentUuid: null, sessionId: sid, isSidechain: true, agentId: "a1", cwd, timestamp: "2026-01-05T10:00:04.000Z", message: { role: "user", content: "Find x" } },
];
subLines.push({ ...subLines[0], type: "assistant", uuid: randomUUID(), parentUuid: subLines[0].uuid, message: { id: "ms", role: "assistant", content: [{ type: "text", text: "src/main.rs:3" }], stop_reason: "end_turn" } });
mkdirSync(join(project, sid, "subagents"), { recursive: true });
writeFileSync(join(project, `${sid}.jsonl`), lines.map((l) => JSON.stringify(l) + "\n").join(""));
writeFileSync(join(project, sid, "subagents", "agent-a1.jsonl"), subLines.map((l) => JSON.stringify(l) + "\n").join(""));

const store = fresh();
await sdk.importSessionToStore(sid, store, { dir: cwd });
const key = { projectKey, sessionId: sid };
assert.deepEqual(await store.load(key), lines, "load gives back every line as written");
assert.deepEqual(await store.load({ ...key, subpath: "subagents/agent-a1" }), subLines);
const disk = await sdk.getSessionMessages(sid, { dir: cwd });
const stored = await sdk.getSessionMessages(sid, { dir: cwd, sessionStore: store });
assert.ok(disk.length >= 4);
assert.deepEqual(stored, disk);
const info = await sdk.getSessionInfo(sid, { dir: cwd, sessionStore: store });
assert.equal(info?.customTitle, "The build");
assert.deepEqual(await sdk.listSubagents(sid, { dir: cwd, sessionStore: store }), await sdk.listSubagents(sid, { dir: cwd }));
const subDisk = await sdk.getSubagentMessages(sid, "a1", { dir: cwd });
const subStored = await sdk.getSubagentMessages(sid, "a1", { dir: cwd, sessionStore: store });
assert.ok(subDisk.length > 0);
assert.deepEqual(subStored, subDisk);

// On the server: a session with a commit per turn.
const [row] = await client.storeSessions(`${store.namespace}/${projectKey}`);
const meta = await client.session(row.id);
assert.equal(meta.turn_count, 2);
assert.equal(meta.source, "claude-agent-sdk");

// The REST client's own calls.
const id = `ts-${randomUUID().slice(0, 8)}`;
const start = (await client.changes("latest")).next_cursor;
await client.append(id, { role: "user", content: "Where is the parser?" });
const reply = await client.append(id, { role: "assistant", content: "In src/parse.rs, quokka." });
await client.append(id, { role: "tool", name: "grep", caller: reply.node.id, content: "fn parse" });
const one = await client.endTurn(id, {}, `${id}-1`);
assert.equal(one.turn, 1);
assert.equal((await client.endTurn(id, {}, `${id}-1`)).commit, one.commit);
const two = await client.wholeTurn(id, [{ role: "user", content: "And the lexer?" }, { role: "assistant", content: "src/lex.rs" }]);
assert.equal(two.turn, 2);
const page = await client.changes(start, 100, 5);
const commits = page.events.filter((c) => c.event.session_id === id).map((c) => c.event.commit);
assert.ok(commits.includes(one.commit) && commits.includes(two.commit));
const bundle = await client.export(id);
assert.equal(new TextDecoder().decode(bundle.slice(0, 15)), "# v2 git bundle");
let found = 0;
for (let i = 0; i < 100 && !found; i++) {
  found = (await client.search("quokka")).total ?? 0;
  if (!found) await new Promise((r) => setTimeout(r, 100));
}
assert.ok(found >= 1, "found by search");
await assert.rejects(client.endTurn(id), (err) => err instanceof ApiError && err.status === 409 && err.code === "no_open_turn");
console.log("typescript session store: ok");
