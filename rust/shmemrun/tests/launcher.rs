//! Integration tests of the `shmemrun` binary: exit statuses, stopping the job, timeouts,
//! signals, output tagging, environment, argument parsing (Open MPI's options included), the
//! refusal of programs linked with another OpenSHMEM library, and the store's ABORT/BYE rules.
//!
//! PEs are /bin/sh one-liners, or this test binary itself re-run as a PE (see [`pe_entry`]).
//! Time bounds are generous and only catch hangs; each test uses its own temporary directory.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Bound for anything that should take well under a second: it only catches hangs.
const HANG: Duration = Duration::from_secs(30);

fn shmemrun() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_shmemrun"));
    cmd.env_remove("SHMEMRUN_TEST_PE");
    cmd
}

/// Runs to completion, failing the test if it takes longer than [`HANG`].
fn run(cmd: &mut Command) -> (Output, Duration) {
    common::run_watched(cmd, HANG)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A private temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        static COUNT: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "shmemrun-test-{}-{name}-{}",
            std::process::id(),
            COUNT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn path(&self) -> &Path {
        &self.0
    }

    /// Pids written by the PEs as files `pid.<rank>`, once all `n` exist (bounded wait).
    fn pids(&self, n: u32) -> Vec<i32> {
        let start = Instant::now();
        loop {
            let pids: Vec<Option<i32>> = (0..n)
                .map(|r| {
                    let s = std::fs::read_to_string(self.0.join(format!("pid.{r}"))).ok()?;
                    s.trim().parse().ok()
                })
                .collect();
            if pids.iter().all(Option::is_some) {
                return pids.into_iter().flatten().collect();
            }
            assert!(start.elapsed() < HANG, "PEs never wrote their pids");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Whether `pid` is gone (or a zombie nobody reaps, which runs no code).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Waits (bounded) until every pid is gone.
fn assert_all_gone(pids: &[i32]) {
    let start = Instant::now();
    while !pids.iter().all(|&p| gone(p)) {
        assert!(start.elapsed() < HANG, "PEs {pids:?} survived");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Shell snippet that records the PE's pid in `dir/pid.<rank>`.
fn record_pid(dir: &Path) -> String {
    format!("echo $$ > '{}'/pid.$SHMEM_RUN_RANK", dir.display())
}

/// Shell snippet that waits until all `n` PEs have recorded their pids, so that a PE failing
/// after it finds the others running (not merely started).
fn await_pids(dir: &Path, n: u32) -> String {
    format!(
        "r=0; while [ $r -lt {n} ]; do \
           while [ ! -s '{}'/pid.$r ]; do sleep 0.01; done; r=$((r+1)); done",
        dir.display()
    )
}

#[test]
fn all_pes_exit_zero_gives_zero() {
    let (out, _) = run(shmemrun().args(["-n", "4", "true"]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
}

#[test]
fn failing_pe_status_is_propagated_and_the_others_are_stopped() {
    let dir = TempDir::new("status");
    let script = format!(
        "{}; [ $SHMEM_RUN_RANK = 2 ] && {{ {}; exit 3; }}; exec sleep 60",
        record_pid(dir.path()),
        await_pids(dir.path(), 4)
    );
    let (out, took) = run(shmemrun().args(["-n", "4", "sh", "-c", &script]));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("PE 2 (pid "), "{err}");
    assert!(
        err.contains("exited with status 3; stopping the remaining 3 PEs"),
        "{err}"
    );
    assert!(took < Duration::from_secs(20), "stopping took {took:?}");
    assert_all_gone(&dir.pids(4));
}

#[test]
fn signal_death_gives_128_plus_signal() {
    let dir = TempDir::new("signal");
    let script = format!(
        "{}; [ $SHMEM_RUN_RANK = 1 ] && {{ {}; kill -9 $$; }}; exec sleep 60",
        record_pid(dir.path()),
        await_pids(dir.path(), 2)
    );
    let (out, _) = run(shmemrun().args(["-n", "2", "sh", "-c", &script]));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(137), "{err}");
    assert!(err.contains("PE 1 (pid "), "{err}");
    assert!(err.contains("killed by signal 9 (SIGKILL)"), "{err}");
    assert_all_gone(&dir.pids(2));
}

#[test]
fn timeout_gives_124_and_leaves_no_pe() {
    let dir = TempDir::new("timeout");
    let script = format!("{}; exec sleep 60", record_pid(dir.path()));
    let (out, took) = run(shmemrun().args(["--timeout", "0.5", "-n", "2", "sh", "-c", &script]));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(124), "{err}");
    assert!(err.contains("shmemrun: job timed out after 0.5 s"), "{err}");
    assert!(took >= Duration::from_millis(500));
    assert_all_gone(&dir.pids(2));
}

#[test]
fn pes_ignoring_sigterm_get_sigkill() {
    let dir = TempDir::new("ignore-term");
    // `trap '' TERM` is inherited by sleep, so the whole PE ignores SIGTERM.
    let script = format!(
        "trap '' TERM; {}; [ $SHMEM_RUN_RANK = 0 ] && {{ {}; exit 9; }}; sleep 60",
        record_pid(dir.path()),
        await_pids(dir.path(), 3)
    );
    let (out, took) = run(shmemrun().args(["-n", "3", "sh", "-c", &script]));
    assert_eq!(out.status.code(), Some(9), "{}", text(&out.stderr));
    assert!(took < Duration::from_secs(20), "escalation took {took:?}");
    assert_all_gone(&dir.pids(3));
}

#[test]
fn tag_output_prefixes_each_line() {
    let script = "echo out$SHMEM_RUN_RANK; echo err$SHMEM_RUN_RANK >&2; printf 'a\\nb'";
    let (out, _) = run(shmemrun().args(["--tag-output", "-n", "2", "sh", "-c", script]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let mut lines: Vec<String> = text(&out.stdout).lines().map(String::from).collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "[pe 0] a",
            "[pe 0] b",
            "[pe 0] out0",
            "[pe 1] a",
            "[pe 1] b",
            "[pe 1] out1"
        ]
    );
    let mut lines: Vec<String> = text(&out.stderr).lines().map(String::from).collect();
    lines.sort();
    assert_eq!(lines, ["[pe 0] err0", "[pe 1] err1"]);
}

#[test]
fn without_tag_output_pes_share_our_stdio() {
    let (out, _) = run(shmemrun().args(["-n", "2", "sh", "-c", "echo hi"]));
    assert_eq!(text(&out.stdout), "hi\nhi\n");
}

#[test]
fn environment_names_the_pe_and_the_socket() {
    let script = "test -S /proc/self/fd/$SHMEM_RUN_FD || exit 7; \
                  echo $SHMEM_RUN_RANK $SHMEM_RUN_SIZE $SHMEM_RUN_JOBID $SHMEMRUN_TEST_FORWARDED";
    let job = || {
        let (out, _) = run(shmemrun()
            .env("SHMEMRUN_TEST_FORWARDED", "kept")
            .args(["-n", "3", "sh", "-c", script]));
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let mut lines: Vec<Vec<String>> = text(&out.stdout)
            .lines()
            .map(|l| l.split(' ').map(String::from).collect())
            .collect();
        lines.sort();
        assert_eq!(lines.len(), 3);
        for (rank, fields) in lines.iter().enumerate() {
            assert_eq!(fields[0], rank.to_string());
            assert_eq!(fields[1], "3");
            assert_eq!(fields[2], lines[0][2], "one job id per job");
            assert!(!fields[2].is_empty());
            assert_eq!(fields[3], "kept");
        }
        lines[0][2].clone()
    };
    assert_ne!(job(), job(), "job ids are unique");
}

#[test]
fn np_and_double_dash_and_hyphen_arguments() {
    let (out, _) = run(shmemrun().args([
        "-np",
        "2",
        "--",
        "sh",
        "-c",
        "printf '%s\\n' \"$*\"",
        "sh",
        "-n",
        "--x",
    ]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "-n --x\n-n --x\n");
    let (out, _) = run(shmemrun().args([
        "-n",
        "1",
        "sh",
        "-c",
        "printf '%s\\n' \"$*\"",
        "sh",
        "-np",
        "5",
    ]));
    assert_eq!(text(&out.stdout), "-np 5\n");
}

#[test]
fn bad_pe_counts_are_refused_clearly() {
    for bad in ["0", "4097", "many", "-3"] {
        let (out, _) = run(shmemrun().args(["-n", bad, "true"]));
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "-n {bad}: {err}");
        assert!(err.contains(&format!("'{bad}'")), "-n {bad}: {err}");
        assert!(err.contains("--np"), "-n {bad}: {err}");
    }
    let (out, _) = run(shmemrun().args(["--timeout", "0", "-n", "1", "true"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--timeout"));
    let (out, _) = run(shmemrun().args(["-n", "2"]));
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn bad_timeouts_are_refused_in_one_line_naming_the_option_and_value() {
    let dir = TempDir::new("bad-timeout");
    let ran = format!("touch '{}'/ran", dir.path().display());
    for (spelling, value) in [
        (&["--timeout", "-1"][..], "-1"),
        (&["--timeout=-1"][..], "-1"),
        (&["-timeout", "-0.5"][..], "-0.5"),
        (&["--timeout", "-inf"][..], "-inf"),
        (&["--timeout", "-x"][..], "-x"),
        (&["--timeout", "soon"][..], "soon"),
        (&["--timeout", "0"][..], "0"),
    ] {
        let mut line = spelling.to_vec();
        line.extend(["-n", "1", "sh", "-c", &ran]);
        let (out, _) = run(shmemrun().args(&line));
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{spelling:?}: {err}");
        assert!(
            err.starts_with(&format!("shmemrun: invalid value '{value}' for '--timeout")),
            "{spelling:?}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{spelling:?}: {err}");
        assert!(!err.contains("tip"), "{spelling:?}: {err}");
        assert!(
            !dir.path().join("ran").exists(),
            "{spelling:?}: the program ran"
        );
    }
    let (out, _) = run(shmemrun().args(["-n", "-x", "true"]));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("shmemrun: invalid value '-x' for '--np"),
        "{err}"
    );
}

#[test]
fn unknown_options_are_refused_by_name() {
    let dir = TempDir::new("unknown-option");
    let ran = format!("touch '{}'/ran", dir.path().display());
    for bad in ["--foo", "-q", "--tag", "-hq"] {
        let (out, _) = run(shmemrun().args(["-n", "2", bad, "sh", "-c", &ran]));
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {err}");
        assert!(
            err.starts_with(&format!("shmemrun: unknown option '{bad}' (")),
            "{bad}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{bad}: {err}");
        assert!(!dir.path().join("ran").exists(), "{bad}: the program ran");
    }
}

#[test]
fn open_mpi_habits_that_change_nothing_are_accepted() {
    // Started as `oshrun`, the name Open MPI users type.
    let dir = TempDir::new("oshrun");
    let oshrun = dir.path().join("oshrun");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_shmemrun"), &oshrun).unwrap();
    let mut cmd = Command::new(&oshrun);
    cmd.env_remove("SHMEMRUN_TEST_PE").args([
        "--allow-run-as-root",
        "-np",
        "2",
        "-oversubscribe",
        "--bind-to",
        "none",
        "sh",
        "-c",
        "echo pe $SHMEM_RUN_RANK: $*",
        "sh",
        "--allow-run-as-root",
        "--foo",
    ]);
    let (out, _) = run(&mut cmd);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let mut lines: Vec<String> = text(&out.stdout).lines().map(String::from).collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "pe 0: --allow-run-as-root --foo",
            "pe 1: --allow-run-as-root --foo"
        ]
    );
}

#[test]
fn other_open_mpi_options_are_refused_with_what_to_do() {
    for (args, why) in [
        (&["--mca", "btl", "self"][..], "SHMEM_INFO=1"),
        (
            &["-x", "LD_LIBRARY_PATH"][..],
            "inherits shmemrun's environment",
        ),
        (&["--hostfile", "hosts"][..], "on this node"),
        (&["--bind-to", "core"][..], "does not bind"),
    ] {
        let (out, _) = run(shmemrun().args(["-np", "2"]).args(args).arg("true"));
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("is an Open MPI option that shmemrun does not support: "),
            "{args:?}: {err}"
        );
        assert!(err.contains(why), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn program_that_cannot_start_gives_127() {
    let (out, _) = run(shmemrun().args(["-n", "2", "/nonexistent/shmemrun-test-prog"]));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(127), "{err}");
    assert!(err.contains("cannot start PE 0"), "{err}");
    assert!(err.contains("/nonexistent/shmemrun-test-prog"), "{err}");
}

#[test]
fn help_and_version() {
    let (out, _) = run(shmemrun().arg("--help"));
    assert_eq!(out.status.code(), Some(0));
    let help = text(&out.stdout);
    assert!(help.contains("--tag-output"), "{help}");
    for ignored in ["--allow-run-as-root", "--oversubscribe", "--bind-to none"] {
        assert!(help.contains(ignored), "{help}");
    }
    let (out, _) = run(shmemrun().arg("--version"));
    assert!(text(&out.stdout).starts_with("shmemrun "));
}

/// Compiles C `source` with `$CC` (the build's C compiler) and `args`; panics with the
/// compiler's output if it fails.
fn compile(dir: &Path, name: &str, source: &str, args: &[&str]) {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc)
        .current_dir(dir)
        .arg(&src)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run the C compiler '{cc}': {e}"));
    assert!(out.status.success(), "{cc} {name}.c: {}", text(&out.stderr));
}

#[test]
fn program_linked_with_another_openshmem_is_refused() {
    let dir = TempDir::new("other-openshmem");
    let lib = "void start_pes(int npes) { (void)npes; }\n";
    // Open MPI's library, and one standing in for ours, as a linker records them.
    compile(
        dir.path(),
        "oshmem",
        lib,
        &[
            "-shared",
            "-fPIC",
            "-Wl,-soname,liboshmem.so.40",
            "-o",
            "liboshmem.so.40",
        ],
    );
    compile(
        dir.path(),
        "shmem",
        lib,
        &[
            "-shared",
            "-fPIC",
            "-Wl,-soname,libshmem.so.0",
            "-o",
            "libshmem.so.0",
        ],
    );
    let main = "#include <stdio.h>\nvoid start_pes(int);\n\
                int main(void) { start_pes(0); puts(\"ran\"); return 0; }\n";
    let rpath = format!("-Wl,-rpath,{}", dir.path().display());
    let link = |name: &str, libs: &[&str]| {
        let mut args = vec!["-o", name, "-Wl,--no-as-needed"];
        args.extend_from_slice(libs);
        args.push(&rpath);
        compile(dir.path(), "main", main, &args);
    };
    link("theirs", &["./liboshmem.so.40"]);
    link("both", &["./libshmem.so.0", "./liboshmem.so.40"]);

    // By path, and found on PATH as execvp finds it.
    let theirs = dir.path().join("theirs");
    let path = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for (program, path) in [(theirs.to_str().unwrap(), None), ("theirs", Some(&path))] {
        let mut cmd = shmemrun();
        if let Some(path) = path {
            cmd.env("PATH", path);
        }
        let (out, _) = run(cmd.args(["-n", "2", program]));
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(126), "{program}: {err}");
        assert!(
            err.starts_with(&format!(
                "shmemrun: '{program}' is linked with liboshmem.so.40 (Open MPI's OpenSHMEM \
                 library), not with this shmem's libshmem.so"
            )),
            "{program}: {err}"
        );
        assert!(err.contains("oshcc"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(out.stdout.is_empty(), "{program} ran");
    }

    // Linked with ours too, or started by a script: left to run.
    let both = dir.path().join("both");
    let (out, _) = run(shmemrun().args(["-n", "2"]).arg(&both));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "ran\nran\n");
    let (out, _) = run(shmemrun().args(["-n", "1", "sh", "-c"]).arg(&theirs));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "ran\n");
}

/// Starts shmemrun in the background with PEs that record their pid and sleep.
fn background_job(dir: &TempDir, n: u32) -> (Child, Vec<i32>) {
    let script = format!("{}; exec sleep 60", record_pid(dir.path()));
    let child = shmemrun()
        .args(["-n", &n.to_string(), "sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pids = dir.pids(n);
    (child, pids)
}

#[test]
fn sigterm_to_shmemrun_stops_the_job() {
    let dir = TempDir::new("sigterm");
    let (child, pids) = background_job(&dir, 2);
    // SAFETY: plain kill(2) of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(128 + libc::SIGTERM));
    assert!(text(&out.stderr).contains("caught SIGTERM"));
    assert_all_gone(&pids);
}

#[test]
fn kill_9_of_shmemrun_leaves_no_pe() {
    let dir = TempDir::new("kill9");
    let (mut child, pids) = background_job(&dir, 3);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_all_gone(&pids);
}

// ---- PEs that speak to the store: this test binary re-run under shmemrun. ----

/// Runs this test binary as the PEs of a job, in `mode` (see [`pe_entry`]).
fn store_job(n: u32, mode: &str) -> Output {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = shmemrun();
    cmd.env("SHMEMRUN_TEST_PE", mode)
        .args(["-n", &n.to_string()]);
    cmd.arg(exe)
        .args(["pe_entry", "--exact", "--nocapture", "--test-threads=1"]);
    run(&mut cmd).0
}

/// Not a test of its own: the body of a PE when `SHMEMRUN_TEST_PE` says so.
#[test]
fn pe_entry() {
    let Ok(mode) = std::env::var("SHMEMRUN_TEST_PE") else {
        return;
    };
    use shmem_store::Client;
    use std::os::fd::{FromRawFd, OwnedFd};
    let var = |name: &str| -> u32 { std::env::var(name).unwrap().parse().unwrap() };
    let fd = var(shmem_base::env::RUN_FD) as i32;
    let (rank, n) = (
        var(shmem_base::env::RUN_RANK),
        var(shmem_base::env::RUN_SIZE),
    );
    // SAFETY: shmemrun hands this descriptor to us, and nothing else in this process owns it.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let store = Client::connect_inherited(fd, rank, n, HANG).unwrap();
    match mode.as_str() {
        "finalize" => {
            store.barrier(HANG).unwrap();
            let all = store.allgather(&rank.to_le_bytes(), HANG).unwrap();
            assert_eq!(all.len(), n as usize);
            store.goodbye().unwrap();
        }
        "no-finalize" => {
            if rank == 1 {
                std::process::exit(0);
            }
            // Blocks until shmemrun stops the job.
            let _ = store.get("never", HANG);
            std::process::exit(0);
        }
        "abort" | "abort-after-error" | "abort-256" => {
            if rank == 0 {
                let status = if mode == "abort-256" { 256 } else { 5 };
                store.abort(status, mode == "abort-after-error");
            }
            let _ = store.get("never", HANG);
            std::process::exit(0);
        }
        other => panic!("unknown PE mode {other}"),
    }
}

#[test]
fn pes_that_finalize_exit_cleanly() {
    let out = store_job(3, "finalize");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn exit_without_finalize_while_others_run_is_a_failure() {
    let out = store_job(2, "no-finalize");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("PE 1 (pid "), "{err}");
    assert!(
        err.contains("exited without calling shmem_finalize"),
        "{err}"
    );
}

#[test]
fn abort_is_a_global_exit_with_its_status() {
    let out = store_job(3, "abort");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(
        err.contains("PE 0 called shmem_global_exit(5); stopping 2 PEs"),
        "{err}"
    );
}

#[test]
fn the_pe_that_ends_the_job_is_not_counted_among_those_stopped() {
    let out = store_job(2, "abort");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(
        err.contains("PE 0 called shmem_global_exit(5); stopping 1 PE\n"),
        "{err}"
    );
}

#[test]
fn a_non_zero_global_exit_status_never_reads_as_success() {
    // 256 would be 0 once cut to the 8 bits of a process's exit status.
    let out = store_job(2, "abort-256");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(255), "{err}");
    assert!(err.contains("PE 0 called shmem_global_exit(256)"), "{err}");
}

#[test]
fn the_library_stopping_the_job_is_not_called_a_global_exit() {
    let out = store_job(3, "abort-after-error");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(
        err.contains("PE 0 stopped the job after an error (status 5); stopping 2 PEs"),
        "{err}"
    );
    assert!(!err.contains("shmem_global_exit"), "{err}");
}
