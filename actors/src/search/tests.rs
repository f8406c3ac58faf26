//! The indexer thread in process, on real session repositories: the
//! catch-up of a start, a later turn indexed once, a forgotten session, and
//! a restart that indexes nothing again.

use std::path::PathBuf;

use serde_json::json;

use super::indexer::Job;
use super::{Request, Search};
use crate::meta::{now, SessionMeta};
use crate::node::Role;
use crate::session::{EndTurn, NewNode, SessionCore};
use crate::store::Store;

fn node(id: &str, role: Role, text: &str) -> NewNode {
    NewNode {
        id: Some(id.into()),
        role,
        content: json!(text),
        predecessor: None,
        caller: None,
        metadata: Default::default(),
        name: None,
        output: None,
        at: None,
    }
}

fn turn(core: &mut SessionCore, n: u32, question: &str) {
    core.append(node(&format!("u{n}"), Role::User, question))
        .unwrap();
    core.append(node(
        &format!("a{n}"),
        Role::Assistant,
        &format!("answer {n}"),
    ))
    .unwrap();
    core.end_turn(EndTurn::default(), None).unwrap();
}

fn session(store: &Store, id: &str) -> SessionCore {
    let dir = store.default_session_dir(id);
    let (core, _) =
        SessionCore::create(store, &dir, SessionMeta::new(id.into(), now()), None).unwrap();
    core
}

fn find(search: &Search, q: &str) -> Vec<(String, Option<u64>, String)> {
    let req = Request {
        q: q.into(),
        limit: 50,
        ..Request::default()
    };
    let found = search.query_now(&req).unwrap();
    let mut hits: Vec<_> = found
        .hits
        .into_iter()
        .map(|h| (h.session_id, h.turn, h.role))
        .collect();
    hits.sort();
    hits
}

/// Wait until the indexer has committed what it was sent.
fn flushed(search: &Search) {
    let (tx, rx) = tokio::sync::oneshot::channel();
    search.send(Job::Flush(tx));
    rx.blocking_recv().unwrap();
}

fn listed(store: &Store) -> Vec<(String, PathBuf, String)> {
    Search::sessions_on_disk(store).unwrap()
}

#[test]
fn the_indexer_catches_up_indexes_a_new_turn_once_and_forgets_a_session() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::without_log(&dir.path().join("sessions"));
    std::fs::create_dir_all(store.sessions_dir()).unwrap();
    let mut a = session(&store, "a");
    turn(&mut a, 1, "the zephyr parser");
    let mut b = session(&store, "b");
    turn(&mut b, 1, "a zephyr in the lexer");

    // A start: every listed session's commits are indexed.
    let search = Search::open(dir.path(), listed(&store)).unwrap();
    flushed(&search);
    assert_eq!(
        find(&search, "zephyr"),
        [
            ("a".to_string(), Some(1), "user".to_string()),
            ("b".to_string(), Some(1), "user".to_string())
        ]
    );
    let hit = &search
        .query_now(&Request {
            q: "parser".into(),
            limit: 5,
            ..Request::default()
        })
        .unwrap()
        .hits[0];
    assert_eq!(hit.text, "the zephyr parser");
    assert_eq!(hit.highlights, [[11, 17]]);

    // A later turn, touched twice: its commit is indexed once.
    turn(&mut a, 2, "zephyr again");
    for _ in 0..2 {
        search.send(Job::Touch {
            id: "a".into(),
            dir: a.dir().to_path_buf(),
            title: String::new(),
        });
    }
    flushed(&search);
    assert_eq!(
        find(&search, "again"),
        [("a".to_string(), Some(2), "user".to_string())]
    );
    assert_eq!(find(&search, "zephyr").len(), 3);

    // A deleted session's documents go.
    search.send(Job::Forget("b".into()));
    flushed(&search);
    assert_eq!(find(&search, "lexer"), []);
    search.close();

    // A restart finds its tips in the index: nothing is indexed twice.
    let again = Search::open(dir.path(), listed(&store)).unwrap();
    flushed(&again);
    assert_eq!(find(&again, "again").len(), 1);
    // b's folder is still there (only its documents were forgotten): a
    // start indexes it again.
    assert_eq!(
        find(&again, "lexer"),
        [("b".to_string(), Some(1), "user".to_string())]
    );
    assert_eq!(find(&again, "zephyr").len(), 3);
}
