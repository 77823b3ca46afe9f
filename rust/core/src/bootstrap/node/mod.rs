//! Which PEs share a node and how they meet there: node identities and the refusal of PEs no
//! transport reaches ([`locality`]), PE 0's store for launchers other than `shmemrun`
//! ([`meet`]), and the node-local descriptor store of a job whose store is on TCP
//! ([`rendezvous`]).
//!
//! Must never carry data-path traffic: node-local descriptors (heap and static-data exports)
//! pass here once, at start-up.

pub(crate) mod locality;
pub(crate) mod meet;
pub(crate) mod rendezvous;
