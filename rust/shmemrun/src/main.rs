//! `shmemrun` (also installed as `oshrun`): starts an OpenSHMEM program as N PEs on this node.
//!
//! This file owns the command line (`args` finds where the options end and the program
//! begins); `preflight` refuses a program linked with another OpenSHMEM library, `job` runs
//! the job, `output` relays tagged output and `signals` turns SIGINT/SIGTERM/SIGHUP into
//! events. The launcher must never leave anything behind (no files, no PEs after it is gone)
//! and never wait on anything without a bound.

mod args;
mod elf;
mod job;
mod output;
mod preflight;
mod signals;

use std::ffi::OsString;
use std::time::Duration;

use clap::error::ErrorKind;
use clap::{CommandFactory, Parser};

/// Largest job this launcher starts (one node).
const MAX_PES: u32 = 4096;

const AFTER_HELP: &str = "\
Options go before the program; everything after it is the program's own. A long option may \
also be written with one dash, as mpirun allows (`-np N`).

Accepted from Open MPI's mpirun and ignored, since they change nothing for shmemrun: \
--allow-run-as-root (shmemrun starts PEs as whoever runs it), --oversubscribe (the number of \
PEs is never limited to the number of cores) and --bind-to none (shmemrun binds no PE to a \
core). Other Open MPI options (--mca, -x, --hostfile, --map-by, ...) are refused with what to \
do instead.";

/// Run an OpenSHMEM program as N processing elements (PEs) on this node.
///
/// Each PE inherits a private socket to the launcher's control store. If a PE fails, the others
/// are stopped and shmemrun exits with the first failing PE's status (128+N for signal N).
#[derive(Debug, Parser)]
#[command(
    name = "shmemrun",
    version,
    override_usage = "shmemrun [OPTIONS] -n N [--] PROGRAM [ARGS]...",
    after_help = AFTER_HELP
)]
struct Cli {
    /// Number of PEs to start (1 to 4096).
    #[arg(
        short = 'n',
        long = "np",
        value_name = "N",
        value_parser = parse_pes,
        allow_hyphen_values = true
    )]
    pes: u32,

    /// Stop the job and exit with status 124 if it runs longer than SECONDS.
    #[arg(
        long,
        value_name = "SECONDS",
        value_parser = parse_seconds,
        allow_hyphen_values = true
    )]
    timeout: Option<f64>,

    /// Prefix every line a PE writes to stdout or stderr with `[pe R] `.
    #[arg(long)]
    tag_output: bool,

    // The text is --help's, where brackets mean optional parts, not rustdoc links.
    #[allow(rustdoc::broken_intra_doc_links)]
    /// Serve the job's control store over TCP at ADDR (tcp://ip[:port] or tcp6://[ip][:port];
    /// port 0: any free port; no port: 8666, or the first free port of
    /// SHMEM_INSTANCE_PORT_RANGE). TLS 1.3 with a throw-away per-job CA, unless
    /// SHMEM_TLS_DISABLE=1. Without it, each PE reaches the store over a private socket.
    #[arg(long, value_name = "ADDR", allow_hyphen_values = true)]
    store: Option<String>,

    /// Program to run, followed by its arguments.
    #[arg(
        value_name = "PROGRAM",
        required = true,
        trailing_var_arg = true,
        num_args = 1..
    )]
    command: Vec<OsString>,
}

/// Why a number on the command line was refused.
#[derive(Debug, PartialEq, thiserror::Error)]
enum ArgError {
    /// `-n` is not a whole number.
    #[error("not a whole number (expected 1 to {MAX_PES})")]
    NotAPeCount,
    /// `-n` is out of range.
    #[error("the number of PEs must be between 1 and {MAX_PES}")]
    PeCountOutOfRange,
    /// A duration is not a number.
    #[error("not a number of seconds")]
    NotSeconds,
    /// A duration is out of range.
    #[error("must be more than 0 and at most 1e9 seconds")]
    SecondsOutOfRange,
}

fn parse_pes(s: &str) -> Result<u32, ArgError> {
    let n: u32 = s.parse().map_err(|_| ArgError::NotAPeCount)?;
    if n == 0 || n > MAX_PES {
        return Err(ArgError::PeCountOutOfRange);
    }
    Ok(n)
}

fn parse_seconds(s: &str) -> Result<f64, ArgError> {
    let secs: f64 = s.parse().map_err(|_| ArgError::NotSeconds)?;
    // Keep it representable as a Duration and an Instant offset (about 30 years).
    if !(secs > 0.0 && secs <= 1e9) {
        return Err(ArgError::SecondsOutOfRange);
    }
    Ok(secs)
}

/// Parses the prepared words. A value an option refuses is one line naming the option and the
/// value, as `args` reports its own refusals; help, version and the errors clap explains over
/// several lines (a missing option, with the usage) stay clap's own.
fn parse(args: Vec<OsString>) -> Result<Cli, args::UsageError> {
    Cli::try_parse_from(args).map_err(|e| match e.kind() {
        ErrorKind::ValueValidation | ErrorKind::InvalidValue => {
            let text = e.render().to_string();
            let line = text.lines().next().unwrap_or_default();
            args::UsageError(line.strip_prefix("error: ").unwrap_or(line).to_string())
        }
        _ => e.exit(),
    })
}

fn main() {
    // Before any thread exists, so that every thread inherits the blocked mask and only the
    // signal thread ever receives these signals.
    let signals = signals::block_job_signals();
    // This process serves the job's store: memory its connections free goes back at once.
    shmem_base::malloc::give_back_large_frees();
    // The PEs' logger: the store that `--store` serves logs the connections it refuses.
    shmem_base::log::install(shmem_base::env::early_log_level());
    let parsed = args::prepare(&Cli::command(), std::env::args_os()).and_then(parse);
    let cli = match parsed {
        Ok(cli) => cli,
        Err(args::UsageError(message)) => {
            eprintln!("shmemrun: {message}");
            std::process::exit(2);
        }
    };
    let mut command = cli.command.into_iter();
    let Some(program) = command.next() else {
        // clap enforces `required = true` with at least one value.
        eprintln!("shmemrun: no program given");
        std::process::exit(2);
    };
    let bindir = std::env::current_exe().ok();
    let bindir = bindir.as_deref().and_then(std::path::Path::parent);
    if let Err(preflight::Refusal(message)) = preflight::check(&program, bindir) {
        // As a shell does for a program it found but cannot run.
        eprintln!("shmemrun: {message}");
        std::process::exit(126);
    }
    let plan = job::Plan {
        n_pes: cli.pes,
        program,
        args: command.collect(),
        timeout: cli.timeout.map(Duration::from_secs_f64),
        timeout_text: cli.timeout.map(|s| s.to_string()).unwrap_or_default(),
        tag_output: cli.tag_output,
        store: cli.store,
    };
    std::process::exit(job::run(plan, signals));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Cli {
        let args = args::prepare(&Cli::command(), args.iter().map(OsString::from)).unwrap();
        Cli::parse_from(args)
    }

    #[test]
    fn cli_parses_trailing_hyphen_arguments() {
        let cli = parse(&["shmemrun", "-n", "2", "prog", "-x", "--y"]);
        assert_eq!(cli.pes, 2);
        assert_eq!(cli.command, ["prog", "-x", "--y"]);
        let cli = parse(&["shmemrun", "--tag-output", "-np", "3", "--", "-p"]);
        assert!(cli.tag_output);
        assert_eq!((cli.pes, cli.command.len()), (3, 1));
        let cli = parse(&[
            "shmemrun",
            "--store",
            "tcp://127.0.0.1:0",
            "-np",
            "2",
            "prog",
        ]);
        assert_eq!(cli.store.as_deref(), Some("tcp://127.0.0.1:0"));
        let cli = parse(&[
            "oshrun",
            "--allow-run-as-root",
            "-np",
            "2",
            "./prog",
            "--foo",
        ]);
        assert_eq!(cli.pes, 2);
        assert_eq!(cli.command, ["./prog", "--foo"]);
    }

    #[test]
    fn every_option_is_known_to_the_prescan() {
        // Each of shmemrun's options, in each spelling, reaches clap and parses.
        let cli = parse(&[
            "shmemrun",
            "-timeout",
            "5",
            "-tag-output",
            "--store=tcp://127.0.0.1:0",
            "-n4",
            "p",
        ]);
        assert_eq!(cli.timeout, Some(5.0));
        assert!(cli.tag_output);
        assert_eq!(cli.pes, 4);
    }

    #[test]
    fn bad_values_are_refused() {
        assert!(parse_pes("0").is_err());
        assert!(parse_pes("4097").is_err());
        assert!(parse_pes("x").is_err());
        assert_eq!(parse_pes("4096"), Ok(4096));
        assert!(parse_seconds("0").is_err());
        assert!(parse_seconds("nan").is_err());
        assert!(parse_seconds("inf").is_err());
        assert_eq!(parse_seconds("0.5"), Ok(0.5));
    }

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
