//! The command line: a thin layer over the library (`crate::run` for
//! simulations, `crate::lab` for real devices). Every command declares its
//! options once (`args::Opt`); parsing, "did you mean" suggestions and help
//! come from that one declaration. Only this layer reads the environment,
//! the terminal and files named on the command line, and writes to stdout
//! and stderr — and it reports every write error.

mod args;
mod compare;
mod info;
mod lab;
pub mod published;
mod run;

use std::io::Write;

/// Exit code for bad input (job file, option, device profile, CLI value).
pub const EXIT_BAD_INPUT: i32 = 2;
/// Exit code when no job of the file can be modelled.
pub const EXIT_NOT_MODELLED: i32 = 3;
/// Exit code for a failure that is not the input's fault (I/O, a device).
pub const EXIT_FAILED: i32 = 1;

/// A CLI failure: message and exit code.
#[derive(Debug)]
pub struct CliError {
    pub code: i32,
    pub message: String,
}

impl CliError {
    pub fn bad(message: impl Into<String>) -> CliError {
        CliError {
            code: EXIT_BAD_INPUT,
            message: message.into(),
        }
    }
    pub fn failed(message: impl Into<String>) -> CliError {
        CliError {
            code: EXIT_FAILED,
            message: message.into(),
        }
    }
}

impl From<crate::run::Error> for CliError {
    fn from(e: crate::run::Error) -> CliError {
        let code = match e {
            crate::run::Error::Input(_) => EXIT_BAD_INPUT,
            crate::run::Error::NotModelled(_) => EXIT_NOT_MODELLED,
            crate::run::Error::Hung(_) | crate::run::Error::Internal(_) => EXIT_FAILED,
        };
        CliError {
            code,
            message: e.to_string(),
        }
    }
}

/// A command: its name, one line for the overview, its help and its body.
struct Command {
    name: &'static str,
    summary: &'static str,
    help: fn() -> String,
    run: fn(&[String]) -> Result<(), CliError>,
}

const COMMANDS: &[Command] = &[
    Command {
        name: "run",
        summary: "simulate fio job files on a device model with one I/O scheduler",
        help: run::help,
        run: run::cmd,
    },
    Command {
        name: "compare",
        summary: "simulate one job file under several schedulers: the documents' table",
        help: compare::help,
        run: compare::cmd,
    },
    Command {
        name: "published",
        summary: "every published cell of the documents' E1-E4 beside the simulated one",
        help: published::help,
        run: published::cmd,
    },
    Command {
        name: "schedulers",
        summary: "every scheduler with its tunables, units and defaults; the queue knobs",
        help: info::schedulers_help,
        run: info::schedulers,
    },
    Command {
        name: "devices",
        summary: "the built-in device profiles; --show NAME prints one",
        help: info::devices_help,
        run: info::devices,
    },
    Command {
        name: "lab",
        summary: "run a job file on a real block device under the kernel's schedulers (root, fio)",
        help: lab::lab_help,
        run: lab::cmd_lab,
    },
    Command {
        name: "validate",
        summary: "the lab against the simulator on one job file (root, fio)",
        help: lab::validate_help,
        run: lab::cmd_validate,
    },
    Command {
        name: "calibrate",
        summary: "fit a device profile for the simulator from fio probes (root, fio)",
        help: lab::calibrate_help,
        run: lab::cmd_calibrate,
    },
    Command {
        name: "loop",
        summary: "create or remove file-backed loop devices for the lab (root)",
        help: lab::loop_help,
        run: lab::cmd_loop,
    },
];

fn usage() -> String {
    let mut s = String::from(
        "elevator — a working model of the Linux block I/O stack and its I/O schedulers\n\n\
         USAGE:\n    elevator COMMAND [OPTIONS] ...\n\nCOMMANDS:\n",
    );
    for c in COMMANDS {
        s.push_str(&format!("    {:<12}{}\n", c.name, c.summary));
    }
    s.push_str(&format!(
        "    {:<12}this overview, or a command's help: elevator help COMMAND\n    {:<12}the version\n",
        "help", "version"
    ));
    s.push_str("\nEvery command answers --help. Exit codes: 0 success, 1 failure, 2 bad input\n(the message names file, line and option), 3 no job can be modelled.\n");
    s
}

fn find(name: &str) -> Result<&'static Command, CliError> {
    COMMANDS.iter().find(|c| c.name == name).ok_or_else(|| {
        let hint = crate::job::nearest(name, COMMANDS.iter().map(|c| c.name))
            .map(|s| format!("; did you mean '{s}'?"))
            .unwrap_or_default();
        CliError::bad(format!(
            "unknown command '{name}'{hint} (commands: {}; `elevator help`)",
            COMMANDS
                .iter()
                .map(|c| c.name)
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })
}

/// Write `text` to `path`, or to standard output; every write error is an
/// error (a full disk, a closed pipe, /dev/full).
pub fn emit(text: &str, path: Option<&str>) -> Result<(), CliError> {
    match path {
        Some(p) => {
            std::fs::write(p, text).map_err(|e| CliError::failed(format!("--output {p}: {e}")))
        }
        None => {
            let mut so = std::io::stdout().lock();
            so.write_all(text.as_bytes())
                .and_then(|_| so.flush())
                .map_err(|e| CliError::failed(format!("writing standard output: {e}")))
        }
    }
}

/// A line on standard error (notices, warnings, progress).
pub fn note(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "elevator: {line}");
}

/// Entry point: returns the process exit code.
pub fn main_with_args(args: Vec<String>) -> i32 {
    // The lab's progress, notes and warnings reach the terminal through
    // the front end only.
    crate::lab::say::install(|text| {
        let _ = std::io::stderr().lock().write_all(text.as_bytes());
    });
    let result = match args.split_first() {
        None => Err(CliError::bad(usage())),
        Some((cmd, rest)) => match cmd.as_str() {
            "help" | "-h" | "--help" => match rest.first() {
                None => emit(&usage(), None),
                Some(c) => find(c).and_then(|c| emit(&(c.help)(), None)),
            },
            "-V" | "--version" | "version" => {
                emit(&format!("elevator {}\n", env!("CARGO_PKG_VERSION")), None)
            }
            name => find(name).and_then(|c| (c.run)(rest)),
        },
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            let _ = writeln!(std::io::stderr().lock(), "elevator: error: {}", e.message);
            e.code
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_has_help_naming_it() {
        for c in COMMANDS {
            let h = (c.help)();
            assert!(
                h.contains(&format!("elevator {}", c.name)),
                "{}: {h}",
                c.name
            );
            assert!(h.contains("--help"), "{}", c.name);
        }
    }

    #[test]
    fn unknown_commands_suggest() {
        let Err(e) = find("comapre") else {
            panic!("comapre is no command")
        };
        assert!(
            e.message.contains("did you mean 'compare'"),
            "{}",
            e.message
        );
        assert_eq!(e.code, EXIT_BAD_INPUT);
    }
}
