//! The one argument parser every command uses. A command declares its
//! options once ([`Opt`]); parsing, the "did you mean" suggestions and the
//! OPTIONS part of its `--help` come from that declaration.
//!
//! Accepted forms: `--name=value`, `--name value`, `-x value` (a short
//! name), and `-name=value` / `-name value` (one dash, as fio's own command
//! line takes its options, so a fio command works with `fio` replaced by
//! `elevator run`). `--` ends the options.

use super::CliError;

/// One option of a command.
#[derive(Clone, Copy, Debug)]
pub struct Opt {
    pub long: &'static str,
    pub short: Option<char>,
    /// The value's name in help (`DURATION`); None for a flag.
    pub value: Option<&'static str>,
    pub help: &'static str,
}

/// A flag.
pub const fn flag(long: &'static str, help: &'static str) -> Opt {
    Opt {
        long,
        short: None,
        value: None,
        help,
    }
}

/// An option that takes a value.
pub const fn valued(long: &'static str, value: &'static str, help: &'static str) -> Opt {
    Opt {
        long,
        short: None,
        value: Some(value),
        help,
    }
}

/// The same option with a one-letter name too.
pub const fn with_short(mut o: Opt, short: char) -> Opt {
    o.short = Some(short);
    o
}

/// `-h, --help` (every command has it).
pub const HELP: Opt = with_short(flag("help", "this help"), 'h');

/// What to do with an option the command does not declare.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unknown {
    /// An error naming the nearest declared option.
    Reject,
    /// Hand it on (with its `=value`, if any) in `Parsed::rest`, in order
    /// with the positionals: `run` passes fio's own options to the job
    /// parser. A name that is no fio option either is still an error with a
    /// suggestion from both sets.
    PassFio,
}

/// The result of parsing.
#[derive(Clone, Debug, Default)]
pub struct Parsed {
    /// (long name, value) for valued options, in order; flags with "".
    opts: Vec<(&'static str, String)>,
    /// Positionals and (with `Unknown::PassFio`) fio's options, in order.
    pub rest: Vec<String>,
}

impl Parsed {
    /// The last value given for `long`.
    pub fn get(&self, long: &str) -> Option<&str> {
        self.opts
            .iter()
            .rev()
            .find(|(n, _)| *n == long)
            .map(|(_, v)| v.as_str())
    }
    /// Every value given for `long`, in order.
    pub fn all(&self, long: &str) -> Vec<&str> {
        self.opts
            .iter()
            .filter(|(n, _)| *n == long)
            .map(|(_, v)| v.as_str())
            .collect()
    }
    pub fn flag(&self, long: &str) -> bool {
        self.opts.iter().any(|(n, _)| *n == long)
    }
    pub fn help(&self) -> bool {
        self.flag("help")
    }
}

fn unknown(cmd: &str, arg: &str, name: &str, opts: &[Opt], fio_too: bool) -> CliError {
    let ours = crate::job::nearest(name, opts.iter().map(|o| o.long));
    let fio = if fio_too {
        crate::job::nearest_fio_option(name)
    } else {
        None
    };
    let hint = match (ours, fio) {
        (Some(s), _) => format!("; did you mean '--{s}'?"),
        (None, Some(s)) => format!("; did you mean the fio option '--{s}'?"),
        (None, None) => String::new(),
    };
    CliError::bad(format!(
        "{cmd}: unknown option '{arg}'{hint} (see `elevator {cmd} --help`)"
    ))
}

/// Parse `args` for command `cmd` with its options `opts`.
pub fn parse(cmd: &str, args: &[String], opts: &[Opt], mode: Unknown) -> Result<Parsed, CliError> {
    let mut p = Parsed::default();
    let mut i = 0;
    let mut only_positional = false;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if only_positional || arg == "-" || !arg.starts_with('-') {
            p.rest.push(arg.clone());
            continue;
        }
        if arg == "--" {
            only_positional = true;
            if mode == Unknown::PassFio {
                p.rest.push(arg.clone());
            }
            continue;
        }
        let body = arg.strip_prefix("--").unwrap_or(&arg[1..]);
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (body, None),
        };
        let single_dash = !arg.starts_with("--");
        let found = opts.iter().find(|o| {
            o.long == name || (single_dash && name.len() == 1 && o.short == name.chars().next())
        });
        let Some(o) = found else {
            match mode {
                Unknown::PassFio if crate::job::is_fio_option(name) => {
                    p.rest.push(arg.clone());
                    continue;
                }
                Unknown::PassFio => return Err(unknown(cmd, arg, name, opts, true)),
                Unknown::Reject => return Err(unknown(cmd, arg, name, opts, false)),
            }
        };
        match o.value {
            None => {
                if inline.is_some() {
                    return Err(CliError::bad(format!(
                        "{cmd}: option '--{}' takes no value (got '{arg}')",
                        o.long
                    )));
                }
                p.opts.push((o.long, String::new()));
            }
            Some(meta) => {
                let v = match inline {
                    Some(v) => v,
                    None => {
                        let v = args.get(i).cloned().ok_or_else(|| {
                            CliError::bad(format!(
                                "{cmd}: option '--{}' needs a value ({meta})",
                                o.long
                            ))
                        })?;
                        i += 1;
                        v
                    }
                };
                p.opts.push((o.long, v));
            }
        }
    }
    Ok(p)
}

/// The OPTIONS part of a command's help, from its declarations.
pub fn options_help(opts: &[Opt]) -> String {
    let mut s = String::from("OPTIONS:\n");
    for o in opts {
        let mut left = match o.short {
            Some(c) => format!("-{c}, --{}", o.long),
            None => format!("--{}", o.long),
        };
        if let Some(v) = o.value {
            left.push(' ');
            left.push_str(v);
        }
        let mut lines = o.help.lines();
        let first = lines.next().unwrap_or("");
        if left.len() <= 24 {
            s.push_str(&format!("    {left:<24}{first}\n"));
        } else {
            s.push_str(&format!("    {left}\n    {:<24}{first}\n", ""));
        }
        for l in lines {
            s.push_str(&format!("    {:<24}{l}\n", ""));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPTS: &[Opt] = &[
        valued("scheduler", "NAME", "the scheduler"),
        with_short(valued("output", "FILE", "where"), 'o'),
        flag("force", "do it"),
        HELP,
    ];

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn forms() {
        let p = parse(
            "x",
            &s(&[
                "a",
                "--scheduler=bfq",
                "-o",
                "f",
                "--force",
                "-scheduler",
                "none",
                "b",
            ]),
            OPTS,
            Unknown::Reject,
        )
        .unwrap();
        assert_eq!(p.get("scheduler"), Some("none"));
        assert_eq!(p.all("scheduler"), vec!["bfq", "none"]);
        assert_eq!(p.get("output"), Some("f"));
        assert!(p.flag("force") && !p.help());
        assert_eq!(p.rest, s(&["a", "b"]));
    }

    #[test]
    fn errors_suggest_the_nearest_option() {
        let e = parse("run", &s(&["--schedular", "x"]), OPTS, Unknown::Reject).unwrap_err();
        assert!(
            e.message.contains("did you mean '--scheduler'"),
            "{}",
            e.message
        );
        let e = parse("run", &s(&["--output"]), OPTS, Unknown::Reject).unwrap_err();
        assert!(e.message.contains("needs a value"), "{}", e.message);
        let e = parse("run", &s(&["--force=1"]), OPTS, Unknown::Reject).unwrap_err();
        assert!(e.message.contains("takes no value"), "{}", e.message);
    }

    #[test]
    fn fio_options_pass_through_and_typos_do_not() {
        let p = parse(
            "run",
            &s(&["-rw=randread", "--bs", "4k", "job.fio", "--scheduler=bfq"]),
            OPTS,
            Unknown::PassFio,
        )
        .unwrap();
        assert_eq!(p.rest, s(&["-rw=randread", "--bs", "4k", "job.fio"]));
        let e = parse("run", &s(&["--schedular=bfq"]), OPTS, Unknown::PassFio).unwrap_err();
        assert!(
            e.message.contains("did you mean '--scheduler'"),
            "{}",
            e.message
        );
        let e = parse("run", &s(&["--iodpth=4"]), OPTS, Unknown::PassFio).unwrap_err();
        assert!(
            e.message.contains("fio option '--iodepth'"),
            "{}",
            e.message
        );
    }

    #[test]
    fn help_lists_every_option() {
        let h = options_help(OPTS);
        for o in OPTS {
            assert!(h.contains(&format!("--{}", o.long)), "{h}");
        }
        assert!(h.contains("-o, --output FILE"));
    }
}
