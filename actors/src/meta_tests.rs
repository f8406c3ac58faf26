use super::*;

fn read(body: &str) -> std::io::Result<SessionMeta> {
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("s1");
    std::fs::create_dir(&session).unwrap();
    let path = session.join("meta.json");
    std::fs::write(&path, body).unwrap();
    SessionMeta::read_lenient(&path)
}

#[test]
fn what_parses_is_a_session_whatever_its_fields_say() {
    let m = read(r#"{"id":"s1","title":null,"status":"interrupted","created_at":5.0,"head_id":"n3","branches":{"a":1}}"#).unwrap();
    assert_eq!((m.title.as_str(), m.status), ("", Status::Idle));
    assert_eq!(
        m.extra.get("original_status"),
        Some(&Value::from("interrupted"))
    );
    assert_eq!(
        m.extra.get("head_id"),
        Some(&Value::from("n3")),
        "unknown keys kept"
    );
    assert!(m.extra.contains_key("branches"));
    assert_eq!(m.updated_at, 5.0, "updated_at falls back to created_at");
    let m = read(r#"{"title":"no dates or id"}"#).unwrap();
    assert_eq!(m.id, "s1");
    assert!(m.created_at > 1.0e9, "the file's mtime");
    let m = read(r#"{"id":"s1","created_at":1.0,"title":42,"pinned":"yes","status":"cancelled"}"#)
        .unwrap();
    assert_eq!(
        (m.title.as_str(), m.pinned, m.status),
        ("", false, Status::Idle)
    );
    assert!(read("[1,2]").is_err() && read("{not json").is_err());
}
