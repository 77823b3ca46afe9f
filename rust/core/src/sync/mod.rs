//! How PEs wait for each other on shared memory: the waiting policy ([`wait`]), the barrier
//! over all PEs ([`barrier`]) and the call each PE enters it with ([`call`]). Stores by peers
//! are plain stores, so nothing here is ever woken up; waiting spins briefly, then yields, then
//! naps. Never touches the store.

pub mod barrier;
pub mod call;
pub mod wait;
