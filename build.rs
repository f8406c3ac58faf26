//! The commit the binary is built from, for `openprogram --version`
//! (`OPENPROGRAM_COMMIT`: `git rev-parse --short=12 HEAD`; `unknown`
//! outside a git checkout).

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=OPENPROGRAM_COMMIT={commit}");
    // Again when HEAD moves (a commit, a checkout).
    if let Some(head) = git(&["rev-parse", "--git-path", "HEAD"]) {
        println!("cargo:rerun-if-changed={head}");
    }
    if let Some(refs) = git(&["rev-parse", "--git-path", "refs/heads"]) {
        println!("cargo:rerun-if-changed={refs}");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
