//! Which nodes hold a session's copies: rendezvous hashing (each node
//! scored by a hash of the session id and its name, highest first), so a
//! node joining or leaving moves only the sessions it scores first for.

/// `nodes` in the order of their score for `id`.
pub fn ranked(id: &str, nodes: &[&str]) -> Vec<String> {
    let mut scored: Vec<(u64, &str)> = nodes.iter().map(|n| (score(id, n), *n)).collect();
    scored.sort_by(|a, b| b.cmp(a));
    scored.into_iter().map(|(_, n)| n.to_string()).collect()
}

fn score(id: &str, node: &str) -> u64 {
    // FNV-1a over "id\0node".
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes().chain([0]).chain(node.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_leaving_moves_only_what_it_ranked_first() {
        let all = ["a", "b", "c", "d"];
        let less = ["a", "b", "d"];
        for i in 0..200 {
            let id = format!("s{i}");
            let before = ranked(&id, &all);
            let after = ranked(&id, &less);
            let kept: Vec<String> = before.into_iter().filter(|n| n != "c").collect();
            assert_eq!(kept, after);
        }
    }
}
