//! The registry actor in process: what each kind of change does to the
//! list and to the files (`index.json` and its journal), read back as
//! startup reads them.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use actix::prelude::*;

use super::actor::{Flush, List, SessionRegistry};
use super::startup::listing;
use super::writer::Writer;
use super::ListQuery;
use crate::messages::{ChangeKind, SessionChanged};
use crate::meta::SessionMeta;
use crate::store::Store;

fn change(id: &str, title: &str, at: f64, kind: ChangeKind) -> SessionChanged {
    let mut meta = SessionMeta::new(id.into(), at);
    meta.title = title.into();
    meta.updated_at = at;
    SessionChanged {
        meta,
        dir: std::path::PathBuf::from(format!("/nowhere/{id}")),
        preview: Some(format!("preview of {id}")),
        first_preview: None,
        kind,
    }
}

/// The rows on disk (snapshot and journal), by id and title.
fn on_disk(store: &Store) -> HashMap<String, String> {
    listing(store)
        .index
        .map(|s| {
            s.rows
                .into_values()
                .map(|r| (r.id.clone(), r.title.clone()))
                .collect()
        })
        .unwrap_or_default()
}

async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        actix_rt::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn titles(reg: &Addr<SessionRegistry>) -> Vec<String> {
    let page = reg.send(List(ListQuery::everything(None))).await.unwrap();
    page.sessions.into_iter().map(|r| r.title.clone()).collect()
}

fn start(dir: &Path, debounce: Duration) -> (Store, Addr<SessionRegistry>) {
    let store = Store::without_log(&dir.join("sessions"));
    std::fs::create_dir_all(store.sessions_dir()).unwrap();
    // An empty snapshot, as startup leaves one.
    crate::fsio::atomic_write_json(
        &store.session_list_file(),
        &super::writer::SessionListFile {
            version: 1,
            written_at: 0.0,
            seq: 0,
            sessions: Vec::new(),
        },
    )
    .unwrap();
    let writer = Writer::spawn(store.session_list_file()).unwrap();
    let reg = SessionRegistry::new(HashMap::new(), writer, debounce, 0).start();
    (store, reg)
}

#[actix_rt::test]
async fn changes_are_listed_at_once_and_written_as_their_kind_says() {
    let dir = tempfile::tempdir().unwrap();
    // A debounce longer than the test: a debounced change is never
    // written on its own here.
    let (store, reg) = start(dir.path(), Duration::from_secs(3600));
    reg.send(change("a", "Alpha", 1.0, ChangeKind::Created))
        .await
        .unwrap();
    reg.send(change("b", "Beta", 2.0, ChangeKind::Created))
        .await
        .unwrap();
    // Listed newest first, at once.
    assert_eq!(titles(&reg).await, ["Beta", "Alpha"]);
    // A creation is written through (journaled) without waiting.
    wait_for("the creations on disk", || on_disk(&store).len() == 2).await;

    // An append only moves the row; its write waits for the debounce.
    reg.send(change("a", "Alpha 2", 3.0, ChangeKind::Appended))
        .await
        .unwrap();
    assert_eq!(titles(&reg).await, ["Alpha 2", "Beta"]);
    actix_rt::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(on_disk(&store)["a"], "Alpha", "not written yet");
    // A flush writes everything (the graceful shutdown's step).
    reg.send(Flush).await.unwrap();
    assert_eq!(on_disk(&store)["a"], "Alpha 2");

    // An update is written through; a deletion too.
    reg.send(change("b", "Beta 2", 4.0, ChangeKind::Updated))
        .await
        .unwrap();
    wait_for("the update on disk", || {
        on_disk(&store).get("b").map(String::as_str) == Some("Beta 2")
    })
    .await;
    reg.send(change("a", "", 5.0, ChangeKind::Deleted))
        .await
        .unwrap();
    assert_eq!(titles(&reg).await, ["Beta 2"]);
    wait_for("the deletion on disk", || {
        !on_disk(&store).contains_key("a")
    })
    .await;
}

#[actix_rt::test]
async fn a_debounced_change_is_written_once_the_debounce_is_over() {
    let dir = tempfile::tempdir().unwrap();
    let (store, reg) = start(dir.path(), Duration::from_millis(50));
    reg.send(change("a", "Alpha", 1.0, ChangeKind::Created))
        .await
        .unwrap();
    wait_for("the creation on disk", || on_disk(&store).len() == 1).await;
    for i in 0..20 {
        let title = format!("Alpha {i}");
        reg.send(change(
            "a",
            &title,
            2.0 + f64::from(i),
            ChangeKind::Appended,
        ))
        .await
        .unwrap();
    }
    wait_for("the last append on disk", || {
        on_disk(&store).get("a").map(String::as_str) == Some("Alpha 19")
    })
    .await;
}

#[actix_rt::test]
async fn a_page_as_bytes_is_the_serialized_page_and_follows_renamed_projects() {
    use crate::messages::{ProjectNames, SetProjectNames};
    let dir = tempfile::tempdir().unwrap();
    let (_store, reg) = start(dir.path(), Duration::from_secs(5));
    for (id, title, at) in [("a", "Alpha \"quoted\" ☃", 1.0), ("b", "Beta\nline", 2.0)] {
        reg.send(change(id, title, at, ChangeKind::Created))
            .await
            .unwrap();
    }
    // What serializing the page's client rows gives, field order kept.
    #[derive(serde::Serialize)]
    struct Whole<'a> {
        total: usize,
        sessions: Vec<super::row::ClientRow<'a>>,
    }
    let expected = |page: &super::actor::Page| {
        serde_json::to_vec(&Whole {
            total: page.total,
            sessions: page.client_rows(),
        })
        .unwrap()
    };
    let names = |default: &str| {
        SetProjectNames(ProjectNames {
            names: HashMap::new(),
            default_name: default.to_string(),
        })
    };
    reg.send(names("home")).await.unwrap();
    let page = reg.send(List(ListQuery::default())).await.unwrap();
    assert_eq!(page.client_json(), expected(&page));
    // Served again from the rows' kept bytes: the same.
    let again = reg.send(List(ListQuery::default())).await.unwrap();
    assert_eq!(again.client_json(), expected(&page));
    // The project renamed: the kept bytes are not used.
    reg.send(names("renamed")).await.unwrap();
    let renamed = reg.send(List(ListQuery::default())).await.unwrap();
    let bytes = renamed.client_json();
    assert_eq!(bytes, expected(&renamed));
    assert!(String::from_utf8(bytes)
        .unwrap()
        .contains("\"project\":\"renamed\""));
}
