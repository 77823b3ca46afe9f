//! The "none" transport: reaches no PE. A job whose peers are all mapped here needs nothing
//! more, and a PE that is not mapped is refused with a clear error naming it. This is the
//! library's behaviour whenever no other transport is chosen; the runtime then publishes no
//! table at all, so the facade's data path never calls it.

use super::{AmoOp, Ctx, Segment, Transport, TransportError};
use std::ffi::CStr;

/// The transport that reaches no PE.
#[derive(Debug, Default)]
pub struct NoTransport;

impl NoTransport {
    fn refuse<T>(&self, pe: usize) -> Result<T, TransportError> {
        Err(TransportError::Unreachable {
            transport: self.name(),
            pe,
        })
    }
}

impl Transport for NoTransport {
    fn name(&self) -> &'static str {
        "none"
    }

    fn c_name(&self) -> &'static CStr {
        c"none"
    }

    fn can_reach(&self, _pe: usize) -> bool {
        false
    }

    fn address(&self) -> Vec<u8> {
        Vec::new()
    }

    fn connect(&mut self, _addresses: &[Vec<u8>]) -> Result<(), TransportError> {
        Ok(())
    }

    fn register(
        &mut self,
        _segment: Segment,
        _base: usize,
        _len: usize,
    ) -> Result<Vec<u8>, TransportError> {
        Ok(Vec::new())
    }

    fn attach(&mut self, _segment: Segment, _keys: &[Vec<u8>]) -> Result<(), TransportError> {
        Ok(())
    }

    fn put(&self, _: Ctx, pe: usize, _: Segment, _: u64, _: &[u8]) -> Result<(), TransportError> {
        self.refuse(pe)
    }

    fn get(
        &self,
        _: Ctx,
        pe: usize,
        _: Segment,
        _: u64,
        _: &mut [u8],
    ) -> Result<(), TransportError> {
        self.refuse(pe)
    }

    unsafe fn put_nbi(
        &self,
        _: Ctx,
        pe: usize,
        _: Segment,
        _: u64,
        _: *const u8,
        _: usize,
    ) -> Result<(), TransportError> {
        self.refuse(pe)
    }

    unsafe fn get_nbi(
        &self,
        _: Ctx,
        pe: usize,
        _: Segment,
        _: u64,
        _: *mut u8,
        _: usize,
    ) -> Result<(), TransportError> {
        self.refuse(pe)
    }

    fn amo(
        &self,
        _: Ctx,
        pe: usize,
        _: Segment,
        _: u64,
        _: AmoOp,
        _: usize,
        _: u64,
        _: u64,
    ) -> Result<u64, TransportError> {
        self.refuse(pe)
    }

    fn fence(&self, _: Ctx) -> Result<(), TransportError> {
        Ok(())
    }

    fn quiet(&self, _: Ctx) -> Result<(), TransportError> {
        Ok(())
    }

    fn progress(&self) -> Result<(), TransportError> {
        Ok(())
    }

    fn finalize(&self) -> Result<(), TransportError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_every_peer_by_name() {
        let t = NoTransport;
        assert!(!t.can_reach(0));
        let e = t.put(Ctx(0), 3, Segment::Heap, 0, &[1]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "PE 3 is not reachable through the none transport"
        );
    }
}
