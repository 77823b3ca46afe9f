//! How PEs wait for each other on shared memory: the waiting policy ([`wait`]), the one barrier
//! implementation, over all PEs and over teams ([`barrier`]), the call each PE enters the world
//! barrier with ([`call`]), the control segment that holds their words ([`control`]), and the
//! job as they see it ([`view`]). Stores by peers are plain stores, so nothing here is ever
//! woken up; waiting spins briefly, then yields, then naps. Never touches the store.

pub mod barrier;
pub mod call;
pub mod control;
pub mod view;
pub mod wait;
