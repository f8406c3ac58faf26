use super::*;

/// Fake secrets of each covered kind (`super::fake`), each as a tool
/// would print it.
pub(crate) fn fake_secrets(seed: u64) -> Vec<(&'static str, String)> {
    super::fake::fake_secrets(seed)
        .into_iter()
        .map(|f| (f.kind, f.text))
        .collect()
}

fn redactor() -> Redactor {
    Redactor::with_key(&RedactionConfig::default(), vec![7; 32]).unwrap()
}

fn open(r: &Redactor) -> Policy<'_> {
    r.policy("default", None)
}

/// The part of a fake secret that must not survive (the whole of it, or
/// the password / the body for the kinds embedded in more text).
fn core(kind: &str, text: &str) -> String {
    match kind {
        "url" => text
            .split(':')
            .nth(2)
            .unwrap()
            .split('@')
            .next()
            .unwrap()
            .into(),
        "connection" => text
            .split("Password=")
            .nth(1)
            .unwrap()
            .trim_end_matches(';')
            .into(),
        "generic" => text.split('"').nth(1).unwrap().into(),
        "pem" => text.lines().nth(2).unwrap().into(),
        _ => text.into(),
    }
}

#[test]
fn every_covered_kind_is_replaced_by_a_placeholder_naming_it() {
    let r = redactor();
    for seed in 0..20 {
        for (kind, secret) in fake_secrets(seed) {
            let text = format!("the tool printed:\n{secret}\nand went on.");
            let mut out = Vec::new();
            let stored = r
                .redact_text(&open(&r), &text, "/content", &mut out)
                .unwrap()
                .unwrap_or_else(|| panic!("{kind} not found in {text}"));
            assert!(!stored.contains(&core(kind, &secret)), "{kind}: {stored}");
            assert!(stored.starts_with("the tool printed:\n"), "{stored}");
            assert!(stored.ends_with("\nand went on."), "{stored}");
            assert!(!out.is_empty());
            for red in &out {
                assert_eq!(red.field, "/content");
                assert_eq!(
                    stored.get(red.start..red.end).unwrap(),
                    format!("[REDACTED:{}]", red.kind)
                );
                assert_eq!(red.hash.len(), 32);
            }
        }
    }
}

#[test]
fn the_same_secret_has_the_same_hash_and_another_key_another() {
    let r = redactor();
    let (_, s) = fake_secrets(3).remove(1);
    let mut a = Vec::new();
    let mut b = Vec::new();
    r.redact_text(&open(&r), &format!("x {s} y"), "/a", &mut a)
        .unwrap();
    r.redact_text(&open(&r), &s, "/b", &mut b).unwrap();
    assert_eq!(a[0].hash, b[0].hash);
    let other = Redactor::with_key(&RedactionConfig::default(), vec![8; 32]).unwrap();
    assert_ne!(other.hash(&s), r.hash(&s));
    assert!(!a[0].hash.contains(s.get(4..12).unwrap()));
}

#[test]
fn ordinary_technical_text_is_left_alone() {
    let r = redactor();
    let texts = [
        "commit 3f4e2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f",
        "session 550e8400-e29b-41d4-a716-446655440000 resumed",
        "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "see https://docs.rs/regex/latest/regex/ and http://localhost:8080/api",
        "The example key AKIAIOSFODNN7EXAMPLE is in the AWS docs.",
        "let token = request.headers().get(\"authorization\");",
        "password = getpass.getpass()",
        "aGVsbG8gd29ybGQ= is base64 for hello world",
        "fn key_for(id: &str) -> String { format!(\"k-{id}\") }",
        "export API_KEY=${API_KEY}",
        "git clone git@github.com:rust-lang/regex.git",
    ];
    for t in texts {
        let mut out = Vec::new();
        let stored = r.redact_text(&open(&r), t, "/content", &mut out).unwrap();
        assert_eq!(stored, None, "{t} became {stored:?} ({out:?})");
    }
}

#[test]
fn modes_allow_lists_and_custom_rules() {
    let config = RedactionConfig {
        allow: vec!["^ghp_ALLOWED".into()],
        rules: vec![RuleSpec {
            id: "acme-ticket-key".into(),
            regex: Some(r"\bACME-[0-9A-F]{20}\b".into()),
            keywords: vec!["acme-".into()],
            ..RuleSpec::default()
        }],
        projects: vec![
            ProjectRedaction {
                project: "strict".into(),
                mode: Some(Mode::Refuse),
                allow: vec![],
            },
            ProjectRedaction {
                project: "/work/lab".into(),
                mode: Some(Mode::Off),
                allow: vec![],
            },
        ],
        ..RedactionConfig::default()
    };
    let r = Redactor::with_key(&config, vec![1; 32]).unwrap();
    let mut out = Vec::new();
    let custom = "ticket ACME-0123456789ABCDEF0123 opened";
    assert_eq!(
        r.redact_text(&r.policy("p", None), custom, "/c", &mut out)
            .unwrap()
            .as_deref(),
        Some("ticket [REDACTED:acme-ticket-key] opened")
    );
    let allowed = format!("ghp_ALLOWED{}", "a1".repeat(15));
    assert_eq!(
        r.redact_text(&r.policy("p", None), &allowed, "/c", &mut out)
            .unwrap(),
        None
    );
    let (_, secret) = fake_secrets(1).remove(0);
    match r.redact_text(&r.policy("strict", None), &secret, "/content", &mut out) {
        Err(RedactError::Refused { kind, field }) => {
            assert_eq!(field, "/content");
            assert!(kind.contains("aws"), "{kind}");
        }
        other => panic!("not refused: {other:?}"),
    }
    let off = r.policy("other", Some(Path::new("/work/lab")));
    assert_eq!(off.mode, Mode::Off);
    assert_eq!(r.redact_text(&off, &secret, "/c", &mut out).unwrap(), None);
}

#[test]
fn json_values_are_walked_with_pointers() {
    let r = redactor();
    let (_, secret) = fake_secrets(2).remove(1);
    let mut v = serde_json::json!({"stdout": format!("ok {secret}"), "args": ["a", secret.clone()], "n": 3});
    let mut out = Vec::new();
    r.redact_value(&open(&r), &mut v, "/output", &mut out)
        .unwrap();
    assert!(!v.to_string().contains(&secret));
    let fields: Vec<&str> = out.iter().map(|o| o.field.as_str()).collect();
    assert!(
        fields.contains(&"/output/stdout") && fields.contains(&"/output/args/1"),
        "{fields:?}"
    );
}

#[test]
fn the_key_is_made_once_private_and_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let a = Redactor::new(&RedactionConfig::default(), tmp.path()).unwrap();
    let b = Redactor::new(&RedactionConfig::default(), tmp.path()).unwrap();
    assert_eq!(a.hash("x"), b.hash("x"));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(tmp.path().join(KEY_FILE))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn redacted_text_has_nothing_left_to_redact() {
    let r = redactor();
    for seed in 0..20 {
        for (kind, secret) in fake_secrets(seed) {
            let text = format!("the tool printed:\n{secret}\nand went on.");
            let mut out = Vec::new();
            let once = r
                .redact_text(&open(&r), &text, "/content", &mut out)
                .unwrap()
                .unwrap_or_else(|| panic!("{kind} not found"));
            let mut again = Vec::new();
            let twice = r
                .redact_text(&open(&r), &once, "/content", &mut again)
                .unwrap();
            assert_eq!(twice, None, "{kind}: {once} -> {again:?}");
        }
    }
}
