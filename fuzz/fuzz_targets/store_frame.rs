//! Fuzz target of the control store's frame decoder (`shmem_store::wire`).
//!
//! Owns the properties checked on arbitrary bytes read as a stream of frames, as a store or a
//! PE reads its socket: reading and decoding never panic; every request and reply that decodes
//! encodes again (when its frame is no longer than one value), and reads back as itself. Must
//! never open a socket or start a store: the decoder alone is under test.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shmem_store::wire::{read_frame, Frame, Reply, Request, MAX_VALUE_LEN};

fuzz_target!(|data: &[u8]| {
    let mut stream = data;
    // Stops at the first error: a clean end, a cut frame or a bad length.
    while let Ok(frame) = read_frame(&mut stream) {
        // Within one value's size a decoded CAS's two values fit one value's limit, so
        // encoding cannot refuse it; larger frames may legally decode to what encode refuses.
        let small = frame.payload().len() < MAX_VALUE_LEN;
        if let Ok(request) = Request::from_frame(&frame) {
            match request.encode() {
                Ok(bytes) => {
                    let again = Request::from_frame(&reread(&bytes));
                    assert_eq!(
                        again.as_ref().ok(),
                        Some(&request),
                        "{request:?} reads back"
                    );
                }
                Err(e) => assert!(!small, "decoded {request:?} does not encode: {e}"),
            }
        }
        if let Ok(reply) = Reply::from_frame(&frame) {
            let bytes = match reply.encode() {
                Ok(bytes) => bytes,
                Err(e) => {
                    assert!(!small, "decoded {reply:?} does not encode: {e}");
                    continue;
                }
            };
            let again = Reply::from_frame(&reread(&bytes)).expect("an encoded reply decodes");
            match (&reply, &again) {
                // Encoding cuts a long message at a character boundary.
                (Reply::Error(long), Reply::Error(cut)) => {
                    assert!(
                        long.starts_with(cut.as_str()),
                        "{cut:?} is not a prefix of {long:?}"
                    )
                }
                _ => assert_eq!(again, reply),
            }
        }
    }
});

/// Reads back one encoded frame, which must be read whole.
fn reread(bytes: &[u8]) -> Frame {
    let mut rest = bytes;
    let frame = read_frame(&mut rest).expect("an encoded frame reads back");
    assert!(
        rest.is_empty(),
        "{} bytes left after an encoded frame",
        rest.len()
    );
    frame
}
