//! libgit2's network transports, set up for this process: their time
//! limits, and the CA bundle loaded only when a remote is reached over
//! https.
//!
//! libgit2 built with OpenSSL loads the whole CA bundle when it starts
//! (`SSL_CTX_set_default_verify_paths`): about 60 ms of parsing on every
//! start of the server and of every command, against about 40 ms for the
//! whole rest of an empty server's start. It is started with an empty
//! bundle instead (the hashed certificate directory still answers
//! lookups), and the same bundle it would have read (`SSL_CERT_FILE`, or
//! the system's) is loaded once, before the first https connection.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Once, OnceLock};

/// A remote gets this long to accept a connection…
pub const CONNECT_TIMEOUT_MS: i32 = 10_000;
/// …and this long for each read or write after it.
pub const IO_TIMEOUT_MS: i32 = 60_000;

/// The variable OpenSSL reads its CA bundle's path from.
const CERT_FILE_VAR: &str = "SSL_CERT_FILE";

/// The bundle named by `SSL_CERT_FILE` when the process started, if any.
static USER_BUNDLE: OnceLock<Option<OsString>> = OnceLock::new();

/// Start libgit2 with an empty CA bundle and give its transports their
/// time limits.
///
/// # Safety
/// Call first thing in `main`, before any other thread exists: it sets and
/// restores `SSL_CERT_FILE` around libgit2's start (a thread reading the
/// environment meanwhile would race the write), and libgit2's global
/// options may only be set while nothing else uses libgit2.
pub unsafe fn init() {
    let user = std::env::var_os(CERT_FILE_VAR);
    let _ = USER_BUNDLE.set(user.clone());
    std::env::set_var(CERT_FILE_VAR, "/dev/null");
    // SAFETY: the caller promises no other thread exists (see above);
    // these options only store two integers (and start libgit2, which
    // reads the variable set above).
    unsafe {
        let _ = git2::opts::set_server_connect_timeout_in_milliseconds(CONNECT_TIMEOUT_MS);
        let _ = git2::opts::set_server_timeout_in_milliseconds(IO_TIMEOUT_MS);
    }
    match user {
        Some(v) => std::env::set_var(CERT_FILE_VAR, v),
        None => std::env::remove_var(CERT_FILE_VAR),
    }
}

/// Load the CA bundle into libgit2, once, before the first https
/// connection of the process (every https connection passes here first,
/// so none is open while it loads). Without `init` (a program that does
/// not call it), libgit2 loaded the bundle at its start and this only
/// loads it again.
pub fn trust_system_certificates() {
    static LOADED: Once = Once::new();
    LOADED.call_once(|| {
        let named = USER_BUNDLE.get().cloned().flatten().map(PathBuf::from);
        let Some(file) = named.or_else(|| openssl_probe::probe().cert_file) else {
            tracing::warn!("no CA bundle found; https remotes are checked against the system's certificate directory only");
            return;
        };
        // SAFETY: inside the `Once` every https connection waits on, so no
        // TLS session uses libgit2's context while its trust store changes.
        if let Err(e) = unsafe { git2::opts::set_ssl_cert_file(&file) } {
            tracing::warn!(file = %file.display(), error = %e, "the CA bundle was not loaded");
        }
    });
}
