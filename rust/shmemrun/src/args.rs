//! The words before the program: where shmemrun's options end and the program begins.
//!
//! clap alone would either refuse every option of the program or, allowed hyphen values,
//! take any unknown option (`shmemrun -n 2 --foo ./prog`) for the program. This pass walks the
//! options before the program, refuses an unknown one by name, spells mpirun's one-dash long
//! options (`-np 4`) as clap expects them, drops the Open MPI options that change nothing here,
//! refuses the other known Open MPI options with what to do instead, and marks the program's
//! start with `--` so that clap never reads the program's own arguments. It never rewrites an
//! argument of the program.

use std::ffi::OsString;

/// An Open MPI option that shmemrun knows by name.
struct OpenMpiOption {
    /// Its name without dashes; names longer than one letter may take one dash or two, as
    /// mpirun allows.
    name: &'static str,
    /// What shmemrun does with it.
    rule: Rule,
}

enum Rule {
    /// Accepted and ignored: a flag that asks for nothing shmemrun would do differently.
    Ignore,
    /// Accepted and ignored when its value is one of these; refused otherwise, with the reason.
    IgnoreValues(&'static [&'static str], &'static str),
    /// Refused, with what to do instead.
    Refuse(&'static str),
}

const SETTINGS: &str = "Open MPI's settings do not reach shmem, which reads SHMEM_* environment \
                        variables (SHMEM_INFO=1 lists them)";
const ENVIRONMENT: &str = "every PE inherits shmemrun's environment, so set the variable \
                           before shmemrun";
const ONE_NODE: &str = "shmemrun starts every PE on this node";
const PLACEMENT: &str = "shmemrun starts the PEs on this node in rank order and does not bind \
                         them to cores";
const WORKDIR: &str = "the PEs start in shmemrun's working directory, so change to it first";

/// Open MPI's options that users bring along from `mpirun`/`oshrun`.
///
/// Ignored: `--allow-run-as-root` (shmemrun starts PEs as whoever runs it; there is no root
/// check to lift), `--oversubscribe` (shmemrun never limits PEs to the number of cores) and
/// `--bind-to none` (shmemrun binds nothing). Every other one changes where, how or with what
/// settings PEs run; accepting it silently would run a different job than the one asked for.
const OPEN_MPI: &[OpenMpiOption] = &[
    OpenMpiOption {
        name: "allow-run-as-root",
        rule: Rule::Ignore,
    },
    OpenMpiOption {
        name: "oversubscribe",
        rule: Rule::Ignore,
    },
    OpenMpiOption {
        name: "bind-to",
        rule: Rule::IgnoreValues(&["none"], PLACEMENT),
    },
    OpenMpiOption {
        name: "mca",
        rule: Rule::Refuse(SETTINGS),
    },
    OpenMpiOption {
        name: "gmca",
        rule: Rule::Refuse(SETTINGS),
    },
    OpenMpiOption {
        name: "am",
        rule: Rule::Refuse(SETTINGS),
    },
    OpenMpiOption {
        name: "tune",
        rule: Rule::Refuse(SETTINGS),
    },
    OpenMpiOption {
        name: "x",
        rule: Rule::Refuse(ENVIRONMENT),
    },
    OpenMpiOption {
        name: "hostfile",
        rule: Rule::Refuse(ONE_NODE),
    },
    OpenMpiOption {
        name: "machinefile",
        rule: Rule::Refuse(ONE_NODE),
    },
    OpenMpiOption {
        name: "host",
        rule: Rule::Refuse(ONE_NODE),
    },
    OpenMpiOption {
        name: "H",
        rule: Rule::Refuse(ONE_NODE),
    },
    OpenMpiOption {
        name: "map-by",
        rule: Rule::Refuse(PLACEMENT),
    },
    OpenMpiOption {
        name: "rank-by",
        rule: Rule::Refuse(PLACEMENT),
    },
    OpenMpiOption {
        name: "npernode",
        rule: Rule::Refuse(PLACEMENT),
    },
    OpenMpiOption {
        name: "N",
        rule: Rule::Refuse(PLACEMENT),
    },
    OpenMpiOption {
        name: "report-bindings",
        rule: Rule::Refuse(PLACEMENT),
    },
    OpenMpiOption {
        name: "wdir",
        rule: Rule::Refuse(WORKDIR),
    },
    OpenMpiOption {
        name: "wd",
        rule: Rule::Refuse(WORKDIR),
    },
];

/// One of shmemrun's own options, as clap defines it.
struct Own {
    long: Option<String>,
    short: Option<char>,
    takes_value: bool,
}

/// A command line that cannot be run, with the one line that says why.
#[derive(Debug, PartialEq, Eq)]
pub struct UsageError(pub String);

/// Rewrites `args` (program name first) for clap, whose definition `command` is: shmemrun's own
/// options first (one-dash long spellings made two-dash), the ignored Open MPI options left
/// out, then `--` and the program with its arguments untouched.
pub fn prepare(
    command: &clap::Command,
    args: impl IntoIterator<Item = OsString>,
) -> Result<Vec<OsString>, UsageError> {
    let mut command = command.clone();
    command.build();
    let own: Vec<Own> = command
        .get_arguments()
        .filter(|a| !a.is_positional())
        .map(|a| Own {
            long: a.get_long().map(str::to_string),
            short: a.get_short(),
            takes_value: a.get_action().takes_values(),
        })
        .collect();

    let mut args = args.into_iter();
    let mut out: Vec<OsString> = args.next().into_iter().collect();
    while let Some(arg) = args.next() {
        let text = arg.to_string_lossy().into_owned();
        if text == "--" {
            out.push(arg);
            break;
        }
        if !text.starts_with('-') || text == "-" {
            // The program: everything from here on is its own.
            out.push(OsString::from("--"));
            out.push(arg);
            break;
        }
        let (two_dashes, body) = match text.strip_prefix("--") {
            Some(body) => (true, body),
            None => (false, &text[1..]),
        };
        let (name, inline_value) = match body.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (body, None),
        };

        // A long option, with one dash or two as mpirun allows.
        if two_dashes || name.chars().count() > 1 {
            if let Some(opt) = own.iter().find(|o| o.long.as_deref() == Some(name)) {
                out.push(if two_dashes {
                    arg
                } else {
                    let mut spelled = OsString::from("-");
                    spelled.push(&arg);
                    spelled
                });
                if opt.takes_value && inline_value.is_none() {
                    out.extend(args.next());
                }
                continue;
            }
            if let Some(opt) = OPEN_MPI.iter().find(|o| o.name == name && o.name.len() > 1) {
                apply_open_mpi(opt, &text, inline_value, &mut args)?;
                continue;
            }
            if two_dashes {
                return Err(unknown(&text));
            }
        }

        // Short options: `-n 4`, `-n4`, `-n=4`, or flags together (`-hV`).
        let mut letters = body.chars();
        let Some(first) = letters.next() else {
            return Err(unknown(&text));
        };
        match own.iter().find(|o| o.short == Some(first)) {
            Some(opt) if opt.takes_value => {
                out.push(arg);
                if letters.as_str().is_empty() {
                    out.extend(args.next());
                }
            }
            Some(_) => {
                let all_flags =
                    letters.all(|c| own.iter().any(|o| o.short == Some(c) && !o.takes_value));
                if !all_flags {
                    return Err(unknown(&text));
                }
                out.push(arg);
            }
            None => {
                let letter = first.to_string();
                match OPEN_MPI.iter().find(|o| o.name == letter) {
                    Some(opt) => apply_open_mpi(opt, &text, None, &mut args)?,
                    None => return Err(unknown(&text)),
                }
            }
        }
    }
    out.extend(args);
    Ok(out)
}

/// Drops an ignored Open MPI option (and its value) or refuses it.
fn apply_open_mpi(
    opt: &OpenMpiOption,
    text: &str,
    inline_value: Option<&str>,
    args: &mut impl Iterator<Item = OsString>,
) -> Result<(), UsageError> {
    let refuse = |why: &str| {
        UsageError(format!(
            "'{text}' is an Open MPI option that shmemrun does not support: {why}"
        ))
    };
    match opt.rule {
        Rule::Ignore => Ok(()),
        Rule::IgnoreValues(allowed, why) => {
            let value = match inline_value {
                Some(v) => v.to_string(),
                None => args
                    .next()
                    .map(|v| v.to_string_lossy().into_owned())
                    .ok_or_else(|| UsageError(format!("'{text}' needs a value")))?,
            };
            if allowed.contains(&value.as_str()) {
                Ok(())
            } else {
                let option = text.split_once('=').map_or(text, |(option, _)| option);
                Err(UsageError(format!(
                    "'{option} {value}' is an Open MPI option that shmemrun does not support: \
                     {why}; only '{option} {}' is accepted (and changes nothing)",
                    allowed.join("|")
                )))
            }
        }
        Rule::Refuse(why) => Err(refuse(why)),
    }
}

fn unknown(text: &str) -> UsageError {
    UsageError(format!(
        "unknown option '{text}' (shmemrun --help lists its options; the program's own options \
         go after the program)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Arg, ArgAction};

    /// A definition shaped like shmemrun's.
    fn definition() -> clap::Command {
        clap::Command::new("shmemrun")
            .version("1")
            .arg(Arg::new("pes").short('n').long("np"))
            .arg(Arg::new("timeout").long("timeout"))
            .arg(
                Arg::new("tag")
                    .long("tag-output")
                    .action(ArgAction::SetTrue),
            )
            .arg(Arg::new("store").long("store"))
            .arg(Arg::new("command").num_args(1..).trailing_var_arg(true))
    }

    fn prep(args: &[&str]) -> Result<Vec<String>, String> {
        prepare(&definition(), args.iter().map(OsString::from))
            .map(|v| v.into_iter().map(|a| a.into_string().unwrap()).collect())
            .map_err(|e| e.0)
    }

    #[test]
    fn np_is_rewritten_only_before_the_program() {
        assert_eq!(
            prep(&["shmemrun", "-np", "4", "prog", "-np", "2"]).unwrap(),
            ["shmemrun", "--np", "4", "--", "prog", "-np", "2"]
        );
        assert_eq!(
            prep(&["shmemrun", "-np=4", "--", "-np"]).unwrap(),
            ["shmemrun", "--np=4", "--", "-np"]
        );
        // A value is never taken for an option.
        assert_eq!(
            prep(&["shmemrun", "--timeout", "-np", "x"]).unwrap(),
            ["shmemrun", "--timeout", "-np", "--", "x"]
        );
        assert_eq!(
            prep(&["shmemrun", "-n", "-3", "x"]).unwrap(),
            ["shmemrun", "-n", "-3", "--", "x"]
        );
    }

    #[test]
    fn short_forms_and_one_dash_long_forms() {
        assert_eq!(
            prep(&["shmemrun", "-n4", "-tag-output", "-timeout=5", "p"]).unwrap(),
            ["shmemrun", "-n4", "--tag-output", "--timeout=5", "--", "p"]
        );
        assert_eq!(prep(&["shmemrun", "-hV"]).unwrap(), ["shmemrun", "-hV"]);
        assert_eq!(
            prep(&["shmemrun", "--help"]).unwrap(),
            ["shmemrun", "--help"]
        );
    }

    #[test]
    fn the_program_and_its_arguments_are_left_alone() {
        assert_eq!(
            prep(&["shmemrun", "-n", "2", "./prog", "--foo", "-x", "--", "-n"]).unwrap(),
            ["shmemrun", "-n", "2", "--", "./prog", "--foo", "-x", "--", "-n"]
        );
        assert_eq!(
            prep(&["shmemrun", "-n", "2", "--", "--foo"]).unwrap(),
            ["shmemrun", "-n", "2", "--", "--foo"]
        );
        assert_eq!(
            prep(&["shmemrun", "-n", "1", "-"]).unwrap(),
            ["shmemrun", "-n", "1", "--", "-"]
        );
    }

    #[test]
    fn unknown_options_are_named() {
        for bad in [
            "--foo", "-q", "--np4", "---np", "--tag", "-hq", "--=", "--x",
        ] {
            let err = prep(&["shmemrun", "-n", "2", bad, "./prog"]).unwrap_err();
            assert!(
                err.starts_with(&format!("unknown option '{bad}'")),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn harmless_open_mpi_options_are_dropped() {
        assert_eq!(
            prep(&[
                "oshrun",
                "--allow-run-as-root",
                "-np",
                "2",
                "-oversubscribe",
                "--bind-to",
                "none",
                "-bind-to=none",
                "./prog",
                "--allow-run-as-root"
            ])
            .unwrap(),
            ["oshrun", "--np", "2", "--", "./prog", "--allow-run-as-root"]
        );
    }

    #[test]
    fn other_open_mpi_options_are_refused_with_a_reason() {
        for (bad, why) in [
            (&["--mca", "btl", "self"][..], "SHMEM_INFO=1"),
            (&["-mca", "btl", "self"][..], "SHMEM_INFO=1"),
            (&["-x", "PATH"][..], "environment"),
            (&["--hostfile", "h"][..], "this node"),
            (&["-H", "a,b"][..], "this node"),
            (&["--map-by", "core"][..], "rank order"),
            (&["--wdir", "/tmp"][..], "working directory"),
        ] {
            let mut line = vec!["oshrun", "-np", "2"];
            line.extend_from_slice(bad);
            line.push("./prog");
            let err = prep(&line).unwrap_err();
            assert!(
                err.starts_with(&format!(
                    "'{}' is an Open MPI option that shmemrun does not support: ",
                    bad[0]
                )),
                "{bad:?}: {err}"
            );
            assert!(err.contains(why), "{bad:?}: {err}");
        }
        let err = prep(&["oshrun", "--bind-to", "core", "-np", "2", "./p"]).unwrap_err();
        assert!(
            err.starts_with("'--bind-to core' is an Open MPI option"),
            "{err}"
        );
        assert!(err.contains("'--bind-to none' is accepted"), "{err}");
        let err = prep(&["oshrun", "-bind-to=core", "./p"]).unwrap_err();
        assert!(
            err.starts_with("'-bind-to core' is an Open MPI option"),
            "{err}"
        );
        let err = prep(&["oshrun", "--bind-to"]).unwrap_err();
        assert_eq!(err, "'--bind-to' needs a value");
    }
}
