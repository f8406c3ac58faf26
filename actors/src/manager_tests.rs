//! The session manager in process: its cache of live actors (a bounded
//! LRU whose evictions lose nothing) and the places it records.

use super::*;
use crate::meta::SessionMeta;
use crate::session::actor::{Create, Delete};
use crate::session::messages::GetMeta;

fn manager(store: &Store, cap: usize) -> Addr<SessionManager> {
    let locations = store.locations();
    let writer = LocationsWriter::spawn(locations.path().to_path_buf()).unwrap();
    SessionManager::new(store.clone(), locations, writer, cap, None, None).start()
}

async fn create(mgr: &Addr<SessionManager>, id: &str, title: &str) {
    let addr = mgr.send(Resolve { id: id.into() }).await.unwrap().unwrap();
    let mut meta = SessionMeta::new(id.into(), crate::meta::now());
    meta.title = title.into();
    addr.send(Create { meta }).await.unwrap().unwrap();
}

#[actix_rt::test]
async fn the_cache_holds_cap_actors_and_an_evicted_session_loads_again() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = Store::open_state_dir(dir.path()).unwrap();
    let mgr = manager(&store, 2);
    for (id, title) in [("a", "Alpha"), ("b", "Beta"), ("c", "Gamma")] {
        create(&mgr, id, title).await;
    }
    assert_eq!(mgr.send(LiveCount).await.unwrap(), 2);
    // `a` was evicted: a fresh actor reads it from its folder.
    let a = mgr.send(Resolve { id: "a".into() }).await.unwrap().unwrap();
    let meta = a.send(GetMeta).await.unwrap().unwrap();
    assert_eq!(meta.title, "Alpha");
    assert_eq!(mgr.send(LiveCount).await.unwrap(), 2);
    // A session nobody created answers "not found", and creates nothing.
    let none = mgr
        .send(Resolve { id: "zz".into() })
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(
        none.send(GetMeta).await.unwrap(),
        Err(SessionError::NotFound)
    ));
    assert!(!store.default_session_dir("zz").exists());
    // An id that could escape the folder is refused before any actor.
    assert!(mgr
        .send(Resolve {
            id: "../etc".into()
        })
        .await
        .unwrap()
        .is_err());
}

#[actix_rt::test]
async fn a_placed_session_lives_there_and_forgetting_it_drops_the_record() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = Store::open_state_dir(dir.path()).unwrap();
    let mgr = manager(&store, 8);
    // A project's folder (a real one: the session lives inside it).
    std::fs::create_dir(dir.path().join("project")).unwrap();
    let elsewhere = dir.path().join("project/.openprogram/sessions/p");
    let placed = mgr
        .send(Place {
            id: "p".into(),
            dir: elsewhere.clone(),
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(placed, elsewhere);
    // Recorded durably before the answer.
    assert_eq!(store.locations().get("p"), Some(elsewhere.as_path()));
    assert!(mgr.send(Elsewhere).await.unwrap().contains("p"));
    create(&mgr, "p", "In a project").await;
    assert!(elsewhere.join("meta.json").is_file());
    assert!(!store.default_session_dir("p").exists());
    // Placing it again keeps where it is.
    let again = mgr
        .send(Place {
            id: "p".into(),
            dir: dir.path().join("other"),
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(again, elsewhere);
    // Deleted, then forgotten: the record goes too.
    let addr = mgr.send(Resolve { id: "p".into() }).await.unwrap().unwrap();
    addr.send(Delete).await.unwrap().unwrap();
    mgr.send(Forget { id: "p".into() }).await.unwrap().unwrap();
    assert!(store.locations().get("p").is_none());
    assert!(!elsewhere.exists());
}
