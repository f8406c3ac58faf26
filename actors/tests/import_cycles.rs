//! The engine's modules, and the service's, import each other without a
//! circle between folders: every `crate::<module>` path in `src/` is an edge from the
//! file's top-level module (its folder, or the file itself at the top) to
//! `<module>`, and no strongly connected set of that graph holds more than
//! one module. Run alone: `cargo test -p openprogram-actors --test
//! import_cycles -- --nocapture` prints the graph.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Top-level module of a file under `src/` (`session/core.rs` → `session`,
/// `error.rs` → `error`).
fn module_of(rel: &Path) -> String {
    let first = rel
        .components()
        .next()
        .map(|c| c.as_os_str().to_string_lossy().into_owned());
    first
        .unwrap_or_default()
        .trim_end_matches(".rs")
        .to_string()
}

fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The modules named by `crate::<name>` in `text`, test code left out
/// (after a `#[cfg(test)]` line, or a file named `tests.rs`).
fn imports(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        if line.trim_start().starts_with("//") {
            continue;
        }
        for after in line.split("crate::").skip(1) {
            let name: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if name.chars().next().is_some_and(|c| c.is_ascii_lowercase()) {
                out.insert(name);
            } else if let Some(list) = after.strip_prefix('{') {
                // `use crate::{a, b::c}`: each name at the top of the list.
                let list = list.split('}').next().unwrap_or_default();
                for item in list.split(',') {
                    let n: String = item
                        .trim()
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    if !n.is_empty() {
                        out.insert(n);
                    }
                }
            }
        }
    }
    out
}

/// Strongly connected sets of `graph` (Tarjan), each sorted.
fn components(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        t.index.insert(v, t.next);
        t.low.insert(v, t.next);
        t.next += 1;
        t.stack.push(v);
        t.on.insert(v);
        let g = t.g;
        for w in g.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !g.contains_key(w) {
                continue;
            }
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if t.on.contains(w) {
                let iw = t.index[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut set = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                set.push(w.to_string());
                if w == v {
                    break;
                }
            }
            set.sort();
            t.out.push(set);
        }
    }
    let mut t = T {
        g: graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
}

/// The circles among the top-level modules of the crate whose sources are
/// in `src`, after printing its graph.
fn circles_in(src: &Path) -> Vec<Vec<String>> {
    let mut all = Vec::new();
    files(src, &mut all);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &all {
        let rel = f.strip_prefix(src).unwrap();
        let from = module_of(rel);
        if from == "lib" || from == "main" || f.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        let edges = graph.entry(from.clone()).or_default();
        for to in imports(&text) {
            if to != from {
                edges.insert(to);
            }
        }
    }
    for (from, to) in &graph {
        println!(
            "{from} -> {}",
            to.iter().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    components(&graph)
        .into_iter()
        .filter(|c| c.len() > 1)
        .collect()
}

#[test]
fn no_import_circle_between_folders() {
    let circles = circles_in(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(
        circles.is_empty(),
        "modules that import each other in a circle: {circles:?}"
    );
}

/// The service crate (`src/` beside this crate) holds to the same rule:
/// its shared types sit low (`state`, `client`, `schemas`), the
/// composition root (`startup`) and the commands on top.
#[test]
fn no_import_circle_in_the_service() {
    let circles = circles_in(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../src"));
    assert!(
        circles.is_empty(),
        "the service's modules import each other in a circle: {circles:?}"
    );
}
