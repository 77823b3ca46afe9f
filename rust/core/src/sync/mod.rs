//! How PEs wait for each other on shared memory: the waiting policy ([`wait`]) and the
//! barrier over all PEs ([`barrier`]). Stores by peers are plain stores, so nothing here is ever
//! woken up; waiting spins briefly, then yields, then naps. Never touches the store.

pub mod barrier;
pub mod wait;
