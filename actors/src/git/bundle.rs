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
}

/// Read a bundle into a new repository at `dest` (which must not exist
/// yet): the pack is checked by libgit2's indexer, every ref must name a
/// commit of the pack, and HEAD's tree is checked out (symlinks as plain
/// files). Built in process.
pub fn read_bundle(bytes: &[u8], dest: &std::path::Path) -> Result<Repository, BundleError> {
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
    if lines.next() != Some("# v2 git bundle") || !pack.starts_with(b"PACK") {
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
            .ok_or_else(|| BundleError::BadRef(line.to_string()))?;
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
    for (oid, name) in &refs {
        repo.find_commit(*oid).map_err(bad)?;
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
