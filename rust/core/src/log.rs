//! Logging: one `tracing` subscriber writing `shmem: PE <n>: <LEVEL>: <message>` lines to stderr.
//! Installed once, at initialisation or at the first error before it; the PE number is the
//! launcher's rank from the start (so an error before `shmem_init` names its PE too), and the
//! job's once `shmem_init` knows it. Never used on the data path. Also the process's last
//! output: [`exit_process`] flushes every stream and leaves at once.

use std::fmt;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Once;
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

static PE: AtomicI32 = AtomicI32::new(-1);
static INSTALL: Once = Once::new();

/// Records this process's PE number for every following log line.
pub fn set_pe(pe: i32) {
    PE.store(pe, Ordering::Relaxed);
}

struct Line;

impl<S, N> FormatEvent<S, N> for Line
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut w: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let level = match *event.metadata().level() {
            Level::ERROR => "ERROR",
            Level::WARN => "WARN",
            Level::INFO => "INFO",
            Level::DEBUG => "DEBUG",
            Level::TRACE => "TRACE",
        };
        match PE.load(Ordering::Relaxed) {
            pe if pe >= 0 => write!(w, "shmem: PE {pe}: {level}: ")?,
            _ => write!(w, "shmem: {level}: ")?,
        }
        ctx.field_format().format_fields(w.by_ref(), event)?;
        writeln!(w)
    }
}

/// Installs the subscriber at `level` (one of the `SHMEM_LOG_LEVEL` words). Later calls do
/// nothing, so the first level chosen stays.
pub fn install(level: &str) {
    let max = match level {
        "error" => Level::ERROR,
        "info" => Level::INFO,
        "debug" => Level::DEBUG,
        "trace" => Level::TRACE,
        _ => Level::WARN,
    };
    INSTALL.call_once(|| {
        if let Some(rank) = crate::bootstrap::rank_hint() {
            let _ = PE.compare_exchange(-1, rank as i32, Ordering::Relaxed, Ordering::Relaxed);
        }
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(max)
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .event_format(Line)
            .finish();
        // Fails only if the host program installed its own global subscriber first; then its
        // subscriber receives our events, which is what that program asked for.
        let _ = tracing::subscriber::set_global_default(subscriber);
    });
}

/// Exits this process with `status` at once, after flushing what the program printed.
pub(crate) fn exit_process(status: i32) -> ! {
    // Leave without running atexit handlers or static destructors: this may be called from
    // any thread, while other threads (or the caller itself, e.g. a test framework's listener)
    // hold locks those destructors need.
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: fflush(NULL) flushes every C stdio stream; _exit ends the process at once.
    unsafe {
        libc::fflush(std::ptr::null_mut());
        libc::_exit(status)
    }
}
