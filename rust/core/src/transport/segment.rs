//! The symmetric segments a transport registers and addresses: the names the C table's
//! `segment` argument and the transports share. Plain values, importing nothing.

/// A symmetric segment an address lies in (`enum shmem_transport_segment`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Segment {
    /// The user heap.
    Heap = 0,
    /// Global and static variables.
    Data = 1,
    /// The control segment (`sync/control.rs`): the synchronisation words of the host API.
    Control = 2,
}

/// Segments a transport registers, in [`Segment`] order.
pub const SEGMENTS: usize = 3;

impl Segment {
    /// The segment of a C `segment` argument, if it names one.
    pub fn from_raw(raw: i32) -> Option<Segment> {
        match raw {
            0 => Some(Segment::Heap),
            1 => Some(Segment::Data),
            2 => Some(Segment::Control),
            _ => None,
        }
    }

    /// The segment's name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Segment::Heap => "heap",
            Segment::Data => "static data",
            Segment::Control => "control segment",
        }
    }
}
