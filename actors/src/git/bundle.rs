use git2::{Buf, Repository};

/// A git bundle (v2) of every branch, plus HEAD: the header lists the refs,
/// then one pack holds every object they reach. `git clone <bundle>` and
/// `git bundle verify` accept it. Built in process, no `git` subprocess.
pub fn write_bundle(repo: &Repository) -> Result<Vec<u8>, git2::Error> {
    let mut header = String::from("# v2 git bundle\n");
    let mut walk = repo.revwalk()?;
    let mut any = false;
    for r in repo.references_glob("refs/heads/*")? {
        let r = r?;
        if let (Some(name), Some(oid)) = (r.name(), r.target()) {
            header.push_str(&format!("{oid} {name}\n"));
            walk.push(oid)?;
            any = true;
        }
    }
    if !any {
        return Err(git2::Error::from_str("no branch to bundle"));
    }
    if let Some(head) = super::head_commit(repo)? {
        header.push_str(&format!("{} HEAD\n", head.id()));
    }
    header.push('\n');
    let mut builder = repo.packbuilder()?;
    builder.insert_walk(&mut walk)?;
    let mut pack = Buf::new();
    builder.write_buf(&mut pack)?;
    let mut out = header.into_bytes();
    out.extend_from_slice(&pack);
    Ok(out)
}

/// Caps on what an imported bundle may unpack to, checked before anything
/// of it is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImportLimits {
    /// Bytes of every object's content together (delta data counted too).
    pub max_unpacked: u64,
    pub max_objects: u32,
}

impl Default for ImportLimits {
    fn default() -> Self {
        ImportLimits {
            max_unpacked: 64 << 20,
            max_objects: 200_000,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error("not a git bundle (v2)")]
    NotABundle,
    #[error("bundles with prerequisites (thin bundles) are not supported")]
    Prerequisites,
    #[error("the bundle lists a bad ref: {0}")]
    BadRef(String),
    #[error("the bundle has no branch")]
    NoBranch,
    #[error("the bundle's pack is damaged: {0}")]
    BadPack(String),
    #[error("the bundle unpacks to more than {0} bytes (store.import_max_unpacked)")]
    TooLarge(u64),
    #[error("the bundle holds {0} objects, more than {1} (store.import_max_objects)")]
    TooManyObjects(u32, u32),
    #[error("the bundle's files are not a session's: {0}")]
    BadTree(String),
}

/// Read a bundle into a new repository at `dest` (which must not exist
/// yet). Before anything is written, the pack's object count and unpacked
/// size are checked against `limits` (`super::pack::check`); ref names are
/// checked before libgit2 sees them. The pack is then checked by libgit2's
/// indexer, every ref must name a commit of the pack, every tree of every
/// commit may hold only regular files and folders with plain names
/// (`check_trees`), and HEAD's tree is checked out. Built in process.
pub fn read_bundle(
    bytes: &[u8],
    dest: &std::path::Path,
    limits: ImportLimits,
) -> Result<Repository, BundleError> {
    use std::io::Write;
    const MAX_HEADER: usize = 64 * 1024;
    let head_end = bytes
        .windows(2)
        .take(MAX_HEADER)
        .position(|w| w == b"\n\n")
        .ok_or(BundleError::NotABundle)?;
    let header = std::str::from_utf8(&bytes[..head_end]).map_err(|_| BundleError::NotABundle)?;
    let pack = &bytes[head_end + 2..];
    let mut lines = header.lines();
    if lines.next() != Some("# v2 git bundle") || !pack.starts_with(&super::pack::MAGIC) {
        return Err(BundleError::NotABundle);
    }
    let mut refs: Vec<(git2::Oid, String)> = Vec::new();
    let mut head = None;
    for line in lines {
        if line.starts_with('-') {
            return Err(BundleError::Prerequisites);
        }
        let (sha, name) = line
            .split_once(' ')
            .ok_or_else(|| BundleError::BadRef(line.escape_debug().to_string()))?;
        // A NUL inside a name would make libgit2's bindings panic.
        if name.chars().any(char::is_control) {
            return Err(BundleError::BadRef(name.escape_debug().to_string()));
        }
        let oid = git2::Oid::from_str(sha).map_err(|_| BundleError::BadRef(line.to_string()))?;
        if name == "HEAD" {
            head = Some(oid);
        } else if name.starts_with("refs/heads/") && git2::Reference::is_valid_name(name) {
            refs.push((oid, name.to_string()));
        } else {
            return Err(BundleError::BadRef(name.to_string()));
        }
    }
    if refs.is_empty() {
        return Err(BundleError::NoBranch);
    }
    super::pack::check(pack, limits)?;
    let bad = |e: git2::Error| BundleError::BadPack(e.message().to_string());
    let repo = super::init_session_repo(dest).map_err(bad)?;
    repo.config()
        .and_then(|mut c| c.set_bool("core.symlinks", false))
        .map_err(bad)?;
    {
        let odb = repo.odb().map_err(bad)?;
        let mut writer = odb.packwriter().map_err(bad)?;
        writer
            .write_all(pack)
            .map_err(|e| BundleError::BadPack(e.to_string()))?;
        writer.commit().map_err(bad)?;
    }
    for (oid, _) in &refs {
        repo.find_commit(*oid).map_err(bad)?;
    }
    check_trees(&repo, refs.iter().map(|(oid, _)| *oid))?;
    for (oid, name) in &refs {
        repo.reference(name, *oid, true, "import").map_err(bad)?;
    }
    // HEAD: the branch the bundle's HEAD points at, else main, else the first.
    let target = refs
        .iter()
        .find(|(oid, _)| Some(*oid) == head)
        .or_else(|| refs.iter().find(|(_, n)| n == "refs/heads/main"))
        .unwrap_or(&refs[0])
        .1
        .clone();
    repo.set_head(&target).map_err(bad)?;
    repo.checkout_head(Some(git2::build::CheckoutBuilder::new().force()))
        .map_err(bad)?;
    Ok(repo)
}

/// Every tree of every commit reachable from `tips` may hold only regular
/// files and folders with plain names: no symlinks, no submodules, no
/// `.git*` entries (but the session's own root `.gitignore`), no names
/// that could escape or hide (`.`, `..`, separators, control characters).
fn check_trees(
    repo: &Repository,
    tips: impl Iterator<Item = git2::Oid>,
) -> Result<(), BundleError> {
    let bad = |e: git2::Error| BundleError::BadPack(e.message().to_string());
    let mut walk = repo.revwalk().map_err(bad)?;
    for tip in tips {
        walk.push(tip).map_err(bad)?;
    }
    let mut seen = std::collections::HashSet::new();
    for oid in walk {
        let commit = repo.find_commit(oid.map_err(bad)?).map_err(bad)?;
        let mut stack = vec![(commit.tree_id(), String::new())];
        while let Some((tree_id, prefix)) = stack.pop() {
            if !seen.insert(tree_id) {
                continue;
            }
            let tree = repo.find_tree(tree_id).map_err(bad)?;
            for entry in tree.iter() {
                let name = std::str::from_utf8(entry.name_bytes())
                    .map_err(|_| BundleError::BadTree(format!("{prefix}: a name is not UTF-8")))?;
                let path = format!("{prefix}{name}");
                check_entry_name(name, prefix.is_empty()).map_err(|why| {
                    BundleError::BadTree(format!("{}: {why}", path.escape_debug()))
                })?;
                match entry.filemode() {
                    0o100644 | 0o100755 => {}
                    0o040000 => stack.push((entry.id(), format!("{path}/"))),
                    0o120000 => {
                        return Err(BundleError::BadTree(format!("{path}: a symbolic link")))
                    }
                    0o160000 => return Err(BundleError::BadTree(format!("{path}: a submodule"))),
                    m => return Err(BundleError::BadTree(format!("{path}: file mode {m:o}"))),
                }
            }
        }
    }
    Ok(())
}

fn check_entry_name(name: &str, at_root: bool) -> Result<(), &'static str> {
    if name.is_empty() || name == "." || name == ".." {
        return Err("a name that is empty, '.' or '..'");
    }
    if name.contains(['/', '\\']) || name.chars().any(char::is_control) {
        return Err("a separator or control character in a name");
    }
    // Names other file systems take for `.git`: HFS+ ignores some
    // invisible characters, NTFS drops trailing dots and spaces, reads
    // `name:stream` as `name` and has the short name `GIT~1`.
    if name.contains(':') {
        return Err("a ':' in a name (an NTFS stream)");
    }
    if name.ends_with(['.', ' ']) {
        return Err("a name ending in a dot or a space");
    }
    let seen: String = name
        .chars()
        .filter(
            |c| !matches!(*c as u32, 0x200B..=0x200F | 0x202A..=0x202E | 0x206A..=0x206F | 0xFEFF),
        )
        .collect::<String>()
        .to_lowercase();
    if seen.starts_with("git~") {
        return Err("a short name of .git");
    }
    if seen.starts_with(".git") && !(at_root && name == ".gitignore") {
        return Err("a .git entry");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check_entry_name;

    #[test]
    fn names_other_file_systems_read_as_dot_git_are_refused() {
        for bad in [
            ".git",
            ".GIT",
            ".Git",
            ".g\u{200C}it",
            "\u{FEFF}.git",
            ".git.",
            ".git ",
            ".git::$INDEX_ALLOCATION",
            "GIT~1",
            "git~1",
            ".gitmodules",
            "a:b",
            "..",
        ] {
            assert!(check_entry_name(bad, false).is_err(), "{bad:?} accepted");
        }
        assert!(check_entry_name(".gitignore", true).is_ok());
        assert!(check_entry_name(".gitignore", false).is_err());
        for good in ["meta.json", "000001-u-abc.json", "notes.git.txt", "中文"] {
            assert!(check_entry_name(good, false).is_ok(), "{good:?} refused");
        }
    }
}
