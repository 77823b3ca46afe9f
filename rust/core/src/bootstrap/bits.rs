//! Random bits for the bootstrap's secrets and names, and their text form.

use crate::error::{Error, LaunchError, Result};

/// 128 bits from the system's random generator, for secrets and names no other job picks;
/// `what` says what they are for, in the error.
pub(crate) fn random_bits(what: &'static str) -> Result<[u8; 16]> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 16];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| Error::Launch(LaunchError::NoRandom { what }))?;
    Ok(bytes)
}

/// A name of an abstract Unix socket that no other process picks: `shmem-<uid>-<kind>-` and
/// 128 random bits; `what` says what it names, in the error.
pub(crate) fn socket_name(uid: u32, kind: &str, what: &'static str) -> Result<String> {
    Ok(format!("shmem-{uid}-{kind}-{}", hex(&random_bits(what)?)))
}

/// `bytes` in lower-case hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes of [`hex`]'s digits (either case); `None` for anything else.
pub(crate) fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}
