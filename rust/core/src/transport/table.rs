//! The C table of a transport (`shmem_transport_ops` in `device/include/shmem/transport.h`): a
//! `#[repr(C)]` mirror and the `extern "C"` functions that turn each entry into a call of the
//! [`Transport`] behind it. Every entry logs the error it returns (one line naming the
//! transport, the operation and the PE), so the facade only ends the job.

use super::{AmoOp, Ctx, Segment, Transport, TransportError};
use std::ffi::{c_char, c_int, c_void};
use std::mem::{offset_of, size_of};

/// Operations this mirror knows (`SHMEM_TRANSPORT_OPS_VERSION`).
pub const VERSION: u32 = 1;

type Put = unsafe extern "C" fn(
    *mut c_void,
    *const c_void,
    c_int,
    c_int,
    u64,
    *const c_void,
    usize,
) -> c_int;
type Get = unsafe extern "C" fn(
    *mut c_void,
    *const c_void,
    c_int,
    c_int,
    u64,
    *mut c_void,
    usize,
) -> c_int;
type Amo = unsafe extern "C" fn(
    *mut c_void,
    *const c_void,
    c_int,
    c_int,
    u64,
    c_int,
    usize,
    u64,
    u64,
    *mut u64,
) -> c_int;
type OnCtx = unsafe extern "C" fn(*mut c_void, *const c_void) -> c_int;
type Progress = unsafe extern "C" fn(*mut c_void) -> c_int;

/// The table (`shmem_transport_ops`); see the C header for each entry.
#[repr(C)]
#[derive(Debug)]
pub struct TransportOps {
    /// Bytes the filler wrote.
    pub size: u32,
    /// Operations the filler knows.
    pub version: u32,
    /// The transport's name (NUL-terminated, static).
    pub name: *const c_char,
    /// The transport: a `*const Box<dyn Transport>`.
    pub self_: *mut c_void,
    /// Blocking put.
    pub put: Put,
    /// Blocking get.
    pub get: Get,
    /// Non-blocking put.
    pub put_nbi: Put,
    /// Non-blocking get.
    pub get_nbi: Get,
    /// One atomic operation.
    pub amo: Amo,
    /// Fence on a context.
    pub fence: OnCtx,
    /// Quiet on a context.
    pub quiet: OnCtx,
    /// Progress.
    pub progress: Progress,
}

/// The table for `transport`, which must stay where it is (boxed) as long as the table is used.
pub fn fill(transport: &mut Box<Box<dyn Transport>>) -> TransportOps {
    TransportOps {
        size: size_of::<TransportOps>() as u32,
        version: VERSION,
        name: transport.c_name().as_ptr(),
        self_: (&mut **transport as *mut Box<dyn Transport>).cast(),
        put,
        get,
        put_nbi,
        get_nbi,
        amo,
        fence,
        quiet,
        progress,
    }
}

/// The table's layout: its size, then each entry's offset in declaration order. The facade
/// compares it with the C header's at start-up (with the job state's).
pub fn layout() -> Vec<usize> {
    vec![
        size_of::<TransportOps>(),
        offset_of!(TransportOps, size),
        offset_of!(TransportOps, version),
        offset_of!(TransportOps, name),
        offset_of!(TransportOps, self_),
        offset_of!(TransportOps, put),
        offset_of!(TransportOps, get),
        offset_of!(TransportOps, put_nbi),
        offset_of!(TransportOps, get_nbi),
        offset_of!(TransportOps, amo),
        offset_of!(TransportOps, fence),
        offset_of!(TransportOps, quiet),
        offset_of!(TransportOps, progress),
    ]
}

/// The transport behind a table's `self`.
///
/// # Safety
/// `this` must be the `self_` of a table from [`fill`] whose transport is still alive.
unsafe fn transport<'a>(this: *mut c_void) -> &'a dyn Transport {
    // SAFETY: per this function's contract, `this` points at a live `Box<dyn Transport>`.
    unsafe { &**(this as *const Box<dyn Transport>) }
}

/// How long a PE whose transfer failed because a peer is gone waits for the job's end before
/// it reports the failure itself. The peer's death closes its store connection, and whoever
/// hosts the store (shmemrun, or PE 0) then ends every PE with one line naming the dead PE;
/// that takes milliseconds, so a report of our own is only needed where nobody saw a death (a
/// network that broke between live nodes). Reporting at once instead raced that line: the job
/// was then said to be stopped by the PE whose transfer failed, not lost with the dead one.
const LOST_PEER_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// 0, or 1 after logging the error (see [`logged`]).
fn status(t: &dyn Transport, op: &str, pe: c_int, r: Result<(), TransportError>) -> c_int {
    logged(t, op, pe, r).map_or(1, |()| 0)
}

/// `r`, after logging its error for operation `op` to `pe` (negative: no PE) of `t` in one line
/// (after [`LOST_PEER_GRACE`] when the error says a peer is gone, unless the job's end came
/// first): every call of a transport on the runtime's or the facade's behalf reports here.
pub(crate) fn logged(
    t: &dyn Transport,
    op: &str,
    pe: c_int,
    r: Result<(), TransportError>,
) -> Result<(), TransportError> {
    if let Err(e) = &r {
        if let TransportError::PeerFailed { pe: lost, .. } = e {
            tracing::debug!(
                "transport {}: {op}: lost PE {lost}; waiting for the job's end",
                t.name()
            );
            std::thread::sleep(LOST_PEER_GRACE);
        }
        tracing::error!("{}", error_line(t.name(), op, pe, e));
    }
    r
}

/// The line logged for `e` from operation `op` to `pe` (negative: no PE) of transport `name`.
/// An error that names the PE already is not prefixed with it again.
fn error_line(name: &str, op: &str, pe: c_int, e: &TransportError) -> String {
    let named = match e {
        TransportError::PeerFailed { pe: p, .. }
        | TransportError::Unreachable { pe: p, .. }
        | TransportError::OutOfRange { pe: p, .. }
        | TransportError::BadPeerData { pe: p, .. } => usize::try_from(pe) == Ok(*p),
        _ => false,
    };
    if pe >= 0 && !named {
        format!("transport {name}: {op} to PE {pe}: {e}")
    } else {
        format!("transport {name}: {op}: {e}")
    }
}

fn segment(raw: c_int) -> Result<Segment, TransportError> {
    Segment::from_raw(raw).ok_or(TransportError::BadArgument {
        arg: "segment",
        value: raw.into(),
    })
}

fn peer(raw: c_int) -> Result<usize, TransportError> {
    usize::try_from(raw).map_err(|_| TransportError::BadArgument {
        arg: "pe",
        value: raw.into(),
    })
}

unsafe extern "C" fn put(
    this: *mut c_void,
    ctx: *const c_void,
    pe: c_int,
    seg: c_int,
    offset: u64,
    source: *const c_void,
    n: usize,
) -> c_int {
    // SAFETY: the facade calls with the `self_` of the published table.
    let t = unsafe { transport(this) };
    let r = (|| {
        let bytes: &[u8] = if n == 0 {
            &[]
        } else {
            // SAFETY: the facade checked `source` is non-null for `n` bytes; it is the caller's
            // buffer, readable for the length of the call.
            unsafe { std::slice::from_raw_parts(source.cast(), n) }
        };
        t.put(Ctx::from_raw(ctx), peer(pe)?, segment(seg)?, offset, bytes)
    })();
    status(t, "put", pe, r)
}

unsafe extern "C" fn get(
    this: *mut c_void,
    ctx: *const c_void,
    pe: c_int,
    seg: c_int,
    offset: u64,
    dest: *mut c_void,
    n: usize,
) -> c_int {
    // SAFETY: the facade calls with the `self_` of the published table.
    let t = unsafe { transport(this) };
    let r = (|| {
        let bytes: &mut [u8] = if n == 0 {
            &mut []
        } else {
            // SAFETY: the facade checked `dest` is non-null for `n` bytes; it is the caller's
            // buffer, writable for the length of the call.
            unsafe { std::slice::from_raw_parts_mut(dest.cast(), n) }
        };
        t.get(Ctx::from_raw(ctx), peer(pe)?, segment(seg)?, offset, bytes)
    })();
    status(t, "get", pe, r)
}

unsafe extern "C" fn put_nbi(
    this: *mut c_void,
    ctx: *const c_void,
    pe: c_int,
    seg: c_int,
    offset: u64,
    source: *const c_void,
    n: usize,
) -> c_int {
    // SAFETY: the facade calls with the `self_` of the published table.
    let t = unsafe { transport(this) };
    // SAFETY: OpenSHMEM's contract for a non-blocking put: the program keeps `source` unchanged
    // until quiet on the context.
    let r = (|| unsafe {
        t.put_nbi(
            Ctx::from_raw(ctx),
            peer(pe)?,
            segment(seg)?,
            offset,
            source.cast(),
            n,
        )
    })();
    status(t, "put_nbi", pe, r)
}

unsafe extern "C" fn get_nbi(
    this: *mut c_void,
    ctx: *const c_void,
    pe: c_int,
    seg: c_int,
    offset: u64,
    dest: *mut c_void,
    n: usize,
) -> c_int {
    // SAFETY: the facade calls with the `self_` of the published table.
    let t = unsafe { transport(this) };
    // SAFETY: OpenSHMEM's contract for a non-blocking get: the program leaves `dest` alone
    // until quiet on the context.
    let r = (|| unsafe {
        t.get_nbi(
            Ctx::from_raw(ctx),
            peer(pe)?,
            segment(seg)?,
            offset,
            dest.cast(),
            n,
        )
    })();
    status(t, "get_nbi", pe, r)
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn amo(
    this: *mut c_void,
    ctx: *const c_void,
    pe: c_int,
    seg: c_int,
    offset: u64,
    op: c_int,
    size: usize,
    value: u64,
    compare: u64,
    fetched: *mut u64,
) -> c_int {
    // SAFETY: the facade calls with the `self_` of the published table.
    let t = unsafe { transport(this) };
    let r = (|| {
        let op = AmoOp::from_raw(op).ok_or(TransportError::BadArgument {
            arg: "op",
            value: op.into(),
        })?;
        if size != 4 && size != 8 {
            return Err(TransportError::BadArgument {
                arg: "size",
                value: size as i64,
            });
        }
        let old = t.amo(
            Ctx::from_raw(ctx),
            peer(pe)?,
            segment(seg)?,
            offset,
            op,
            size,
            value,
            compare,
        )?;
        // SAFETY: `fetched` is null or the facade's local result word.
        if let Some(out) = unsafe { fetched.as_mut() } {
            *out = old;
        }
        Ok(())
    })();
    status(t, "atomic", pe, r)
}

unsafe extern "C" fn fence(this: *mut c_void, ctx: *const c_void) -> c_int {
    // SAFETY: the facade calls with the `self_` of the published table.
    let t = unsafe { transport(this) };
    status(t, "fence", -1, t.fence(Ctx::from_raw(ctx)))
}

unsafe extern "C" fn quiet(this: *mut c_void, ctx: *const c_void) -> c_int {
    // SAFETY: the facade calls with the `self_` of the published table.
    let t = unsafe { transport(this) };
    status(t, "quiet", -1, t.quiet(Ctx::from_raw(ctx)))
}

unsafe extern "C" fn progress(this: *mut c_void) -> c_int {
    // SAFETY: the facade and the runtime call with the `self_` of the published table.
    let t = unsafe { transport(this) };
    status(t, "progress", -1, t.progress())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_line_names_the_operation_and_the_pe_once() {
        let lost = TransportError::PeerFailed {
            pe: 3,
            why: "Endpoint timeout".into(),
        };
        assert_eq!(
            error_line("ucx", "put", 3, &lost),
            "transport ucx: put: lost the connection to PE 3 (Endpoint timeout): PE 3 died or \
             its node cannot be reached"
        );
        let failed = TransportError::Library {
            call: "ucp_put_nbx".into(),
            why: "Input/output error".into(),
        };
        assert_eq!(
            error_line("ucx", "put", 3, &failed),
            "transport ucx: put to PE 3: ucp_put_nbx: Input/output error"
        );
        // A flush fails for the whole worker: the lost PE is named by the error alone.
        assert_eq!(
            error_line("ucx", "quiet", -1, &lost),
            "transport ucx: quiet: lost the connection to PE 3 (Endpoint timeout): PE 3 died \
             or its node cannot be reached"
        );
    }
}
