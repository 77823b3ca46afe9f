//! The client side of PMI-1, MPICH's "simple PMI" text protocol, over the socket a PMI-1 server
//! (Hydra's proxy, under `mpiexec`) hands each process in `PMI_FD`: one line per request and
//! per answer, `cmd=NAME key=value ...`, so no value may hold a blank, `=` or a newline (values
//! go hex-encoded).
//!
//! Owns that socket once taken over, the handshake (`init`, `get_maxes`, `get_my_kvsname`),
//! `put`, the barrier (`barrier_in`/`barrier_out`), `get` and `finalize`. Must never wait on the
//! server without a deadline: every read and write is bounded by the caller's timeout, and an
//! answer that breaks the protocol is an error naming the request and the line received.

use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::net::SendFlags;

use crate::bootstrap::bits::{hex, unhex};
use crate::error::{Error, LaunchError, Result};

/// Longest answer line accepted; Hydra's longest is a `get_result` of `vallen_max` (1024).
const MAX_LINE: usize = 64 * 1024;
/// Longest nap between `get` attempts while a key is not there yet.
const LONGEST_GET_NAP: Duration = Duration::from_millis(100);

/// A PMI-1 connection past the handshake.
#[derive(Debug)]
pub(crate) struct Pmi1 {
    stream: UnixStream,
    /// Bytes read past the last answer line.
    pending: Vec<u8>,
    /// For messages: "PMI-1 server at PMI_FD=5".
    label: String,
    /// The job's key-value space.
    kvsname: String,
    /// Longest key and value the server takes (`get_maxes`).
    key_max: usize,
    value_max: usize,
    rank: u32,
    finalized: bool,
}

/// Why an answer line does not read as PMI-1.
#[derive(Debug, thiserror::Error)]
enum Malformed {
    /// A word without `=`.
    #[error("'{0}' is not key=value")]
    NotKeyValue(String),
    /// No `cmd=` field.
    #[error("no cmd=")]
    NoCmd,
    /// `rc=` is not a number.
    #[error("rc={0} is not a number")]
    BadRc(String),
}

/// One answer: its command and its `key=value` fields, in order.
#[derive(Debug, PartialEq, Eq)]
struct Answer {
    cmd: String,
    fields: Vec<(String, String)>,
    line: String,
}

impl Answer {
    fn parse(line: &str) -> std::result::Result<Answer, Malformed> {
        let mut cmd = None;
        let mut fields = Vec::new();
        for word in line.split_ascii_whitespace() {
            let (k, v) = word
                .split_once('=')
                .ok_or_else(|| Malformed::NotKeyValue(word.to_string()))?;
            if k == "cmd" && cmd.is_none() {
                cmd = Some(v.to_string());
            } else {
                fields.push((k.to_string(), v.to_string()));
            }
        }
        Ok(Answer {
            cmd: cmd.ok_or(Malformed::NoCmd)?,
            fields,
            line: line.to_string(),
        })
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// `rc=`, 0 when the server leaves it out (Hydra's `barrier_out`, `finalize_ack`).
    fn rc(&self) -> std::result::Result<i64, Malformed> {
        match self.get("rc") {
            None => Ok(0),
            Some(v) => v.parse().map_err(|_| Malformed::BadRc(v.to_string())),
        }
    }
}

impl Pmi1 {
    /// Takes `socket` (the descriptor named by `PMI_FD`, already owned and close-on-exec) and
    /// runs the handshake, bounded by `timeout`. `rank` is this process's `PMI_RANK`.
    pub fn connect(socket: OwnedFd, label: String, rank: u32, timeout: Duration) -> Result<Pmi1> {
        let stream = UnixStream::from(socket);
        let mut pmi = Pmi1 {
            stream,
            pending: Vec::new(),
            label,
            kvsname: String::new(),
            key_max: 0,
            value_max: 0,
            rank,
            finalized: false,
        };
        let deadline = Instant::now() + timeout;
        let init = pmi.request(
            "init",
            "cmd=init pmi_version=1 pmi_subversion=1",
            "response_to_init",
            deadline,
        )?;
        pmi.check_rc("init", &init)?;
        let version = init.get("pmi_version").unwrap_or("");
        if version != "1" {
            return Err(pmi.fail(
                "init",
                format!(
                    "the server speaks PMI version '{version}', not 1 ({})",
                    init.line
                ),
            ));
        }
        let maxes = pmi.request("get_maxes", "cmd=get_maxes", "maxes", deadline)?;
        let number = |pmi: &Pmi1, name: &str| -> Result<usize> {
            maxes
                .get(name)
                .and_then(|v| v.parse().ok())
                .filter(|n| *n > 1)
                .ok_or_else(|| {
                    pmi.fail(
                        "get_maxes",
                        format!("no usable {name}= in '{}'", maxes.line),
                    )
                })
        };
        pmi.key_max = number(&pmi, "keylen_max")?;
        pmi.value_max = number(&pmi, "vallen_max")?;
        let kvs = pmi.request(
            "get_my_kvsname",
            "cmd=get_my_kvsname",
            "my_kvsname",
            deadline,
        )?;
        pmi.kvsname = match kvs.get("kvsname") {
            Some(name) => name.to_string(),
            None => {
                return Err(pmi.fail("get_my_kvsname", format!("no kvsname= in '{}'", kvs.line)))
            }
        };
        tracing::debug!(
            "{}: kvsname={}, keys up to {} bytes, values up to {}",
            pmi.label,
            pmi.kvsname,
            pmi.key_max,
            pmi.value_max
        );
        Ok(pmi)
    }

    /// The server, for messages ("PMI-1 server at PMI_FD=5").
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Stores `value` under this rank's `key`; seen by the others after the next barrier.
    pub fn put(&mut self, key: &str, value: &[u8], timeout: Duration) -> Result<()> {
        let key = self.rank_key(self.rank, key)?;
        let encoded = hex(value);
        // The server's limit counts the terminating NUL of its C buffers.
        if encoded.len() >= self.value_max {
            return Err(self.fail(
                "put",
                format!(
                    "the value of key '{key}' is {} bytes, {} hex-encoded; this server takes \
                     values below {} (vallen_max)",
                    value.len(),
                    encoded.len(),
                    self.value_max
                ),
            ));
        }
        let line = format!("cmd=put kvsname={} key={key} value={encoded}", self.kvsname);
        let answer = self.request("put", &line, "put_result", Instant::now() + timeout)?;
        self.check_rc("put", &answer)
    }

    /// Waits until every process of the job reached the barrier (collective).
    pub fn barrier(&mut self, timeout: Duration) -> Result<()> {
        let answer = self.request(
            "barrier",
            "cmd=barrier_in",
            "barrier_out",
            Instant::now() + timeout,
        )?;
        self.check_rc("barrier", &answer)
    }

    /// The value rank `rank` put under `key`, retried until it is there or `timeout` passed.
    pub fn get(&mut self, rank: u32, key: &str, timeout: Duration) -> Result<Vec<u8>> {
        let key = self.rank_key(rank, key)?;
        let start = Instant::now();
        let deadline = start + timeout;
        let line = format!("cmd=get kvsname={} key={key}", self.kvsname);
        let mut nap = Duration::from_millis(1);
        let mut missing: Option<String> = None;
        loop {
            let now = Instant::now();
            if let Some(last) = missing.filter(|_| now >= deadline) {
                return Err(self.fail(
                    "get",
                    format!("key '{key}' still missing after {:?} ({last})", now - start),
                ));
            }
            let answer = self.request("get", &line, "get_result", deadline)?;
            if answer.rc().map_err(|why| self.fail("get", why))? == 0 {
                let value = answer
                    .get("value")
                    .ok_or_else(|| self.fail("get", format!("no value= in '{}'", answer.line)))?;
                return unhex(value).ok_or_else(|| {
                    self.fail(
                        "get",
                        format!("the value of key '{key}' is not hex: '{value}'"),
                    )
                });
            }
            missing = Some(answer.line);
            std::thread::sleep(nap.min(deadline.saturating_duration_since(Instant::now())));
            nap = (nap * 2).min(LONGEST_GET_NAP);
        }
    }

    /// Says goodbye to the server; the socket closes when `self` goes.
    pub fn finalize(&mut self, timeout: Duration) -> Result<()> {
        if self.finalized {
            return Ok(());
        }
        self.finalized = true;
        let answer = self.request(
            "finalize",
            "cmd=finalize",
            "finalize_ack",
            Instant::now() + timeout,
        )?;
        self.check_rc("finalize", &answer)
    }

    /// `key` of `rank`: PMI-1 has one key space for the whole job.
    fn rank_key(&self, rank: u32, key: &str) -> Result<String> {
        let full = format!("{key}.{rank}");
        if full.is_empty()
            || full.len() >= self.key_max
            || full.bytes().any(|b| b.is_ascii_whitespace() || b == b'=')
        {
            return Err(self.fail(
                "put/get",
                format!(
                    "key '{full}' must be below {} bytes (keylen_max), without blanks or '='",
                    self.key_max
                ),
            ));
        }
        Ok(full)
    }

    fn check_rc(&self, op: &str, answer: &Answer) -> Result<()> {
        match answer.rc().map_err(|why| self.fail(op, why))? {
            0 => Ok(()),
            rc => Err(self.fail(
                op,
                format!("the server answered rc={rc}: '{}'", answer.line),
            )),
        }
    }

    fn fail(&self, op: &str, what: impl std::fmt::Display) -> Error {
        Error::Launch(LaunchError::Service {
            service: "PMI-1",
            what: format!("{}: {op}: {what}", self.label),
        })
    }

    /// Sends `line` and reads the answer, which must be `cmd=want`; both bounded by `deadline`.
    fn request(&mut self, op: &str, line: &str, want: &str, deadline: Instant) -> Result<Answer> {
        self.send(op, line, deadline)?;
        let text = self.read_line(op, deadline)?;
        let answer = Answer::parse(&text)
            .map_err(|why| self.fail(op, format!("malformed answer '{text}': {why}")))?;
        if answer.cmd != want {
            return Err(self.fail(
                op,
                format!("expected cmd={want}, the server answered '{text}'"),
            ));
        }
        Ok(answer)
    }

    fn send(&mut self, op: &str, line: &str, deadline: Instant) -> Result<()> {
        let left = self.time_left(op, deadline)?;
        self.stream
            .set_write_timeout(Some(left))
            .map_err(|e| self.io_error(op, "setting a write timeout on", e))?;
        let mut bytes = line.as_bytes().to_vec();
        bytes.push(b'\n');
        let mut sent = 0;
        while sent < bytes.len() {
            // MSG_NOSIGNAL: a server gone must be an error here, not SIGPIPE ending the PE.
            match rustix::net::send(&self.stream, &bytes[sent..], SendFlags::NOSIGNAL) {
                Ok(n) => sent += n,
                Err(Errno::INTR) => {}
                Err(Errno::PIPE | Errno::CONNRESET) => return Err(self.closed(op)),
                Err(Errno::AGAIN) => {
                    return Err(self.fail(op, "timed out sending to the server"));
                }
                Err(e) => return Err(self.io_error(op, "sending to", e.into())),
            }
        }
        Ok(())
    }

    fn closed(&self, op: &str) -> Error {
        self.fail(
            op,
            "the server closed the connection (the launcher stopped the job or died)",
        )
    }

    fn read_line(&mut self, op: &str, deadline: Instant) -> Result<String> {
        loop {
            if let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=end).collect();
                let line = String::from_utf8_lossy(&line[..end]).trim().to_string();
                if line.is_empty() {
                    continue;
                }
                return Ok(line);
            }
            if self.pending.len() > MAX_LINE {
                return Err(self.fail(op, format!("answer line longer than {MAX_LINE} bytes")));
            }
            let left = self.time_left(op, deadline)?;
            self.stream
                .set_read_timeout(Some(left))
                .map_err(|e| self.io_error(op, "setting a read timeout on", e))?;
            let mut chunk = [0u8; 4096];
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err(self.closed(op)),
                Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return Err(self.closed(op)),
                Ok(n) => self.pending.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    // The loop's deadline check reports it.
                }
                Err(e) => return Err(self.io_error(op, "reading from", e)),
            }
        }
    }

    fn time_left(&self, op: &str, deadline: Instant) -> Result<Duration> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(self.fail(op, "timed out waiting for the server's answer"));
        }
        Ok(left)
    }

    fn io_error(&self, op: &str, doing: &str, e: io::Error) -> Error {
        Error::os(format!("{}: {op}: {doing} the socket", self.label), e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::io::{BufRead, BufReader, Write};

    const T: Duration = Duration::from_secs(5);

    /// A fake server on the other end of a socket pair: answers each request line with
    /// `reply(line)` (None: say nothing), storing puts so gets find them.
    fn fake(
        reply: impl Fn(&str, &mut HashMap<String, String>) -> Option<String> + Send + 'static,
    ) -> OwnedFd {
        let (mine, theirs) = UnixStream::pair().unwrap();
        std::thread::spawn(move || {
            let mut kvs = HashMap::new();
            let mut out = theirs.try_clone().unwrap();
            for line in BufReader::new(theirs).lines() {
                let Ok(line) = line else { return };
                if let Some(answer) = reply(&line, &mut kvs) {
                    if out.write_all(answer.as_bytes()).is_err() {
                        return;
                    }
                }
            }
        });
        OwnedFd::from(mine)
    }

    /// A well-behaved server, as Hydra answers.
    fn hydra(line: &str, kvs: &mut HashMap<String, String>) -> Option<String> {
        let a = Answer::parse(line).unwrap();
        Some(match a.cmd.as_str() {
            "init" => "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n".into(),
            "get_maxes" => "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024\n".into(),
            "get_my_kvsname" => "cmd=my_kvsname kvsname=kvs_42_0\n".into(),
            "put" => {
                kvs.insert(a.get("key")?.into(), a.get("value")?.into());
                "cmd=put_result rc=0 msg=success\n".into()
            }
            "barrier_in" => "cmd=barrier_out\n".into(),
            "get" => match kvs.get(a.get("key")?) {
                Some(v) => format!("cmd=get_result rc=0 msg=success value={v}\n"),
                None => "cmd=get_result rc=-1 msg=key_not_found\n".into(),
            },
            "finalize" => "cmd=finalize_ack\n".into(),
            _ => return None,
        })
    }

    fn connect(fd: OwnedFd, timeout: Duration) -> Result<Pmi1> {
        Pmi1::connect(fd, "PMI-1 server at PMI_FD=9".into(), 0, timeout)
    }

    #[test]
    fn put_barrier_get_finalize() {
        let mut pmi = connect(fake(hydra), T).unwrap();
        assert_eq!(pmi.kvsname, "kvs_42_0");
        assert_eq!((pmi.key_max, pmi.value_max), (64, 1024));
        pmi.put("shmem.job_id", b"a b=c\n\xff", T).unwrap();
        pmi.barrier(T).unwrap();
        assert_eq!(pmi.get(0, "shmem.job_id", T).unwrap(), b"a b=c\n\xff");
        pmi.finalize(T).unwrap();
        pmi.finalize(T).unwrap();
    }

    #[test]
    fn a_missing_key_times_out_naming_it() {
        let mut pmi = connect(fake(hydra), T).unwrap();
        let started = Instant::now();
        let msg = pmi
            .get(3, "shmem.store", Duration::from_millis(200))
            .unwrap_err()
            .to_string();
        assert!(started.elapsed() < Duration::from_secs(3));
        assert!(
            msg.starts_with("PMI-1 server at PMI_FD=9: get")
                && msg.contains("'shmem.store.3'")
                && msg.contains("key_not_found"),
            "{msg}"
        );
    }

    #[test]
    fn a_silent_server_times_out() {
        let started = Instant::now();
        let msg = connect(fake(|_, _| None), Duration::from_millis(200))
            .unwrap_err()
            .to_string();
        assert!(started.elapsed() < Duration::from_secs(3));
        assert_eq!(
            msg,
            "PMI-1 server at PMI_FD=9: init: timed out waiting for the server's answer"
        );
        // A barrier nobody answers.
        let mut pmi = connect(
            fake(|l, kvs| {
                if l == "cmd=barrier_in" {
                    None
                } else {
                    hydra(l, kvs)
                }
            }),
            T,
        )
        .unwrap();
        let msg = pmi
            .barrier(Duration::from_millis(100))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("barrier: timed out"), "{msg}");
    }

    #[test]
    fn malformed_answers_are_named() {
        let cases: [(&str, &str); 5] = [
            (
                "cmd=response_to_init pmi_version=2 rc=0\n",
                "PMI version '2'",
            ),
            (
                "garbage\n",
                "malformed answer 'garbage': 'garbage' is not key=value",
            ),
            ("rc=0\n", "malformed answer 'rc=0': no cmd="),
            (
                "cmd=maxes\n",
                "expected cmd=response_to_init, the server answered 'cmd=maxes'",
            ),
            (
                "cmd=response_to_init pmi_version=1 rc=x\n",
                "rc=x is not a number",
            ),
        ];
        for (answer, want) in cases {
            let answer = answer.to_string();
            let fd = fake(move |_, _| Some(answer.clone()));
            let msg = connect(fd, T).unwrap_err().to_string();
            assert!(msg.contains(want), "{msg} (wanted {want})");
        }
        // A server that refuses the put, and one that has no kvsname.
        let mut pmi = connect(
            fake(|l, kvs| {
                if l.starts_with("cmd=put") {
                    Some("cmd=put_result rc=-1 msg=duplicate_key\n".into())
                } else {
                    hydra(l, kvs)
                }
            }),
            T,
        )
        .unwrap();
        let msg = pmi.put("k", b"v", T).unwrap_err().to_string();
        assert!(msg.contains("put: the server answered rc=-1"), "{msg}");
        let msg = connect(
            fake(|l, kvs| {
                if l == "cmd=get_my_kvsname" {
                    Some("cmd=my_kvsname\n".into())
                } else {
                    hydra(l, kvs)
                }
            }),
            T,
        )
        .unwrap_err()
        .to_string();
        assert!(msg.contains("get_my_kvsname: no kvsname="), "{msg}");
    }

    #[test]
    fn a_closed_socket_and_oversized_values_are_clear_errors() {
        let (mine, theirs) = UnixStream::pair().unwrap();
        drop(theirs);
        let msg = connect(OwnedFd::from(mine), T).unwrap_err().to_string();
        assert!(
            msg.contains("init: the server closed the connection"),
            "{msg}"
        );
        let mut pmi = connect(fake(hydra), T).unwrap();
        let msg = pmi.put("k", &[7u8; 600], T).unwrap_err().to_string();
        assert!(
            msg.contains("600 bytes, 1200 hex-encoded") && msg.contains("vallen_max"),
            "{msg}"
        );
        let msg = pmi.put(&"k".repeat(70), b"v", T).unwrap_err().to_string();
        assert!(msg.contains("keylen_max"), "{msg}");
        let msg = pmi.put("a b", b"v", T).unwrap_err().to_string();
        assert!(msg.contains("without blanks"), "{msg}");
    }

    #[test]
    fn hex_round_trips() {
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(unhex(&hex(&all)).unwrap(), all);
        assert_eq!(unhex("abc"), None);
        assert_eq!(unhex("zz"), None);
        assert_eq!(unhex("é0"), None);
    }
}
