//! How long the blocking steps of a job may take: the part of a job's configuration that the
//! bootstrap consumes (joining, exchanging) and the runtime hands on to its own control steps.

use std::time::Duration;

/// Bounds on the blocking steps of a job, in CANN's three kinds; `SHMEM_INIT_TIMEOUT` sets all
/// three, the attributes of `shmem_init_attr` each one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Joining the job: reaching the store, every PE arriving (`shm_init_timeout`).
    pub init: Duration,
    /// Creating and exchanging the symmetric heap and static data (`shm_create_timeout`).
    pub create: Duration,
    /// Control-plane steps of a running job: how long a barrier over all PEs waits for PEs
    /// that are all stuck in other library calls, and finalize's wait for goodbyes
    /// (`control_operation_timeout`).
    pub control: Duration,
}

impl Timeouts {
    /// The same bound for every step.
    pub fn all(t: Duration) -> Timeouts {
        Timeouts {
            init: t,
            create: t,
            control: t,
        }
    }
}
