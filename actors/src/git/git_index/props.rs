//! Property test of the index writer, judged by libgit2: after any
//! sequence of adds, changes and removals, written in any rhythm (entries
//! frozen on disk or not), libgit2 reads the file as exactly the entries
//! the model holds.

use proptest::prelude::*;

use super::*;

#[derive(Debug, Clone)]
enum Op {
    Upsert(String, u8),
    Remove(String),
    Write,
}

fn op() -> impl Strategy<Value = Op> {
    // Paths share prefixes (so version 4's compression is exercised) and
    // sort before, among and after each other.
    let path = "(history/(0[0-3]/)?[0-9]{1,4}-[a-z]{1,3}\\.json|meta\\.json|a|zz/[a-z]{1,8})";
    prop_oneof![
        6 => (path, any::<u8>()).prop_map(|(p, id)| Op::Upsert(p, id)),
        2 => path.prop_map(Op::Remove),
        1 => Just(Op::Write),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn libgit2_reads_exactly_the_entries_written(
        ops in prop::collection::vec(op(), 1..300),
        freeze_at in prop_oneof![Just(4usize), Just(16), Just(usize::MAX)],
        keep in 1usize..6,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let meta = fs::metadata(dir.path()).unwrap();
        let path = dir.path().join("index");
        let mut idx = GitIndex::from_entries(path.clone(), BTreeMap::new());
        idx.freeze_at = freeze_at;
        idx.keep = keep;
        let mut model: BTreeMap<String, Oid> = BTreeMap::new();
        let check = |model: &BTreeMap<String, Oid>| -> Result<(), TestCaseError> {
            let read = git2::Index::open(&path);
            prop_assert!(read.is_ok(), "libgit2 cannot read the index: {:?}", read.err());
            let got: BTreeMap<String, Oid> = read
                .unwrap()
                .iter()
                .map(|e| (String::from_utf8(e.path).unwrap(), e.id))
                .collect();
            prop_assert_eq!(&got, model);
            Ok(())
        };
        for op in ops.into_iter().chain([Op::Write]) {
            match op {
                Op::Upsert(p, id) => {
                    let oid = Oid::from_bytes(&[id; 20]).unwrap();
                    idx.upsert(Path::new(&p), &meta, oid).unwrap();
                    model.insert(p, oid);
                }
                Op::Remove(p) => {
                    idx.remove(Path::new(&p)).unwrap();
                    model.remove(&p);
                }
                Op::Write => {
                    idx.write().unwrap();
                    check(&model)?;
                }
            }
        }
    }
}
