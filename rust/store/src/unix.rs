//! Unix-socket transport of the control store: frames over a stream socket, with file
//! descriptors passed beside them as `SCM_RIGHTS`.
//!
//! Owns the library's only `sendmsg`/`recvmsg` calls: the store's, and (through
//! [`send_with_fds`] and [`FdReader`]) those of the runtime's dynamic transport, whose workers
//! on one node pass memory descriptors to each other. Must never interpret frames (that is
//! `wire`'s job) and never let a received descriptor leak: each one arrives close-on-exec and
//! owned, and the caller decides whether the frame it came with may carry it. Sends never raise
//! `SIGPIPE` (the host program may not ignore it).

use std::io::{self, IoSlice, IoSliceMut, Read};
use std::mem::MaybeUninit;
use std::os::fd::{BorrowedFd, OwnedFd};

use rustix::io::Errno;
use rustix::net::{
    recvmsg, send, sendmsg, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, ReturnFlags,
    SendAncillaryBuffer, SendAncillaryMessage, SendFlags,
};

/// Room for descriptors in one `recvmsg`: a `sendmsg` carries at most
/// [`FDS_PER_SEND`](crate::wire::FDS_PER_SEND) (a GATHER_FD reply; one for GET_FD), and a read
/// ends after the bytes that carried descriptors; the rest is slack so that a peer sending
/// too many is detected (and the extra ones closed) instead of truncated.
const MAX_FDS_PER_READ: usize = crate::wire::FDS_PER_SEND + 4;

/// A [`Read`] over a Unix stream socket that keeps every descriptor arriving with the bytes.
pub struct FdReader<'a> {
    /// The socket.
    pub sock: BorrowedFd<'a>,
    /// Where received descriptors go, in arrival order.
    pub fds: &'a mut Vec<OwnedFd>,
}

impl Read for FdReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS_PER_READ))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let mut iov = [IoSliceMut::new(buf)];
        let msg = recvmsg(self.sock, &mut iov, &mut control, RecvFlags::CMSG_CLOEXEC)?;
        for message in control.drain() {
            if let RecvAncillaryMessage::ScmRights(fds) = message {
                self.fds.extend(fds);
            }
        }
        if msg.flags.contains(ReturnFlags::CTRUNC) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "peer sent more file descriptors than one frame may carry",
            ));
        }
        Ok(msg.bytes)
    }
}

/// Sends a whole frame, with `fd` attached to its first bytes when given.
///
/// The descriptor rides on the first `sendmsg`, so the receiver has it once it has read the
/// frame's first byte; the rest of a long frame follows with plain sends.
pub(crate) fn send_frame(
    sock: BorrowedFd<'_>,
    frame: &[u8],
    fd: Option<BorrowedFd<'_>>,
) -> io::Result<()> {
    match fd {
        Some(fd) => send_with_fds(sock, frame, &[fd]),
        None => send_with_fds(sock, frame, &[]),
    }
}

/// Sends `bytes` (part of a frame, or all of it) with `fds` (at most
/// [`FDS_PER_SEND`](crate::wire::FDS_PER_SEND), none for a plain send) attached to the first
/// of them.
pub fn send_with_fds(sock: BorrowedFd<'_>, frame: &[u8], fds: &[BorrowedFd<'_>]) -> io::Result<()> {
    const MAX: usize = crate::wire::FDS_PER_SEND;
    if fds.len() > MAX || (!fds.is_empty() && frame.is_empty()) {
        return Err(io::Error::other(format!(
            "{} descriptors on {} bytes: at most {MAX}, on at least one byte",
            fds.len(),
            frame.len()
        )));
    }
    let mut sent = 0;
    if !fds.is_empty() {
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        if !control.push(SendAncillaryMessage::ScmRights(fds)) {
            // The buffer is sized by cmsg_space!(ScmRights(MAX)), and fds.len() <= MAX.
            return Err(io::Error::other("ancillary buffer too small"));
        }
        let iov = [IoSlice::new(frame)];
        sent = loop {
            match sendmsg(sock, &iov, &mut control, SendFlags::NOSIGNAL) {
                Ok(n) => break n,
                Err(Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            }
        };
    }
    while sent < frame.len() {
        match send(sock, &frame[sent..], SendFlags::NOSIGNAL) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => sent += n,
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Seek, SeekFrom, Write};
    use std::os::fd::AsFd;
    use std::os::unix::net::UnixStream;

    #[test]
    fn fd_travels_with_its_frame() {
        let (a, b) = UnixStream::pair().unwrap();
        let memfd = rustix::fs::memfd_create("t", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
        send_frame(a.as_fd(), b"hello", Some(memfd.as_fd())).unwrap();
        send_frame(a.as_fd(), b"world", None).unwrap();
        let mut fds = Vec::new();
        let mut buf = [0u8; 5];
        FdReader {
            sock: b.as_fd(),
            fds: &mut fds,
        }
        .read_exact(&mut buf)
        .unwrap();
        assert_eq!(&buf, b"hello");
        assert_eq!(fds.len(), 1);
        FdReader {
            sock: b.as_fd(),
            fds: &mut fds,
        }
        .read_exact(&mut buf)
        .unwrap();
        assert_eq!(&buf, b"world");
        assert_eq!(fds.len(), 1);

        let flags = rustix::io::fcntl_getfd(&fds[0]).unwrap();
        assert!(flags.contains(rustix::io::FdFlags::CLOEXEC));
        let mut theirs = std::fs::File::from(fds.pop().unwrap());
        let mut ours = std::fs::File::from(memfd);
        ours.write_all(b"shared").unwrap();
        theirs.seek(SeekFrom::Start(0)).unwrap();
        let mut back = String::new();
        theirs.read_to_string(&mut back).unwrap();
        assert_eq!(back, "shared");
    }

    #[test]
    fn many_fds_arrive_in_order_with_their_bytes() {
        use crate::wire::FDS_PER_SEND;
        let (a, b) = UnixStream::pair().unwrap();
        let files: Vec<OwnedFd> = (0..FDS_PER_SEND + 3)
            .map(|i| {
                let fd = rustix::fs::memfd_create("t", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
                rustix::fs::ftruncate(&fd, i as u64).unwrap();
                fd
            })
            .collect();
        let borrowed: Vec<BorrowedFd<'_>> = files.iter().map(|f| f.as_fd()).collect();
        send_with_fds(a.as_fd(), b"head", &[]).unwrap();
        for chunk in borrowed.chunks(FDS_PER_SEND) {
            send_with_fds(a.as_fd(), &vec![0; chunk.len()], chunk).unwrap();
        }
        assert!(send_with_fds(a.as_fd(), &[0; 100], &[borrowed[0]; FDS_PER_SEND + 1]).is_err());
        let mut fds = Vec::new();
        let mut buf = vec![0u8; 4 + files.len()];
        FdReader {
            sock: b.as_fd(),
            fds: &mut fds,
        }
        .read_exact(&mut buf)
        .unwrap();
        assert_eq!(fds.len(), files.len());
        for (i, fd) in fds.iter().enumerate() {
            assert_eq!(rustix::fs::fstat(fd).unwrap().st_size, i as i64);
        }
    }

    #[test]
    fn send_to_closed_peer_is_an_error_not_a_signal() {
        let (a, b) = UnixStream::pair().unwrap();
        drop(b);
        let err = send_frame(a.as_fd(), b"x", None).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
    }
}
