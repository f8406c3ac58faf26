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
