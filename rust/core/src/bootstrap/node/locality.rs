//! Where each PE of a job runs. A node is (boot id, network-namespace inode): two network
//! namespaces on one machine are two nodes, since no abstract socket, and so no descriptor
//! passing, crosses them.
//!
//! Owns this process's node identity and its exchange over the job's store (one allgather,
//! which is also the first barrier every PE of a TCP job passes). Which PEs share memory
//! follows from it: the PEs of one node exchange descriptors and map each other, the others
//! are the runtime's transport's to reach (or refuse, naming the PE, when none does). Must
//! never decide anything before every PE's identity is in: all PEs read the same table.

use std::os::unix::fs::MetadataExt;
use std::time::{Duration, Instant};

use crate::bootstrap::store::Client;
use crate::error::{Error, LaunchError, Result};

/// File that holds the kernel's id of the current boot.
const BOOT_ID: &str = "/proc/sys/kernel/random/boot_id";
/// This process's network namespace (its inode names the namespace).
const NET_NS: &str = "/proc/self/ns/net";
/// Longest host name kept (the kernel allows 64 bytes).
const MAX_HOST: usize = 64;

/// One PE's node, and the host name shown in messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NodeId {
    /// The kernel's boot id (a UUID): one per machine and boot.
    boot: String,
    /// Inode of the network namespace.
    netns: u64,
    /// The host name (`uname -n`), for messages only: namespaces of one machine share it.
    host: String,
}

impl NodeId {
    /// This process's node.
    pub(crate) fn this() -> Result<NodeId> {
        let boot = std::fs::read_to_string(BOOT_ID)
            .map_err(|e| Error::os(format!("reading {BOOT_ID}"), e))?
            .trim()
            .to_string();
        let netns = std::fs::metadata(NET_NS)
            .map_err(|e| Error::os(format!("reading {NET_NS}"), e))?
            .ino();
        let host = rustix::system::uname()
            .nodename()
            .to_string_lossy()
            .chars()
            .take(MAX_HOST)
            .collect();
        Ok(NodeId { boot, netns, host })
    }

    /// Whether `other` is on this node.
    pub(crate) fn same_node(&self, other: &NodeId) -> bool {
        self.boot == other.boot && self.netns == other.netns
    }

    /// Three lines: boot id, namespace inode, host name.
    pub(crate) fn encode(&self) -> Vec<u8> {
        format!("{}\n{}\n{}", self.boot, self.netns, self.host).into_bytes()
    }

    pub(crate) fn decode(bytes: &[u8]) -> std::result::Result<NodeId, Unreadable> {
        let text = std::str::from_utf8(bytes).map_err(|_| Unreadable::NotUtf8)?;
        let mut lines = text.splitn(3, '\n');
        let (Some(boot), Some(netns), Some(host)) = (lines.next(), lines.next(), lines.next())
        else {
            return Err(Unreadable::NotThreeLines(text.to_string()));
        };
        let netns = netns
            .parse()
            .map_err(|_| Unreadable::BadNamespace(netns.to_string()))?;
        if boot.is_empty() {
            return Err(Unreadable::NoBootId);
        }
        Ok(NodeId {
            boot: boot.to_string(),
            netns,
            host: host.to_string(),
        })
    }
}

impl std::fmt::Display for NodeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let boot: String = self.boot.chars().take(8).collect();
        write!(
            f,
            "host {} (boot {boot}, network namespace {})",
            self.host, self.netns
        )
    }
}

/// Why a published node identity does not read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Unreadable {
    /// Not text.
    #[error("not UTF-8")]
    NotUtf8,
    /// Not the three lines.
    #[error("{0:?} is not boot id, namespace and host")]
    NotThreeLines(String),
    /// The namespace inode is not a number.
    #[error("namespace inode {0:?} is not a number")]
    BadNamespace(String),
    /// The boot id is empty.
    #[error("empty boot id")]
    NoBootId,
}

/// Every PE's node, indexed by PE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NodeMap {
    nodes: Vec<NodeId>,
}

impl NodeMap {
    /// Each node as messages show it (host, boot id, namespace), by node number
    /// ([`NodeMap::numbers`]).
    pub(crate) fn described(&self) -> Vec<String> {
        let mut firsts: Vec<&NodeId> = Vec::new();
        for n in &self.nodes {
            if !firsts.iter().any(|f| f.same_node(n)) {
                firsts.push(n);
            }
        }
        firsts.iter().map(|n| n.to_string()).collect()
    }

    /// Every PE's node number, nodes numbered in order of their lowest PE.
    pub(crate) fn numbers(&self) -> Vec<u32> {
        let mut firsts: Vec<&NodeId> = Vec::new();
        (self.nodes.iter())
            .map(|n| match firsts.iter().position(|f| f.same_node(n)) {
                Some(i) => i as u32,
                None => {
                    firsts.push(n);
                    (firsts.len() - 1) as u32
                }
            })
            .collect()
    }
}

/// Prefix of the store keys of the PEs' node identities (the PE number follows).
const NODE_PREFIX: &str = "shmem/node/";

/// Every PE publishes its node through `store` and reads everyone's, noticing PEs the store
/// refused; `timeout` bounds it.
fn exchange(store: &Client, timeout: Duration) -> (Vec<u32>, Result<NodeMap>) {
    let mine = match NodeId::this() {
        Ok(me) => me.encode(),
        Err(e) => return (vec![store.rank()], Err(e)),
    };
    let deadline = Instant::now() + timeout;
    let got = crate::bootstrap::gather::gather(
        store,
        NODE_PREFIX,
        "which node it runs on",
        &mine,
        deadline,
    );
    let seen = got.seen();
    if let Some(e) = got.error {
        return (seen, Err(e));
    }
    let nodes = (got.values.into_iter().enumerate())
        .map(|(pe, bytes)| {
            NodeId::decode(&bytes.unwrap_or_default()).map_err(|why| {
                Error::Launch(LaunchError::ForeignBuild {
                    what: format!(
                        "PE {pe} published a node identity this build cannot read ({why})"
                    ),
                    who: "it",
                })
            })
        })
        .collect::<Result<Vec<_>>>();
    (seen, nodes.map(|nodes| NodeMap { nodes }))
}

/// Every PE's node, exchanged through `store` (collective over the job). On failure (a PE
/// never came, or published an identity this build cannot read) this PE says goodbye to the
/// store, so that its host sees a departure, not a failure. Returns the PEs seen, whose
/// departures the store's host waits for on failure.
pub(crate) fn share(store: &Client, timeout: Duration) -> (Vec<u32>, Result<NodeMap>) {
    let (seen, map) = exchange(store, timeout);
    if map.is_err() {
        if let Err(e) = store.goodbye() {
            tracing::debug!("goodbye after a failed start not delivered: {e}");
        }
    }
    (seen, map)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(boot: &str, netns: u64) -> NodeId {
        NodeId {
            boot: boot.into(),
            netns,
            host: "h".into(),
        }
    }

    #[test]
    fn identity_round_trips() {
        let me = NodeId::this().unwrap();
        assert!(!me.boot.is_empty());
        assert!(me.netns > 0);
        assert_eq!(NodeId::decode(&me.encode()).unwrap(), me);
        let odd = NodeId {
            host: "a\nb".into(),
            ..me.clone()
        };
        assert_eq!(NodeId::decode(&odd.encode()).unwrap(), odd);
        assert!(NodeId::decode(b"x\ny").is_err());
        assert!(NodeId::decode(b"x\nnot-a-number\nh").is_err());
        assert!(NodeId::decode(b"\n1\nh").is_err());
        assert!(NodeId::decode(&[0xff, b'\n', b'1', b'\n']).is_err());
    }

    #[test]
    fn a_namespace_is_a_node() {
        let map = NodeMap {
            nodes: vec![node("b", 1), node("b", 1), node("b", 2), node("b", 2)],
        };
        assert_eq!(map.numbers(), vec![0, 0, 1, 1]);
        assert_eq!(
            map.described(),
            vec![
                "host h (boot b, network namespace 1)",
                "host h (boot b, network namespace 2)"
            ]
        );
    }

    #[test]
    fn another_boot_is_another_node() {
        let map = NodeMap {
            nodes: vec![node("b", 1), node("c", 1), node("b", 1)],
        };
        assert_eq!(map.numbers(), vec![0, 1, 0]);
        assert_eq!(map.described().len(), 2);
        let one = NodeMap {
            nodes: vec![node("b", 1); 3],
        };
        assert_eq!((one.described().len(), one.numbers()), (1, vec![0; 3]));
    }
}
