//! The liveness of a job's PEs across nodes, over the store's groups: every PE of a job that
//! spans nodes joins the group [`GROUP`] with its PE number as its rank and its node in its id
//! ([`member_id`]), with the job's heartbeat bound as its loss bound, and sends a heartbeat
//! every third of it ([`interval`], `Client::heartbeat`) from a thread of its own. The store
//! reports a member silent past the bound down, as it does for any group; the store's host
//! watches the group ([`watch`]) and is told which nodes went silent, named with their PEs.
//! A PE whose heartbeat goes unanswered ends itself half an interval after the bound
//! ([`self_bound`]): the store's host, which can tell every other node, goes first.
//!
//! A PE whose connection ends is down too, but that is its death, which the store's host
//! learns from the connection itself: [`watch`] reports only silence.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::server::{Server, CONNECTION_ENDED, MAX_MEMBER_ID_LEN};
use crate::wire::GroupEventKind;

/// The group of a job's PEs.
pub const GROUP: &str = "shmem/job/liveness";

/// Stack of the host's watcher: it only waits and formats a line.
const STACK: usize = 64 * 1024;

/// Time between two heartbeats of a PE under `bound`.
pub fn interval(bound: Duration) -> Duration {
    bound / 3
}

/// How long after its last answered heartbeat a PE takes itself for cut off: `bound` and
/// half an interval (the next heartbeat is sent one interval after that answer, and its
/// answer awaited for the rest), so that the store's host, which notices the same silence
/// after `bound`, ends the job first where it can.
pub fn self_bound(bound: Duration) -> Duration {
    bound + interval(bound) / 2
}

/// The key PE `pe` counts its heartbeats in.
pub fn beat_key(pe: u32) -> String {
    format!("{GROUP}/beats/{pe}")
}

/// The id of PE `pe` on `node` (the node as messages show it): `PE <pe> on <node>`, cut to
/// what a member id may hold.
pub fn member_id(pe: u32, node: &str) -> String {
    let mut id = format!("PE {pe} on {node}");
    if id.len() > MAX_MEMBER_ID_LEN {
        let mut end = MAX_MEMBER_ID_LEN;
        while !id.is_char_boundary(end) {
            end -= 1;
        }
        id.truncate(end);
    }
    id
}

/// The node part of a member id.
fn node_of(id: &str) -> &str {
    id.split_once(" on ").map_or(id, |(_, node)| node)
}

/// Watches the heartbeats of the job's PEs on a thread of the store's host: once members are
/// reported silent (past `bound`), calls `on_silent` once with a line naming each silent node
/// and its PEs, and ends. A node is named unreachable when none of its PEs has been heard
/// from for more than one and a half heartbeat intervals: its PEs go silent together, within
/// an interval of each other. Also ends, without calling it, once every member has gone (the
/// job is over).
pub fn watch(
    server: &Server,
    bound: Duration,
    on_silent: impl FnOnce(String) + Send + 'static,
) -> std::io::Result<()> {
    let server = server.clone();
    std::thread::Builder::new()
        .name("shmem-liveness".into())
        .stack_size(STACK)
        .spawn(move || {
            if let Some(line) = silent_nodes(&server, bound) {
                on_silent(line);
            }
        })
        .map(drop)
}

/// Waits for silent members; `None` once every member has gone.
fn silent_nodes(server: &Server, bound: Duration) -> Option<String> {
    let mut after = 0;
    let mut had_members = false;
    loop {
        // The watch wakes for its members' deadlines, but not when a PE's long request ends
        // (its deadline starts again then): an interval at a time.
        let view = server.watch_group(GROUP, after, interval(bound));
        let mut silent: Vec<(u32, String)> = Vec::new();
        for e in &view.events {
            after = after.max(e.seq);
            if e.kind == GroupEventKind::Down && e.detail != CONNECTION_ENDED {
                silent.push((e.rank, e.member.clone()));
            }
        }
        if !silent.is_empty() {
            let quiet = interval(bound) * 3 / 2;
            let others: Vec<(u32, String, bool)> = (server.silences(GROUP).into_iter())
                .map(|(rank, id, silence)| (rank, id, silence > quiet))
                .collect();
            return Some(describe(&silent, &others, bound));
        }
        had_members |= !view.members.is_empty();
        if had_members && view.members.is_empty() {
            return None;
        }
    }
}

/// One line naming the silent nodes and their PEs. `others`: the members still in the group,
/// and whether each has been quiet too long to be heard from again.
fn describe(silent: &[(u32, String)], others: &[(u32, String, bool)], bound: Duration) -> String {
    // By node: its silent PEs, and whether any of its PEs is still heard from.
    let mut by_node: BTreeMap<&str, (Vec<u32>, bool)> = BTreeMap::new();
    for (rank, id) in silent {
        by_node.entry(node_of(id)).or_default().0.push(*rank);
    }
    for (rank, id, quiet) in others {
        if let Some((pes, heard)) = by_node.get_mut(node_of(id)) {
            if *quiet {
                pes.push(*rank);
            } else {
                *heard = true;
            }
        }
    }
    let secs = bound.as_secs_f64();
    let parts: Vec<String> = by_node
        .into_iter()
        .map(|(node, (mut pes, heard))| {
            pes.sort_unstable();
            let list = pes
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ");
            let plural = if pes.len() == 1 { "" } else { "s" };
            if heard {
                format!(
                    "PE{plural} {list} on {node} sent no heartbeat within {secs} s while the \
                     node's other PEs did"
                )
            } else {
                format!(
                    "{node} is unreachable: its PE{plural} {list} sent no heartbeat within \
                     {secs} s (the node is cut off or down)"
                )
            }
        })
        .collect();
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::os::fd::OwnedFd;
    use std::os::unix::net::UnixStream;
    use std::sync::mpsc;

    use crate::Client;

    const T: Duration = Duration::from_secs(30);

    /// A store of `n` PEs, PE `pe` on node `pe`, each a member of the liveness group with
    /// bound `bound`.
    fn job(n: u32, bound: Duration) -> (Server, Vec<Client>) {
        let (server, _events) = Server::new(n);
        let clients = (0..n)
            .map(|pe| {
                let (ours, theirs) = UnixStream::pair().unwrap();
                server.serve_unix(pe, ours).unwrap();
                let c = Client::connect_inherited(OwnedFd::from(theirs), pe, n, T).unwrap();
                let id = member_id(pe, &format!("node {pe}, host h"));
                c.group_join(GROUP, &id, n, Some(pe), bound, false).unwrap();
                c
            })
            .collect();
        (server, clients)
    }

    #[test]
    fn a_silent_node_is_named_and_a_busy_pe_is_not() {
        let bound = Duration::from_millis(600);
        let (server, clients) = job(3, bound);
        let (tx, rx) = mpsc::channel();
        watch(&server, bound, move |line| tx.send(line).unwrap()).unwrap();
        let clients = std::sync::Arc::new(clients);
        // PE 1 waits in a GET for longer than the bound: the store is answering it.
        let waiting = std::sync::Arc::clone(&clients);
        let getter = std::thread::spawn(move || waiting[1].get("never", 4 * bound).unwrap_err());
        // PE 0 beats, PE 2 goes silent.
        let until = std::time::Instant::now() + 3 * bound;
        let mut beats = 0;
        while std::time::Instant::now() < until {
            assert!(clients[0].heartbeat(&beat_key(0), T).unwrap());
            beats += 1;
            std::thread::sleep(interval(bound));
        }
        let line = rx.recv_timeout(T).unwrap();
        assert_eq!(
            line,
            "node 2, host h is unreachable: its PE 2 sent no heartbeat within 0.6 s (the node \
             is cut off or down)"
        );
        getter.join().unwrap();
        // Each heartbeat counted once.
        assert_eq!(clients[0].add(&beat_key(0), 0).unwrap(), beats);
    }

    #[test]
    fn a_line_names_each_silent_node_and_its_pes() {
        let node = |k: u32| format!("node {k}, host h (boot b, network namespace {k})");
        let silent = vec![
            (3, member_id(3, &node(1))),
            (2, member_id(2, &node(1))),
            (5, member_id(5, &node(2))),
        ];
        // Node 1's PE 4 is quiet too, node 2's PE 6 is heard from.
        let others = vec![
            (0, member_id(0, &node(0)), false),
            (4, member_id(4, &node(1)), true),
            (6, member_id(6, &node(2)), false),
        ];
        let line = describe(&silent, &others, Duration::from_secs(15));
        assert_eq!(
            line,
            "node 1, host h (boot b, network namespace 1) is unreachable: its PEs 2, 3, 4 sent \
             no heartbeat within 15 s (the node is cut off or down); PE 5 on node 2, host h \
             (boot b, network namespace 2) sent no heartbeat within 15 s while the node's \
             other PEs did"
        );
        assert!(member_id(1, &"x".repeat(400)).len() <= MAX_MEMBER_ID_LEN);
        assert_eq!(interval(Duration::from_secs(15)), Duration::from_secs(5));
        assert_eq!(
            self_bound(Duration::from_secs(15)),
            Duration::from_millis(17500)
        );
    }
}
