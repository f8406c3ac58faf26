//! Command-line interface.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "openprogram",
    version = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("OPENPROGRAM_COMMIT"), ")"),
    about = "Entity memory for AI agents, kept in git"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the HTTP/WebSocket service.
    ///
    /// At each start, sessions with no message older than an hour are
    /// deleted (`maintenance.empty_shell_max_age_s`, 3600; 0 turns it
    /// off). Two more rules delete history only when configured: archived
    /// sessions idle for `maintenance.archive_ttl_days` (idle since the
    /// later of their last message and their archiving), and the archived
    /// sessions idle longest beyond `maintenance.max_sessions`. Nothing
    /// else is ever deleted without a request.
    Serve(ServeArgs),
    /// Manage sessions of a running server.
    Sessions {
        #[command(flatten)]
        target: ServerTarget,
        #[command(subcommand)]
        command: SessionsCommand,
    },
    /// Manage projects of a running server.
    Projects {
        #[command(flatten)]
        target: ServerTarget,
        #[command(subcommand)]
        command: ProjectsCommand,
    },
    /// Convert sessions in an older layout (the specification's flat one,
    /// the original system's) into this one, one commit per turn. The
    /// server does it at startup too; run this on a stopped server's state
    /// directory, or to bring sessions over from another one.
    Migrate(MigrateArgs),
    /// Check a state directory: every session's git objects and refs, its
    /// turns against its commits, index.json, locations.json and
    /// projects.json. Exit 1 on problems. `--repair` does what a server's
    /// startup would repair (refused while a server runs on it).
    Fsck(FsckArgs),
    /// Repack session repositories (the background maintenance, on
    /// demand), printing sizes before and after. On a stopped server's
    /// state directory.
    Gc(GcArgs),
    /// Secrets in what is stored: `secrets scan` lists the sessions,
    /// turns, nodes and kinds holding any (never the secret), for data
    /// written before redaction existed or with it off.
    Secrets {
        #[command(subcommand)]
        command: SecretsCommand,
    },
    /// Rewrite a session's history (or every session's) with its secrets
    /// replaced: every turn, branch, message, time and trailer kept; the
    /// old objects dropped; the rewritten branches pushed to the remotes
    /// and replicas. Through the running server, else on the state
    /// directory here.
    Purge(PurgeArgs),
    /// Is a server running for this state directory: its address, pid,
    /// uptime, sessions and live actors.
    Status(StateDirArg),
    /// Search every session, branch and turn ("words", "a phrase",
    /// prefix*, AND / OR / NOT), or rebuild the search index.
    Search(SearchArgs),
    /// Import another agent tool's histories as sessions (one commit per
    /// turn at the turn's own time, forks as branches); run again, it adds
    /// only what is new. Through the running server, or directly on a
    /// stopped server's state directory.
    Import(ImportArgs),
    /// Serve this service's memory to an agent as an MCP server over stdio
    /// (search, sessions, turns, project commits, recent activity): through
    /// the running server, or on a stopped server's state directory.
    Mcp(McpArgs),
    /// Run a built-in runner against the running server: `llm` answers the
    /// web UI's composer with the configured `llm.*` endpoint (streaming,
    /// no tools) until stopped.
    Runner(RunnerArgs),
    /// The git remotes sessions are replicated to: `status` (queue, lag,
    /// last error per remote) and `push --all` (queue every session, to
    /// catch up a new remote), through the running server.
    Replication {
        #[command(flatten)]
        target: ServerTarget,
        #[command(subcommand)]
        command: ReplicationCommand,
    },
    /// Bring sessions back from a replication remote into a state
    /// directory (a new one, or one that lacks them): branches, titles,
    /// flags, history as last pushed. Sessions already there are left
    /// alone. On a stopped server's state directory.
    Restore(RestoreArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

impl Command {
    /// A command that prints its answer and ends: its output is often
    /// piped into `head` or `less`, and a reader that stops early ends it
    /// quietly (the default `SIGPIPE`), not with a panic. The ones that
    /// serve or follow (`serve`, `mcp`, `runner`, `import --watch`) keep
    /// the signal ignored and see the error instead.
    pub fn prints_and_ends(&self) -> bool {
        match self {
            Command::Serve(_) | Command::Mcp(_) | Command::Runner(_) => false,
            Command::Import(args) => !args.watch,
            _ => true,
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct SearchArgs {
    #[command(flatten)]
    pub target: ServerTarget,
    /// The query.
    #[arg(required_unless_present = "reindex")]
    pub query: Option<String>,
    /// Rebuild the index from the session repositories (through the
    /// running server, or directly on a stopped server's state directory).
    #[arg(long)]
    pub reindex: bool,
    /// One line per session instead of per message.
    #[arg(long)]
    pub sessions: bool,
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
}

#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    #[command(flatten)]
    pub target: ServerTarget,
    /// The tool: claude-code, codex, gemini-cli, opencode or aider; or
    /// `doctor`: what every tool's files hold, as the readers see them.
    pub tool: String,
    /// Files or folders to read (default: the tool's own folder, e.g.
    /// ~/.claude/projects).
    pub paths: Vec<PathBuf>,
    /// Only files modified since this time (2025-06-01, an RFC 3339 time,
    /// or seconds since the epoch).
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Read and count; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Do not register the conversations' working directories as projects.
    #[arg(long)]
    pub no_projects: bool,
    /// Import, then keep importing as the tool writes: a running server
    /// takes the mirror over (until it stops); without one, this command
    /// mirrors until interrupted.
    #[arg(long, conflicts_with_all = ["dry_run", "since"])]
    pub watch: bool,
    /// `doctor`: the report as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct RunnerArgs {
    /// Which runner (only `llm` is built in).
    #[arg(value_enum)]
    pub kind: RunnerKind,
    #[command(flatten)]
    pub target: ServerTarget,
    /// A TOML file overlaid on the defaults (for `llm.*`).
    #[arg(long, value_name = "FILE", env = "OPENPROGRAM_CONFIG")]
    pub config: Option<PathBuf>,
    /// The name the runner registers with.
    #[arg(long, default_value = "llm")]
    pub name: String,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum RunnerKind {
    Llm,
}

#[derive(Debug, clap::Args)]
pub struct McpArgs {
    #[command(flatten)]
    pub target: ServerTarget,
}

#[derive(Debug, Clone, clap::Args)]
pub struct StateDirArg {
    /// State directory (default ~/.openprogram).
    #[arg(long, env = "OPENPROGRAM_STATE_DIR", value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
}

impl StateDirArg {
    /// The directory given, else `~/.openprogram`; on failure the message
    /// is printed and the exit code (2) returned.
    pub fn resolve(&self) -> Result<PathBuf, std::process::ExitCode> {
        let configured = self
            .state_dir
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        crate::config::state_dir_or_default(&configured).map_err(|e| {
            eprintln!("[error] {e}");
            std::process::ExitCode::from(2)
        })
    }
}

#[derive(Debug, clap::Args)]
pub struct FsckArgs {
    #[command(flatten)]
    pub dir: StateDirArg,
    /// Repair what startup would repair (needs a stopped server).
    #[arg(long)]
    pub repair: bool,
    /// Also compare every session's branches with this replication remote
    /// (a name from the configuration, or a URL).
    #[arg(long, value_name = "REMOTE", conflicts_with = "repair")]
    pub remote: Option<String>,
    /// The configuration naming the remotes (for --remote NAME).
    #[arg(long, value_name = "FILE", env = "OPENPROGRAM_CONFIG")]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum ReplicationCommand {
    /// Each remote: queue, lag, pushes, failures, last error.
    Status,
    /// Queue every session for pushing (all remotes, or --remote).
    Push {
        /// Every session (required: what this command does).
        #[arg(long, required = true)]
        all: bool,
        #[arg(long, value_name = "NAME")]
        remote: Option<String>,
    },
}

#[derive(Debug, clap::Args)]
pub struct RestoreArgs {
    #[command(flatten)]
    pub dir: StateDirArg,
    /// The remote: a name from the configuration, or a URL (with
    /// `{session_id}` for one repository per session).
    #[arg(long = "from", value_name = "REMOTE")]
    pub from: String,
    /// Only these sessions (required for a remote with one repository per
    /// session, which cannot be listed).
    #[arg(long = "session", value_name = "ID")]
    pub sessions: Vec<String>,
    /// The configuration naming the remotes.
    #[arg(long, value_name = "FILE", env = "OPENPROGRAM_CONFIG")]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum SecretsCommand {
    /// Scan every session of a state directory (a running server's too:
    /// it only reads). Exit 1 when a secret is found.
    Scan(SecretsScanArgs),
}

#[derive(Debug, clap::Args)]
pub struct PurgeArgs {
    #[command(flatten)]
    pub target: ServerTarget,
    /// The session to purge.
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pub session: Option<String>,
    /// Every session.
    #[arg(long)]
    pub all: bool,
    /// The outcome as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct SecretsScanArgs {
    #[command(flatten)]
    pub dir: StateDirArg,
    /// The report as JSON.
    #[arg(long)]
    pub json: bool,
    /// The configuration with `[redaction]` rules and allow-lists.
    #[arg(long, value_name = "FILE", env = "OPENPROGRAM_CONFIG")]
    pub config: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct GcArgs {
    #[command(flatten)]
    pub dir: StateDirArg,
    /// Only this session.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct MigrateArgs {
    /// State directory to migrate into (default ~/.openprogram).
    #[arg(long, env = "OPENPROGRAM_STATE_DIR", value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Another state directory (e.g. the original system's ~/.openprogram)
    /// whose sessions, locations and projects are brought over, ids kept.
    #[arg(long, value_name = "DIR")]
    pub from: Option<PathBuf>,
    /// Say what would be done, change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Subcommand)]
pub enum ProjectsCommand {
    /// List projects (the default one first).
    List,
    /// Register a directory as a project (git init if needed).
    Create {
        /// Absolute path of the directory.
        path: String,
        #[arg(long)]
        name: Option<String>,
    },
    /// Point a project at its folder after it was moved or renamed.
    Relocate { id: String, path: String },
}

/// How the CLI finds the running server: `--url`, else the address the
/// server records in its state directory.
#[derive(Debug, Clone, clap::Args)]
pub struct ServerTarget {
    /// Base URL of the server, e.g. http://127.0.0.1:8765.
    #[arg(long, env = "OPENPROGRAM_URL", global = true)]
    pub url: Option<String>,
    /// State directory of the server (default ~/.openprogram).
    #[arg(long, env = "OPENPROGRAM_STATE_DIR", global = true, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// API token (default: the one in the state directory's `token` file).
    #[arg(long, env = "OPENPROGRAM_TOKEN", global = true, hide_env_values = true)]
    pub token: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// List sessions, newest first (active ones unless told otherwise).
    List {
        /// Only archived sessions.
        #[arg(long, conflicts_with = "all")]
        archived: bool,
        /// Archived and active sessions.
        #[arg(long)]
        all: bool,
    },
    /// Show one session's metadata.
    Show { id: String },
    /// Archive a session: hidden from the default list; deleted
    /// automatically once idle for `maintenance.archive_ttl_days` (90 by
    /// default, 0 keeps archived sessions forever).
    Archive { id: String },
    /// Bring an archived session back, at its old place in the list.
    Unarchive { id: String },
    /// Delete a session and its whole repository.
    Delete { id: String },
}

#[derive(Debug, clap::Args)]
#[command(after_long_help = serve_env_help())]
pub struct ServeArgs {
    /// State directory (default ~/.openprogram).
    #[arg(long, value_name = "DIR", env = "OPENPROGRAM_STORE_STATE_DIR")]
    pub state_dir: Option<PathBuf>,
    /// Address to listen on, e.g. 127.0.0.1:8765 (port 0 picks a free port).
    #[arg(long, value_name = "ADDR:PORT", env = "OPENPROGRAM_SERVER_BIND")]
    pub bind: Option<String>,
    /// A TOML file overlaid on the defaults of config/default.toml.
    #[arg(long, value_name = "FILE", env = "OPENPROGRAM_CONFIG")]
    pub config: Option<PathBuf>,
    /// Log lines as text (colour on a terminal only) or JSON objects.
    #[arg(
        long,
        value_enum,
        value_name = "FORMAT",
        env = "OPENPROGRAM_LOGGING_FORMAT"
    )]
    pub log_format: Option<crate::telemetry::LogFormat>,
}

/// `serve --help`: every configuration key's environment variable.
fn serve_env_help() -> String {
    let mut out = String::from("Every configuration key has an environment override:\n");
    for (key, env) in crate::config::env_names() {
        out.push_str(&format!("  {env:<48} {key}\n"));
    }
    out
}
