//! Fake secrets for tests and benchmarks: realistic in shape, one of each
//! covered kind, made from a seed at run time (never real, never fixed in
//! the source, so no scanner flags this repository).

/// One fake secret.
#[derive(Debug, Clone)]
pub struct FakeSecret {
    /// A short name of the kind (`aws`, `github`, `url`…), not a rule id.
    pub kind: &'static str,
    /// The bytes that must never be stored.
    pub secret: String,
    /// The secret as a tool would print it (holds `secret`).
    pub text: String,
}

/// One fake secret of each covered kind, from `seed`.
pub fn fake_secrets(seed: u64) -> Vec<FakeSecret> {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407)
        | 1;
    let mut pick = |alphabet: &[u8], n: usize| -> String {
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                alphabet[(x % alphabet.len() as u64) as usize] as char
            })
            .collect()
    };
    let alnum = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let upper32 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let b64url = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let b64 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let whole = |kind, secret: String| FakeSecret {
        kind,
        text: secret.clone(),
        secret,
    };
    let aws = format!("AKIA{}", pick(upper32, 16));
    let github = format!("ghp_{}", pick(alnum, 36));
    let slack = format!(
        "xoxb-{}-{}-{}",
        pick(b"0123456789", 12),
        pick(b"0123456789", 13),
        pick(alnum, 24)
    );
    let stripe = format!("sk_live_{}", pick(alnum, 24));
    let jwt = format!(
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIx{}.{}",
        pick(b64url, 30),
        pick(b64url, 43)
    );
    let pem_lines: Vec<String> = (0..6).map(|_| pick(b64, 64)).collect();
    let url_password = pick(alnum, 18);
    let sql_password = format!("{}!x9", pick(alnum, 14));
    let token = format!("{}7{}", pick(alnum, 16), pick(alnum, 15));
    vec![
        whole("aws", aws),
        whole("github", github),
        whole("slack", slack),
        whole("stripe", stripe),
        whole("jwt", jwt),
        FakeSecret {
            kind: "pem",
            secret: pem_lines[0].clone(),
            text: format!(
                "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----",
                pem_lines.join("\n")
            ),
        },
        FakeSecret {
            kind: "url",
            text: format!("postgres://admin:{url_password}@db.internal:5432/app"),
            secret: url_password,
        },
        FakeSecret {
            kind: "connection",
            text: format!("Server=tcp:sql.example.net,1433;User ID=sa;Password={sql_password};"),
            secret: sql_password,
        },
        // gitleaks' generic rule wants a digit, as real tokens have.
        FakeSecret {
            kind: "generic",
            text: format!("api_token = \"{token}\""),
            secret: token,
        },
    ]
}
