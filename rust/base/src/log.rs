//! Logging: one `tracing` subscriber writing `shmem: PE <n>: <LEVEL>: <message>` lines to stderr,
//! or handing each line to the program's callback (CANN's `aclshmemx_set_extern_logger`).
//! Installed once, at initialisation or at the first error before it; the PE number is the
//! launcher's rank from the start when the runtime registered how to read it
//! ([`set_rank_hint`]: so an error before `shmem_init` names its PE too), and the job's once
//! `shmem_init` knows it. The level is read at each event, so it can change at run time
//! ([`set_level`], CANN's `aclshmemx_set_log_level`). Never used on the data path. Also the
//! process's last output: [`exit_process`] flushes every stream and leaves at once.

use std::ffi::{c_char, c_int, CString};
use std::fmt::{self, Write as _};
use std::io::Write as _;
use std::sync::atomic::{AtomicI32, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Once, OnceLock};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Level, Metadata, Subscriber};

static PE: AtomicI32 = AtomicI32::new(-1);
static INSTALL: Once = Once::new();
/// The most verbose level shown (see [`rank`]); [`UNSET`] until a level is chosen.
static MAX: AtomicU8 = AtomicU8::new(UNSET);
/// The program's callback (a [`LogSink`]), 0 for stderr.
static SINK: AtomicUsize = AtomicUsize::new(0);
const UNSET: u8 = u8::MAX;
/// The launcher's rank of this process, asked once when the subscriber is installed
/// ([`set_rank_hint`]).
static RANK_HINT: OnceLock<fn() -> Option<u32>> = OnceLock::new();

/// A C callback receiving each log line: CANN's level (0 debug, 1 info, 2 warn, 3 error) and
/// the line without its level word and newline, as a NUL-terminated string valid for the call.
pub type LogSink = unsafe extern "C" fn(level: c_int, msg: *const c_char);

/// Records this process's PE number for every following log line.
pub fn set_pe(pe: i32) {
    PE.store(pe, Ordering::Relaxed);
}

/// 0 error, 1 warn, 2 info, 3 debug, 4 trace: an event shows when its rank is at most [`MAX`].
fn rank(level: &Level) -> u8 {
    match *level {
        Level::ERROR => 0,
        Level::WARN => 1,
        Level::INFO => 2,
        Level::DEBUG => 3,
        Level::TRACE => 4,
    }
}

/// The rank of one of the `SHMEM_LOG_LEVEL` words (`warn` for any other).
fn word_rank(word: &str) -> u8 {
    match word {
        "error" => 0,
        "info" => 2,
        "debug" => 3,
        "trace" => 4,
        _ => 1,
    }
}

/// Routes every following line to `sink`, or back to stderr with `None` (the runtime's entry
/// for CANN's `aclshmemx_set_extern_logger`); the callback may be called from any thread of
/// the process, one line at a time per thread.
pub fn set_sink(sink: Option<LogSink>) {
    install_subscriber();
    SINK.store(sink.map_or(0, |f| f as usize), Ordering::Release);
}

/// Where the subscriber learns, when it is installed, the PE number a launcher gave this
/// process: the runtime registers its reading of the launchers' variables here, since which
/// launcher started the process is the runtime's knowledge. The first registration stays.
pub fn set_rank_hint(hint: fn() -> Option<u32>) {
    let _ = RANK_HINT.set(hint);
}

/// Shows lines up to `level` (one of the `SHMEM_LOG_LEVEL` words) from now on, whatever was
/// chosen before.
pub fn set_level(level: &str) {
    MAX.store(word_rank(level), Ordering::Relaxed);
    install_subscriber();
}

/// Installs the subscriber at `level` (one of the `SHMEM_LOG_LEVEL` words) unless a level was
/// already chosen (an earlier call, or [`set_level`]), which then stays.
pub fn install(level: &str) {
    let _ = MAX.compare_exchange(
        UNSET,
        word_rank(level),
        Ordering::Relaxed,
        Ordering::Relaxed,
    );
    install_subscriber();
}

fn install_subscriber() {
    INSTALL.call_once(|| {
        if let Some(rank) = RANK_HINT.get().and_then(|hint| hint()) {
            let _ = PE.compare_exchange(-1, rank as i32, Ordering::Relaxed, Ordering::Relaxed);
        }
        // Fails only if the host program installed its own global subscriber first; then its
        // subscriber receives our events, which is what that program asked for.
        let _ = tracing::subscriber::set_global_default(Lines);
    });
}

/// The subscriber: no spans, each enabled event written as one line.
struct Lines;

/// Collects an event's message, and ` name=value` for each other field, to follow it.
#[derive(Default)]
struct Fields {
    message: String,
    rest: String,
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let _ = if field.name() == "message" {
            write!(self.message, "{value:?}")
        } else {
            write!(self.rest, " {}={value:?}", field.name())
        };
    }
}

impl Subscriber for Lines {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        // The level can change at run time: ask `enabled` at each event.
        Interest::sometimes()
    }

    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        let max = match MAX.load(Ordering::Relaxed) {
            UNSET => 1,
            m => m,
        };
        rank(metadata.level()) <= max
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let level = event.metadata().level();
        let mut line = match PE.load(Ordering::Relaxed) {
            pe if pe >= 0 => format!("shmem: PE {pe}: "),
            _ => String::from("shmem: "),
        };
        let prefix = line.len();
        let mut fields = Fields::default();
        event.record(&mut fields);
        line.push_str(&fields.message);
        line.push_str(&fields.rest);
        match SINK.load(Ordering::Acquire) {
            0 => {
                let word = match *level {
                    Level::ERROR => "ERROR",
                    Level::WARN => "WARN",
                    Level::INFO => "INFO",
                    Level::DEBUG => "DEBUG",
                    Level::TRACE => "TRACE",
                };
                line.insert_str(prefix, &format!("{word}: "));
                line.push('\n');
                let _ = std::io::stderr().lock().write_all(line.as_bytes());
            }
            addr => {
                let cann = match *level {
                    Level::ERROR => 3,
                    Level::WARN => 2,
                    Level::INFO => 1,
                    Level::DEBUG | Level::TRACE => 0,
                };
                // A message cannot hold NUL in C: cut it there.
                line.truncate(line.find('\0').unwrap_or(line.len()));
                let text = CString::new(line).unwrap_or_default();
                // SAFETY: `addr` is nonzero, so it was stored from a `LogSink` by
                // `shmemi_log_set_sink`, and a function pointer round-trips through usize;
                // the program promised a callback valid until it replaces it.
                let sink: LogSink = unsafe { std::mem::transmute::<usize, LogSink>(addr) };
                // SAFETY: `text` is a NUL-terminated string alive for the call.
                unsafe { sink(cann, text.as_ptr()) };
            }
        }
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

/// The exit status a process can report for `status` (`shmem_global_exit`'s, a PE's): its low
/// 8 bits, as the kernel keeps them, except that a non-zero status whose low 8 bits are 0
/// (256, -256...) becomes 255, so that a job that asked to fail never reads as a success.
pub fn exit_code(status: i32) -> i32 {
    match status & 0xff {
        0 if status != 0 => 255,
        low => low,
    }
}

/// Exits this process with `status` ([`exit_code`]) at once, after flushing what the program
/// printed.
pub fn exit_process(status: i32) -> ! {
    // Leave without running atexit handlers or static destructors: this may be called from
    // any thread, while other threads (or the caller itself, e.g. a test framework's listener)
    // hold locks those destructors need.
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: fflush(NULL) flushes every C stdio stream; _exit ends the process at once.
    unsafe {
        libc::fflush(std::ptr::null_mut());
        libc::_exit(exit_code(status))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_keep_the_low_byte_but_never_turn_failure_into_success() {
        assert_eq!(exit_code(0), 0);
        assert_eq!(exit_code(3), 3);
        assert_eq!(exit_code(255), 255);
        assert_eq!(exit_code(256), 255);
        assert_eq!(exit_code(512), 255);
        assert_eq!(exit_code(257), 1);
        assert_eq!(exit_code(-1), 255);
        assert_eq!(exit_code(-256), 255);
        assert_eq!(exit_code(i32::MIN), 255);
    }

    #[test]
    fn levels_rank_from_error_to_trace() {
        assert_eq!(word_rank("error"), rank(&Level::ERROR));
        assert_eq!(word_rank("warn"), rank(&Level::WARN));
        assert_eq!(word_rank("info"), rank(&Level::INFO));
        assert_eq!(word_rank("debug"), rank(&Level::DEBUG));
        assert_eq!(word_rank("trace"), rank(&Level::TRACE));
        assert_eq!(word_rank("bogus"), rank(&Level::WARN));
    }

    #[test]
    fn fields_put_the_message_first() {
        let mut f = Fields::default();
        let cs = tracing::callsite::Identifier(&CALLSITE);
        let set = tracing::field::FieldSet::new(&["rank", "message"], cs);
        let mut names = set.iter();
        let rank = names.next().expect("rank");
        let message = names.next().expect("message");
        f.record_debug(&rank, &3);
        f.record_debug(&message, &format_args!("store: gone"));
        assert_eq!(format!("{}{}", f.message, f.rest), "store: gone rank=3");
    }

    struct Callsite;
    static CALLSITE: Callsite = Callsite;
    impl tracing::callsite::Callsite for Callsite {
        fn set_interest(&self, _: Interest) {}
        fn metadata(&self) -> &Metadata<'_> {
            unreachable!("not registered")
        }
    }
}
