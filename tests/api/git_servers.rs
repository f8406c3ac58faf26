//! Real git servers on loopback for the replication tests: a bare
//! repository (`file://`), `git daemon` with receive-pack, and
//! `git http-backend` behind lighttpd with basic auth. Each is started
//! by the test and stopped when dropped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::helpers::git;
pub use crate::ports::free_port;

/// A bare repository at `dir`.
pub fn bare(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q", "--bare", "-b", "main"]);
    dir.to_path_buf()
}

fn wait_listening(port: u16, child: &mut Child, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("{what} exited at start: {status}");
        }
        assert!(Instant::now() < deadline, "{what} did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `git daemon --enable=receive-pack` serving `base` on `port`.
pub struct GitDaemon {
    child: Child,
}

impl GitDaemon {
    pub fn start(base: &Path, port: u16) -> GitDaemon {
        let mut child = Command::new("git")
            .args([
                "daemon",
                "--reuseaddr",
                "--export-all",
                "--enable=receive-pack",
                "--listen=127.0.0.1",
            ])
            .arg(format!("--port={port}"))
            .arg(format!("--base-path={}", base.display()))
            .arg(base)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("git daemon");
        wait_listening(port, &mut child, "git daemon");
        GitDaemon { child }
    }
}

impl Drop for GitDaemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// lighttpd running `git http-backend` for the repositories in `base`
/// under `/git/`, behind basic auth (`user`, `password`).
pub struct HttpGit {
    child: Child,
    pub port: u16,
}

impl HttpGit {
    /// None when lighttpd is not installed (CI installs it; then
    /// `OPENPROGRAM_GIT_SERVERS_REQUIRED` makes its absence a failure).
    pub fn start(base: &Path, conf_dir: &Path, user: &str, password: &str) -> Option<HttpGit> {
        HttpGit::start_with(base, conf_dir, user, password, None)
    }

    /// The same over https with `tls` (certificate, key) as its identity.
    pub fn start_tls(
        base: &Path,
        conf_dir: &Path,
        user: &str,
        password: &str,
        tls: (&Path, &Path),
    ) -> Option<HttpGit> {
        HttpGit::start_with(base, conf_dir, user, password, Some(tls))
    }

    fn start_with(
        base: &Path,
        conf_dir: &Path,
        user: &str,
        password: &str,
        tls: Option<(&Path, &Path)>,
    ) -> Option<HttpGit> {
        let lighttpd = ["/usr/sbin/lighttpd", "/usr/bin/lighttpd"]
            .into_iter()
            .find(|p| Path::new(p).exists());
        let Some(lighttpd) = lighttpd else {
            assert!(
                std::env::var_os("OPENPROGRAM_GIT_SERVERS_REQUIRED").is_none(),
                "lighttpd is required here"
            );
            eprintln!("lighttpd is not installed: the http-backend test is skipped");
            return None;
        };
        let exec_path = String::from_utf8(
            Command::new("git")
                .arg("--exec-path")
                .output()
                .unwrap()
                .stdout,
        )
        .unwrap();
        let backend = Path::new(exec_path.trim()).join("git-http-backend");
        std::fs::create_dir_all(conf_dir).unwrap();
        let users = conf_dir.join("users");
        std::fs::write(&users, format!("{user}:{password}\n")).unwrap();
        let port = free_port();
        let conf = conf_dir.join("lighttpd.conf");
        std::fs::write(
            &conf,
            format!(
                r#"server.document-root = "{base}"
server.bind = "127.0.0.1"
server.port = {port}
server.errorlog = "{dir}/error.log"
server.modules = ("mod_alias", "mod_setenv", "mod_cgi", "mod_auth", "mod_authn_file")
alias.url = ("/git" => "{backend}")
$HTTP["url"] =~ "^/git" {{
  cgi.assign = ("" => "")
  setenv.add-environment = ("GIT_PROJECT_ROOT" => "{base}", "GIT_HTTP_EXPORT_ALL" => "1")
}}
auth.backend = "plain"
auth.backend.plain.userfile = "{users}"
auth.require = ("/git" => ("method" => "basic", "realm" => "git", "require" => "valid-user"))
{tls}
"#,
                base = base.display(),
                dir = conf_dir.display(),
                backend = backend.display(),
                users = users.display(),
                tls = tls.map_or(String::new(), |(cert, key)| format!(
                    "server.modules += (\"mod_openssl\")\nssl.engine = \"enable\"\nssl.pemfile = \"{}\"\nssl.privkey = \"{}\"\n",
                    cert.display(),
                    key.display()
                )),
            ),
        )
        .unwrap();
        let mut child = Command::new(lighttpd)
            .args(["-D", "-f"])
            .arg(&conf)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("lighttpd");
        wait_listening(port, &mut child, "lighttpd");
        Some(HttpGit { child, port })
    }
}

impl Drop for HttpGit {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A pre-receive hook in the bare repository `repo` (None: removed).
pub fn pre_receive(repo: &Path, script: Option<&str>) {
    use std::os::unix::fs::PermissionsExt;
    let hooks = repo.join("hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let hook = hooks.join("pre-receive");
    match script {
        Some(body) => {
            std::fs::write(&hook, format!("#!/bin/sh\n{body}\n")).unwrap();
            std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        None => {
            let _ = std::fs::remove_file(&hook);
        }
    }
}

/// `name oid` of every ref under `prefix` in the bare repository `repo`.
pub fn refs(repo: &Path, prefix: &str) -> Vec<(String, String)> {
    let out = git(
        repo,
        &["for-each-ref", "--format=%(refname) %(objectname)", prefix],
    );
    out.lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// A self-signed certificate for 127.0.0.1 and its key, made by the
/// `openssl` command: (certificate, key), or None without the command.
pub fn self_signed(dir: &Path) -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    std::fs::create_dir_all(dir).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let made = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args([
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        assert!(
            std::env::var_os("OPENPROGRAM_GIT_SERVERS_REQUIRED").is_none(),
            "the openssl command is required here"
        );
        eprintln!("no openssl command: the https test is skipped");
        return None;
    }
    Some((cert, key))
}
