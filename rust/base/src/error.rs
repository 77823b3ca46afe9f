//! Why a value of the variable table was refused. The runtime wraps these in its own error
//! type; the launcher in its own.

/// A variable of [`crate::env::VARS`] whose value cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EnvError {
    /// The value does not parse or is out of range (also: set but blank where a blank value
    /// says nothing).
    #[error("environment variable {name}={value:?}: {reason}")]
    BadValue {
        /// Variable name (the deprecated alias when the value came from it).
        name: &'static str,
        /// The value as given.
        value: String,
        /// Why it was refused.
        reason: String,
    },
    /// `SHMEM_INSTANCE_PORT_RANGE` is not a port range.
    #[error("environment variable {name}={value:?}: {source}")]
    BadPortRange {
        /// Variable name.
        name: &'static str,
        /// The value as given.
        value: String,
        /// Why it was refused.
        source: PortRangeError,
    },
}

/// Why a port range `lo-hi` ([`crate::env::parse_port_range`]) was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PortRangeError {
    /// Not `lo-hi`.
    #[error("'{0}' is not a port range lo-hi")]
    NotARange(String),
    /// A port that is not a number from 1 to 65535.
    #[error("'{0}' is not a port ({1} to 65535)")]
    NotAPort(String, u16),
    /// A range whose first port is above its last.
    #[error("range {0}-{1} is empty")]
    EmptyRange(u16, u16),
}
