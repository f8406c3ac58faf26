//! A cluster on loopback for the tests: PostgreSQL in a temporary data
//! directory (run as an unprivileged user when the tests run as root),
//! HAProxy with a generated configuration, and openprogram nodes as
//! processes. Absent PostgreSQL or HAProxy skip the tests unless
//! `OPENPROGRAM_CLUSTER_REQUIRED` is set (CI sets it).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::git_servers::free_port;
use crate::helpers::{Options, TestServer};

fn required() -> bool {
    std::env::var_os("OPENPROGRAM_CLUSTER_REQUIRED").is_some()
}

/// Where PostgreSQL's server programs are (Debian keeps them per version).
fn pg_bin() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|b| b.join("postgres").exists() && b.join("initdb").exists())
        .collect();
    dirs.sort();
    dirs.pop()
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A command run as `nobody` when the tests run as root (PostgreSQL
/// refuses to run as root).
fn as_postgres_user(program: &Path) -> Command {
    if is_root() {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"])
            .arg(program);
        c
    } else {
        Command::new(program)
    }
}

fn wait_port(port: u16, child: &mut Child, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("{what} exited at start: {status}");
        }
        assert!(Instant::now() < deadline, "{what} did not start");
        std::thread::sleep(Duration::from_millis(25));
    }
}

pub struct Postgres {
    child: Option<Child>,
    bin: PathBuf,
    data: PathBuf,
    pub port: u16,
    _tmp: tempfile::TempDir,
}

impl Postgres {
    pub fn start() -> Option<Postgres> {
        let Some(bin) = pg_bin() else {
            assert!(!required(), "PostgreSQL's server is required here");
            eprintln!("PostgreSQL's server is not installed: the cluster test is skipped");
            return None;
        };
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data");
        if is_root() {
            let ok = Command::new("chown")
                .args(["nobody:nogroup"])
                .arg(tmp.path())
                .status()
                .unwrap();
            assert!(ok.success());
        }
        let out = as_postgres_user(&bin.join("initdb"))
            .args(["-D"])
            .arg(&data)
            .args(["-U", "memory", "--auth=trust", "-E", "UTF8", "--no-sync"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "initdb: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut pg = Postgres {
            child: None,
            bin,
            data,
            port: free_port(),
            _tmp: tmp,
        };
        pg.spawn();
        Some(pg)
    }

    fn spawn(&mut self) {
        let log = std::fs::File::create(self.data.with_file_name("postgres.log")).unwrap();
        let mut child = as_postgres_user(&self.bin.join("postgres"))
            .arg("-D")
            .arg(&self.data)
            .args([
                "-p",
                &self.port.to_string(),
                "-c",
                "listen_addresses=127.0.0.1",
            ])
            .arg("-c")
            .arg(format!(
                "unix_socket_directories={}",
                self.data.parent().unwrap().display()
            ))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        wait_port(self.port, &mut child, "postgres");
        // The port is open before the server takes queries: a connection
        // made meanwhile is refused ("the database system is starting
        // up"), which a node's start reports as a failed join.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ready = Command::new(self.bin.join("pg_isready"))
                .args(["-q", "-h", "127.0.0.1", "-p", &self.port.to_string()])
                .status()
                .is_ok_and(|s| s.success());
            if ready {
                break;
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("postgres exited at start: {status}");
            }
            assert!(Instant::now() < deadline, "postgres took no queries");
            std::thread::sleep(Duration::from_millis(25));
        }
        self.child = Some(child);
    }

    /// Stop it (fast shutdown) and start it again on the same data.
    pub fn restart(&mut self, down_for: Duration) {
        if let Some(mut c) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-INT", &c.id().to_string()])
                .status();
            c.wait().unwrap();
        }
        std::thread::sleep(down_for);
        self.spawn();
    }

    pub fn url(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=memory dbname=postgres",
            self.port
        )
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

pub struct Haproxy {
    child: Child,
    pub port: u16,
    _tmp: tempfile::TempDir,
}

impl Haproxy {
    /// HAProxy hashing on the session id in the path over `nodes`
    /// (`(name, port)`), checking each node's health twice a second.
    pub fn start(nodes: &[(String, u16)]) -> Option<Haproxy> {
        let bin = ["/usr/sbin/haproxy", "/usr/bin/haproxy"]
            .into_iter()
            .find(|p| Path::new(p).exists());
        let Some(bin) = bin else {
            assert!(!required(), "HAProxy is required here");
            eprintln!("HAProxy is not installed: the cluster test is skipped");
            return None;
        };
        let tmp = tempfile::tempdir().unwrap();
        let port = free_port();
        let mut cfg = format!(
            "global\n  maxconn 512\n\
             defaults\n  mode http\n  timeout connect 2s\n  timeout client 120s\n  timeout server 120s\n\
             \x20 retries 2\n  option redispatch\n\
             frontend clients\n  bind 127.0.0.1:{port}\n  default_backend nodes\n\
             backend nodes\n  balance uri path-only depth 3\n  hash-type consistent\n\
             \x20 option httpchk\n  http-check send meth GET uri /api/health ver HTTP/1.1 hdr Host 127.0.0.1\n\
             \x20 http-check expect status 200\n  default-server inter 500ms fall 2 rise 2\n"
        );
        for (name, p) in nodes {
            cfg.push_str(&format!("  server {name} 127.0.0.1:{p} check\n"));
        }
        let path = tmp.path().join("haproxy.cfg");
        std::fs::write(&path, cfg).unwrap();
        let log = std::fs::File::create(tmp.path().join("haproxy.log")).unwrap();
        let mut child = Command::new(bin)
            .arg("-db")
            .arg("-f")
            .arg(&path)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        wait_port(port, &mut child, "haproxy");
        Some(Haproxy {
            child,
            port,
            _tmp: tmp,
        })
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A node of the cluster: a server process with `[cluster]` set and
/// `extra` in its environment; `prepare` gets its state directory before
/// it starts.
pub fn node_with(
    pg: &Postgres,
    name: &str,
    port: u16,
    prepare: Option<&dyn Fn(&Path)>,
    extra: &[(&str, &str)],
) -> TestServer {
    let url = pg.url();
    let advertise = format!("http://127.0.0.1:{port}");
    let bind = format!("127.0.0.1:{port}");
    let mut env = vec![
        ("OPENPROGRAM_CLUSTER_POSTGRES_URL", url.as_str()),
        ("OPENPROGRAM_CLUSTER_NODE_ID", name),
        ("OPENPROGRAM_CLUSTER_ADVERTISE", advertise.as_str()),
        ("OPENPROGRAM_CLUSTER_LEASE_MS", "5000"),
    ];
    env.extend_from_slice(extra);
    TestServer::start_with(Options {
        env: &env,
        bind: Some(&bind),
        prepare,
        ..Options::default()
    })
}

/// PostgreSQL, three nodes and HAProxy in front (None when skipped).
pub struct Cluster {
    pub pg: Postgres,
    pub nodes: Vec<TestServer>,
    pub names: Vec<String>,
    pub proxy: Haproxy,
}

impl Cluster {
    pub fn start(n: usize) -> Option<Cluster> {
        Self::start_with(n, |_, _| {})
    }

    /// `start`, with `prepare(i, state_dir)` run before node `i` starts.
    pub fn start_with(n: usize, prepare: impl Fn(usize, &Path)) -> Option<Cluster> {
        Self::start_with_env(n, prepare, &[])
    }

    /// `start_with`, every node with `extra` in its environment.
    pub fn start_with_env(
        n: usize,
        prepare: impl Fn(usize, &Path),
        extra: &[(&str, &str)],
    ) -> Option<Cluster> {
        let pg = Postgres::start()?;
        let names: Vec<String> = (0..n)
            .map(|i| format!("node-{}", (b'a' + i as u8) as char))
            .collect();
        let ports: Vec<u16> = names.iter().map(|_| free_port()).collect();
        let nodes: Vec<TestServer> = names
            .iter()
            .zip(&ports)
            .enumerate()
            .map(|(i, (name, port))| {
                node_with(&pg, name, *port, Some(&|d: &Path| prepare(i, d)), extra)
            })
            .collect();
        let pairs: Vec<(String, u16)> = names.iter().cloned().zip(ports).collect();
        let proxy = Haproxy::start(&pairs)?;
        let c = Cluster {
            pg,
            nodes,
            names,
            proxy,
        };
        c.wait_all_live();
        Some(c)
    }

    /// Until every node sees every other as live.
    pub fn wait_all_live(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let all = self.nodes.iter().all(|n| {
                let (st, v) = n.get("/cluster/v1/status");
                st == 200
                    && v["nodes"].as_array().is_some_and(|a| {
                        a.len() == self.nodes.len() && a.iter().all(|x| x["live"] == true)
                    })
            });
            if all {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the nodes did not see each other"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}
