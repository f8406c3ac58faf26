//! `/api/openapi.json` describes what the server really answers: every
//! route a client can call is exercised on a real server, and each JSON
//! answer is validated against the schema the document gives for that
//! route, method and status (JSON Schema 2020-12, as OpenAPI 3.1 uses).

use serde_json::{json, Value};

use crate::helpers::TestServer;

/// The document's schema for `method path` answering `status`.
fn schema_of(doc: &Value, path: &str, method: &str, status: u16) -> Value {
    let op = &doc["paths"][path][method];
    assert!(op.is_object(), "{method} {path} is not in the document");
    let schema = &op["responses"][status.to_string()]["content"]["application/json"]["schema"];
    assert!(
        schema.is_object(),
        "{method} {path} has no JSON schema for {status}: {}",
        op["responses"]
    );
    schema.clone()
}

struct Checker {
    doc: Value,
    checked: Vec<String>,
}

impl Checker {
    /// Validate one real answer against the document.
    fn check(&mut self, path: &str, method: &str, status: u16, body: &Value) {
        let schema = schema_of(&self.doc, path, method, status);
        let root = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "components": self.doc["components"],
            "allOf": [schema],
        });
        let validator = jsonschema::Validator::new(&root)
            .unwrap_or_else(|e| panic!("{method} {path}: the schema does not compile: {e}"));
        let errors: Vec<String> = validator
            .iter_errors(body)
            .map(|e| format!("{} at {}", e, e.instance_path))
            .collect();
        assert!(
            errors.is_empty(),
            "{method} {path} {status}: the answer does not match the document:\n{}\n{body}",
            errors.join("\n")
        );
        self.checked.push(format!("{method} {path}"));
    }
}

#[test]
fn every_answer_matches_the_openapi_document() {
    let scratch = tempfile::tempdir().unwrap();
    let project = scratch.path().join("proj");
    let workdir = scratch.path().join("notes");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&workdir).unwrap();
    let s = TestServer::start();
    let (st, doc) = s.get("/api/openapi.json");
    assert_eq!(st, 200);
    assert_eq!(doc["openapi"], "3.1.0");
    // No body is left undescribed: every request and JSON answer has a schema
    // that names its fields (no bare `{}`).
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            for (status, resp) in op["responses"].as_object().unwrap() {
                if let Some(schema) = resp["content"]["application/json"]["schema"].as_object() {
                    assert!(
                        !schema.is_empty(),
                        "{method} {path} {status}: an empty schema"
                    );
                }
            }
            if let Some(body) =
                op["requestBody"]["content"]["application/json"]["schema"].as_object()
            {
                assert!(!body.is_empty(), "{method} {path}: an empty request schema");
            }
        }
    }
    let mut c = Checker {
        doc,
        checked: Vec::new(),
    };

    let (st, v) = s.get("/api/health");
    c.check("/api/health", "get", st, &v);
    let (st, v) = s.post(
        "/api/sessions",
        json!({"id": "oa", "title": "Schemas", "model": "m1"}),
    );
    c.check("/api/sessions", "post", st, &v);
    let (st, v) = s.post(
        "/api/sessions/oa/messages",
        json!({"id": "u1", "role": "user", "content": "hello"}),
    );
    c.check("/api/sessions/{id}/messages", "post", st, &v);
    let (st, v) = s.post(
        "/api/sessions/oa/messages",
        json!({"id": "a1", "role": "assistant", "content": ""}),
    );
    c.check("/api/sessions/{id}/messages", "post", st, &v);
    let (st, v) = s.post(
        "/api/sessions/oa/messages",
        json!({"id": "t1", "role": "tool", "name": "grep", "caller": "a1", "content": {"q": "x"}, "output": "none"}),
    );
    c.check("/api/sessions/{id}/messages", "post", st, &v);
    let (st, v) = s.patch(
        "/api/sessions/oa/messages/a1",
        json!({"content": "hi there"}),
    );
    c.check("/api/sessions/{id}/messages/{node_id}", "patch", st, &v);
    let (st, v) = s.post(
        "/api/sessions/oa/messages",
        json!({"role": "user", "content": "queued while running", "queue": true}),
    );
    c.check("/api/sessions/{id}/messages", "post", st, &v);
    let (st, v) = s.post(
        "/api/sessions/oa/turns",
        json!({"tokens": 12, "context": {"messages": []}, "idempotency_key": "k1"}),
    );
    c.check("/api/sessions/{id}/turns", "post", st, &v);
    let (st, v) = s.post(
        "/api/sessions/oa/messages",
        json!({"role": "assistant", "content": "second"}),
    );
    c.check("/api/sessions/{id}/messages", "post", st, &v);
    let (st, v) = s.post("/api/sessions/oa/turns", json!({}));
    c.check("/api/sessions/{id}/turns", "post", st, &v);
    let (st, v) = s.post(
        "/api/sessions/whole/turns",
        json!({"nodes": [{"role": "user", "content": "q"}, {"id": "wa", "role": "assistant", "content": "a"},
                         {"role": "tool", "name": "ls", "caller": "wa", "output": "x"}],
               "session": {"title": "Whole"}}),
    );
    assert_eq!(st, 201, "{v}");
    c.check("/api/sessions/{id}/turns", "post", st, &v);
    let (st, v) = s.post(
        "/api/sessions/oa/messages",
        json!({"id": "a1b", "role": "assistant", "predecessor": "u1", "content": "a retry"}),
    );
    c.check("/api/sessions/{id}/messages", "post", st, &v);
    let (st, v) = s.post("/api/sessions/oa/turns", json!({}));
    c.check("/api/sessions/{id}/turns", "post", st, &v);

    for (path, route) in [
        ("/api/sessions", "/api/sessions"),
        ("/api/sessions/oa", "/api/sessions/{id}"),
        ("/api/sessions/oa/messages", "/api/sessions/{id}/messages"),
        ("/api/sessions/oa/nodes", "/api/sessions/{id}/nodes"),
        ("/api/sessions/oa/commits", "/api/sessions/{id}/commits"),
        ("/api/sessions/oa/branches", "/api/sessions/{id}/branches"),
        ("/api/sessions/oa/history", "/api/sessions/{id}/history"),
        ("/api/projects", "/api/projects"),
    ] {
        let (st, v) = s.get(path);
        c.check(route, "get", st, &v);
    }
    let (st, v) = s.post("/api/sessions/oa/checkout", json!({"turn": 1}));
    c.check("/api/sessions/{id}/checkout", "post", st, &v);
    let (st, v) = s.post("/api/sessions/oa/switch", json!({"branch": "main"}));
    c.check("/api/sessions/{id}/switch", "post", st, &v);
    let (st, v) = s.post(
        "/api/chat/checkout",
        json!({"session_id": "oa", "msg_id": "a1b"}),
    );
    c.check("/api/chat/checkout", "post", st, &v);
    let (st, v) = s.patch("/api/sessions/oa", json!({"pinned": true, "group": "work"}));
    c.check("/api/sessions/{id}", "patch", st, &v);
    let (st, v) = s.post("/api/sessions/archive", json!({"session_id": "oa"}));
    c.check("/api/sessions/archive", "post", st, &v);
    let (st, v) = s.post("/api/sessions/unarchive", json!({"session_id": "oa"}));
    c.check("/api/sessions/unarchive", "post", st, &v);
    let (st, v) = s.post("/api/sessions/oa/working_dirs", json!({"path": workdir}));
    c.check("/api/sessions/{id}/working_dirs", "post", st, &v);
    let enc: String = workdir
        .to_str()
        .unwrap()
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    let (st, v) = s.raw_delete(&format!("/api/sessions/oa/working_dirs?path={enc}"));
    c.check("/api/sessions/{id}/working_dirs", "delete", st, &v);
    let (st, v) = s.post("/api/sessions/oa/fork", json!({"node_id": "a1"}));
    c.check("/api/sessions/{id}/fork", "post", st, &v);
    let (st, _, bundle) = s.get_bytes("/api/sessions/oa/export");
    assert_eq!(st, 200);
    s.raw_delete("/api/sessions/oa");
    let (st, v) = s.post_raw("/api/sessions/import", "application/x-git-bundle", &bundle);
    c.check("/api/sessions/import", "post", st, &v);
    let (st, v) = s.raw_delete("/api/sessions/oa");
    c.check("/api/sessions/{id}", "delete", st, &v);

    let (st, v) = s.post("/api/projects", json!({"path": project, "name": "Proj"}));
    c.check("/api/projects", "post", st, &v);
    let pid = v["id"].as_str().unwrap().to_string();
    let (st, v) = s.put("/api/sessions/pb/project", json!({"project_id": pid}));
    assert_eq!(st, 404, "{v}");
    c.check("/api/sessions/{id}/project", "put", st, &v);
    s.post("/api/sessions", json!({"id": "pb"}));
    let (st, v) = s.put("/api/sessions/pb/project", json!({"project_id": pid}));
    c.check("/api/sessions/{id}/project", "put", st, &v);
    s.append("pb", json!({"role": "user", "content": "work"}));
    s.append("pb", json!({"role": "assistant", "content": "done"}));
    s.end_turn("pb", json!({}));
    let (st, v) = s.get(&format!("/api/projects/{pid}"));
    c.check("/api/projects/{id}", "get", st, &v);
    let (st, v) = s.get(&format!("/api/projects/{pid}/commits"));
    c.check("/api/projects/{id}/commits", "get", st, &v);
    // Undo: a turn's files previewed and reverted; a held turn applied.
    s.append("pb", json!({"role": "user", "content": "write u"}));
    std::fs::write(project.join("u.txt"), "u\n").unwrap();
    s.end_turn("pb", json!({}));
    let (st, v) = s.get("/api/sessions/pb/turns/2/revert");
    c.check("/api/sessions/{id}/turns/{n}/revert", "get", st, &v);
    let (st, v) = s.post("/api/sessions/pb/turns/2/revert", json!({}));
    assert_eq!(st, 201, "{v}");
    c.check("/api/sessions/{id}/turns/{n}/revert", "post", st, &v);
    let (st, v) = s.post("/api/sessions/pb/turns/2/revert", json!({}));
    assert_eq!(st, 409, "{v}");
    c.check("/api/sessions/{id}/turns/{n}/revert", "post", st, &v);
    std::fs::write(project.join("dirty.txt"), "user\n").unwrap();
    s.append("pb", json!({"role": "user", "content": "write h"}));
    std::fs::write(project.join("h.txt"), "h\n").unwrap();
    s.end_turn("pb", json!({}));
    let (st, v) = s.get(&format!("/api/projects/{pid}/agent-turns"));
    c.check("/api/projects/{id}/agent-turns", "get", st, &v);
    std::fs::remove_file(project.join("dirty.txt")).unwrap();
    std::fs::remove_file(project.join("h.txt")).unwrap();
    let (st, v) = s.post(
        &format!("/api/projects/{pid}/agent-turns/pb/3/apply"),
        json!({}),
    );
    assert_eq!(st, 201, "{v}");
    c.check(
        "/api/projects/{id}/agent-turns/{session}/{turn}/apply",
        "post",
        st,
        &v,
    );
    let moved = scratch.path().join("proj-moved");
    std::fs::rename(&project, &moved).unwrap();
    let (st, v) = s.post(
        &format!("/api/projects/{pid}/relocate"),
        json!({"path": moved}),
    );
    c.check("/api/projects/{id}/relocate", "post", st, &v);
    let (st, v) = s.post("/api/sessions/pb/title/regenerate", json!({}));
    c.check("/api/sessions/{id}/title/regenerate", "post", st, &v);

    let (st, v) = s.post(
        "/api/channels/telegram/messages",
        json!({"account_id": "bot1", "peer_id": "42", "peer_display": "Ada", "text": "hi from telegram"}),
    );
    c.check("/api/channels/{channel}/messages", "post", st, &v);
    // The indexer runs beside the writes: wait until the hit is there.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let (st, v) = loop {
        let (st, v) = s.get("/api/search?q=work");
        if v["total"].as_u64().unwrap_or(0) > 0 || std::time::Instant::now() > deadline {
            break (st, v);
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert!(v["total"].as_u64().unwrap_or(0) > 0, "{v}");
    c.check("/api/search", "get", st, &v);
    let (st, v) = s.get("/api/search?q=work&group=session");
    assert!(v["total"].as_u64().unwrap_or(0) > 0, "{v}");
    c.check("/api/search", "get", st, &v);
    let (st, v) = s.get("/api/search?q=((((");
    c.check("/api/search", "get", st, &v);
    let (st, v) = s.post("/api/search/reindex", json!({}));
    c.check("/api/search/reindex", "post", st, &v);
    let empty = tempfile::tempdir().unwrap();
    std::fs::write(empty.path().join("x.jsonl"), "not json\n").unwrap();
    let (st, v) = s.post(
        "/api/imports",
        json!({"tool": "claude-code", "paths": [empty.path()], "projects": false}),
    );
    c.check("/api/imports", "post", st, &v);
    let (st, v) = s.post("/api/imports", json!({"tool": "nope"}));
    c.check("/api/imports", "post", st, &v);
    let (st, v) = s.get("/api/imports");
    c.check("/api/imports", "get", st, &v);
    let (st, v) = s.post(
        "/api/imports/watch",
        json!({"tool": "codex", "paths": [empty.path()]}),
    );
    c.check("/api/imports/watch", "post", st, &v);
    let (st, v) = s.post("/api/imports/watch", json!({"tool": "nope"}));
    c.check("/api/imports/watch", "post", st, &v);
    let (st, v) = s.post(
        "/api/provenance/resolve",
        json!({"pointers": [{"session_id": "nobody", "node_ids": ["x"]}]}),
    );
    c.check("/api/provenance/resolve", "post", st, &v);
    let (st, v) = s.post("/api/provenance/resolve", json!({"pointers": 1}));
    c.check("/api/provenance/resolve", "post", st, &v);
    let (st, v) = s.raw_delete(&format!("/api/projects/{pid}"));
    c.check("/api/projects/{id}", "delete", st, &v);

    // Stopping a run: one open turn, then nothing to stop.
    s.append("oa-stop", json!({"role": "user", "content": "long job"}));
    let (st, v) = s.post("/api/sessions/oa-stop/runs/stop", json!({}));
    c.check("/api/sessions/{id}/runs/stop", "post", st, &v);
    let (st, v) = s.post("/api/sessions/oa-stop/runs/stop", json!({}));
    c.check("/api/sessions/{id}/runs/stop", "post", st, &v);

    // The change feed and the session store of agent SDKs.
    let (st, v) = s.get("/api/changes?limit=5");
    c.check("/api/changes", "get", st, &v);
    let (st, v) = s.get("/api/replication");
    assert_eq!((st, &v["remotes"]), (200, &json!([])));
    c.check("/api/replication", "get", st, &v);
    let (st, v) = s.post("/api/replication/push", json!({}));
    assert_eq!(v["code"], "unknown_remote");
    c.check("/api/replication/push", "post", st, &v);
    let (st, v) = s.get("/api/secrets");
    assert_eq!(st, 200, "{v}");
    c.check("/api/secrets", "get", st, &v);
    let (st, v) = s.get("/api/changes?since=nonsense");
    c.check("/api/changes", "get", st, &v);
    let key = json!({"project_key": "oa-proj", "session_id": "oa-sess"});
    let entries = json!([{"type": "user", "uuid": "oa-u1", "message": {"role": "user", "content": "hi"}},
        {"type": "assistant", "uuid": "oa-a1", "message": {"role": "assistant", "content": [{"type": "text", "text": "hello"}], "stop_reason": "end_turn"}}]);
    let (st, v) = s.post(
        "/api/session-store/append",
        json!({"key": key, "entries": entries}),
    );
    c.check("/api/session-store/append", "post", st, &v);
    let (st, v) = s.post(
        "/api/session-store/append",
        json!({"key": key, "entries": [{"no": "type"}]}),
    );
    c.check("/api/session-store/append", "post", st, &v);
    let (st, v) = s.post("/api/session-store/load", json!({"key": key}));
    c.check("/api/session-store/load", "post", st, &v);
    let (st, v) = s.get("/api/session-store/sessions?project_key=oa-proj");
    c.check("/api/session-store/sessions", "get", st, &v);
    let (st, v) = s.get("/api/session-store/subkeys?project_key=oa-proj&session_id=oa-sess");
    c.check("/api/session-store/subkeys", "get", st, &v);
    let (st, v) = s.post("/api/session-store/delete", json!({"key": key}));
    c.check("/api/session-store/delete", "post", st, &v);

    let (st, v) = s.post("/api/sessions/pb/purge", json!({"by": "ada"}));
    c.check("/api/sessions/{id}/purge", "post", st, &v);
    let (st, v) = s.get("/api/sessions/pb/purges");
    c.check("/api/sessions/{id}/purges", "get", st, &v);
    let (st, v) = s.post("/api/purge", json!({"all": true}));
    c.check("/api/purge", "post", st, &v);
    let (st, v) = s.post("/api/purge", json!({}));
    c.check("/api/purge", "post", st, &v);

    // Errors have their schema too.
    let (st, v) = s.get("/api/sessions/nope");
    c.check("/api/sessions/{id}", "get", st, &v);
    let (st, v) = s.post(
        "/api/sessions/oa/checkout",
        json!({"turn": 1, "step": "prev"}),
    );
    c.check("/api/sessions/{id}/checkout", "post", st, &v);

    let operations: usize = c.doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .map(|i| i.as_object().unwrap().len())
        .sum();
    let mut seen = c.checked.clone();
    seen.sort();
    seen.dedup();
    // Every JSON operation but the document itself, the export (a bundle),
    // the change feed's stream (server-sent events) and the metrics (text)
    // was answered and checked.
    assert_eq!(seen.len(), operations - 4, "{seen:?}");
}

/// A Python client generated from the document (`openapi-python-client`,
/// as a user would make one) exports a session as a bundle (bytes, not an
/// array of numbers), imports it back, and reads it with typed models.
#[test]
fn a_client_generated_from_the_document_exports_imports_and_reads_typed_models() {
    let Some(python) = crate::helpers::sdk_python() else {
        return;
    };
    let s = TestServer::start();
    s.turn("gen1", "a question for the client", "an answer", &[]);
    let tmp = tempfile::tempdir().unwrap();
    let doc: Value = ureq::get(&format!("{}/api/openapi.json", s.url))
        .call()
        .unwrap()
        .into_json()
        .unwrap();
    let doc_path = tmp.path().join("openapi.json");
    std::fs::write(&doc_path, doc.to_string()).unwrap();
    let out = std::process::Command::new(&python)
        .args([
            "-m",
            "openapi_python_client",
            "generate",
            "--meta",
            "none",
            "--path",
        ])
        .arg(&doc_path)
        .arg("--output-path")
        .arg(tmp.path().join("opclient"))
        .output()
        .expect("python");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "generation failed:\n{said}");
    assert!(
        !said.contains("Endpoint will not be generated"),
        "every route is generated:\n{said}"
    );
    let script = r##"
import io, json, sys
sys.path.insert(0, sys.argv[1])
from opclient import Client
from opclient.api.transfer import export, import_
from opclient.api.sessions import get
from opclient.models import SessionMeta
from opclient.types import File
c = Client(base_url=sys.argv[2], raise_on_unexpected_status=True)
bundle = export.sync("gen1", client=c)
data = bundle.payload.read()
assert data.startswith(b"# v2 git bundle"), data[:40]
made = import_.sync(client=c, body=File(payload=io.BytesIO(data), mime_type="application/octet-stream"))
assert isinstance(made, SessionMeta), made
again = get.sync(made.id, client=c)
assert type(again).__name__ == "SessionAnswer", again
print(json.dumps({"id": made.id, "title": again.title, "turns": again.turn_count, "bytes": len(data)}))
"##;
    let out = std::process::Command::new(&python)
        .arg("-c")
        .arg(script)
        .arg(tmp.path())
        .arg(&s.url)
        .output()
        .expect("python");
    assert!(
        out.status.success(),
        "the generated client failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_ne!(v["id"], "gen1", "a new id: the original is still there");
    assert_eq!(v["turns"], 1, "{v}");
    let (st, _) = s.get(&format!("/api/sessions/{}", v["id"].as_str().unwrap()));
    assert_eq!(st, 200);
}
