//! The check of the program before any PE starts: is it linked with another OpenSHMEM library
//! instead of this one?
//!
//! Open MPI installs its own `oshcc` and `oshrun` in the system's bin directory; a program that
//! its `oshcc` built calls Open MPI's `liboshmem`, which does not know this launcher and fails
//! in confusing ways (wrong output, crashes) under it. The program's own `DT_NEEDED` entries
//! tell: such a program names `liboshmem.so` (or another known OpenSHMEM library) and not this
//! shmem's `libshmem.so`. Only the program shmemrun starts is read, never executed or changed;
//! scripts, statically linked programs and files that cannot be read are left to run.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::elf::{self, Linking};

/// Libraries of other OpenSHMEM implementations, by file name up to `.so`, and whose they are.
const OTHER_OPENSHMEMS: &[(&str, &str)] = &[
    ("liboshmem", "Open MPI's OpenSHMEM library"),
    (
        "libsma",
        "another OpenSHMEM library (Sandia OpenSHMEM or Cray SHMEM)",
    ),
];

/// This shmem's library, by file name up to `.so`.
const OURS: &str = "libshmem";

/// The program cannot be run by this launcher, and why (one line).
#[derive(Debug, PartialEq, Eq)]
pub struct Refusal(pub String);

/// Checks the program every PE will run, found the way `execvp` finds it; `bindir` is where
/// shmemrun is (its `oshcc` is named in the message when it is there).
pub fn check(program: &OsStr, bindir: Option<&Path>) -> Result<(), Refusal> {
    let Some(path) = resolve(program) else {
        // Not found: starting it reports that.
        return Ok(());
    };
    let Ok(Linking::Dynamic(needed)) = elf::linking(&path) else {
        return Ok(());
    };
    let stem = |name: &str| name.split(".so").next().unwrap_or("").to_string();
    if needed.iter().any(|n| stem(n) == OURS) {
        return Ok(());
    }
    let Some((library, whose)) = needed.iter().find_map(|n| {
        OTHER_OPENSHMEMS
            .iter()
            .find(|(other, _)| stem(n) == *other)
            .map(|(_, whose)| (n, whose))
    }) else {
        return Ok(());
    };
    let oshcc = bindir
        .map(|dir| dir.join("oshcc"))
        .filter(|p| p.is_file())
        .map_or_else(
            || "this shmem's oshcc".to_string(),
            |p| p.display().to_string(),
        );
    Err(Refusal(format!(
        "'{}' is linked with {library} ({whose}), not with this shmem's {OURS}.so, so it \
         cannot run under shmemrun; build it with {oshcc} (an oshcc in /usr/bin is usually Open \
         MPI's), or start it with its own library's launcher",
        program.to_string_lossy()
    )))
}

/// The file `execvp` would run for `program`: itself when it holds a slash, else the first
/// regular file with an execute bit in `PATH`'s directories.
fn resolve(program: &OsStr) -> Option<PathBuf> {
    if program.as_bytes().contains(&b'/') {
        return Some(PathBuf::from(program));
    }
    if program.is_empty() {
        return None;
    }
    // glibc's execvp searches this when PATH is unset.
    let search = std::env::var_os("PATH").unwrap_or_else(|| OsString::from("/bin:/usr/bin"));
    std::env::split_paths(&search)
        .map(|dir| {
            // An empty entry means the working directory.
            if dir.as_os_str().is_empty() {
                PathBuf::from(".").join(program)
            } else {
                dir.join(program)
            }
        })
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_are_found_as_execvp_finds_them() {
        assert_eq!(resolve(OsStr::new("./x")), Some(PathBuf::from("./x")));
        assert_eq!(resolve(OsStr::new("")), None);
        let sh = resolve(OsStr::new("sh")).expect("sh is on PATH");
        assert!(sh.is_absolute() || sh.starts_with("."), "{sh:?}");
        assert_eq!(resolve(OsStr::new("shmemrun-no-such-program")), None);
    }

    #[test]
    fn ordinary_programs_pass() {
        // Dynamically linked with libc only; a script; a missing file.
        assert_eq!(check(OsStr::new("sh"), None), Ok(()));
        assert_eq!(
            check(std::env::current_exe().unwrap().as_os_str(), None),
            Ok(())
        );
        assert_eq!(check(OsStr::new("/nonexistent/prog"), None), Ok(()));
    }
}
