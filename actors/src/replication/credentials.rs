//! Credentials for a remote, from the usual places: for http(s), the
//! remote's token (`token`, or the variable named by `token_env`) or
//! else git's credential helpers; for ssh, the ssh agent, then the
//! default keys in `~/.ssh`. Each way is tried once, so a wrong secret
//! is an error, never a loop.

use std::path::PathBuf;

use git2::{Cred, CredentialType, RemoteCallbacks};

use super::remote::RemoteConfig;

/// Callbacks answering libgit2's credential requests for `remote`.
pub fn callbacks(remote: &RemoteConfig) -> RemoteCallbacks<'static> {
    if remote
        .url
        .get(..6)
        .is_some_and(|s| s.eq_ignore_ascii_case("https:"))
    {
        super::transport::trust_system_certificates();
    }
    let secret = remote.secret();
    let username = (!remote.username.is_empty()).then(|| remote.username.clone());
    let mut tried_plain = false;
    let mut tried_helper = false;
    let mut ssh_keys = ssh_key_files();
    let mut tried_agent = false;
    let mut cbs = RemoteCallbacks::new();
    cbs.credentials(move |url, from_url, allowed| {
        let user = username
            .clone()
            .or_else(|| from_url.map(str::to_owned))
            .unwrap_or_else(|| "git".to_string());
        if allowed.contains(CredentialType::USERNAME) {
            return Cred::username(&user);
        }
        if allowed.contains(CredentialType::USER_PASS_PLAINTEXT) {
            if let (Some(secret), false) = (&secret, tried_plain) {
                tried_plain = true;
                return Cred::userpass_plaintext(&user, secret);
            }
            if !tried_helper && secret.is_none() {
                tried_helper = true;
                if let Ok(config) = git2::Config::open_default() {
                    if let Ok(c) = Cred::credential_helper(&config, url, from_url) {
                        return Ok(c);
                    }
                }
            }
        }
        if allowed.contains(CredentialType::SSH_KEY) {
            if !tried_agent {
                tried_agent = true;
                if let Ok(c) = Cred::ssh_key_from_agent(&user) {
                    return Ok(c);
                }
            }
            if let Some(key) = ssh_keys.pop() {
                return Cred::ssh_key(&user, None, &key, None);
            }
        }
        Err(git2::Error::new(
            git2::ErrorCode::Auth,
            git2::ErrorClass::Net,
            "the remote refused the credentials (or none was configured)",
        ))
    });
    cbs
}

/// `~/.ssh/id_ed25519`, `id_ecdsa`, `id_rsa` that exist (tried last first).
fn ssh_key_files() -> Vec<PathBuf> {
    let Some(home) = std::env::var_os("HOME") else {
        return Vec::new();
    };
    let dir = PathBuf::from(home).join(".ssh");
    let mut keys: Vec<PathBuf> = ["id_rsa", "id_ecdsa", "id_ed25519"]
        .iter()
        .map(|k| dir.join(k))
        .filter(|p| p.is_file())
        .collect();
    keys.dedup();
    keys
}
