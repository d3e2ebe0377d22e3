//! fio's command-line job form: `--name=job --rw=randread ...` (one or two
//! dashes), with job files as positional arguments.
//!
//! As in fio: options before the first `--name` form a global section;
//! `--name=global` opens another global section; every other `--name=x`
//! starts job `x`. Job files come after the command-line jobs. The first
//! file inherits the command line's globals; before each later file fio
//! resets the globals to defaults, and that file's first job gets a
//! stonewall (fio separates job files that way). Job indices and reporting
//! groups continue across files. (Checked against fio 3.33.)

use std::path::Path;

use super::lexer::{error, lex, RawOpt, Section};
use super::options::{lookup, suggest, Arg};
use super::parse::Parser;
use super::spec::{JobError, JobFile};
use super::Inputs;

pub(crate) const SOURCE: &str = "<command line>";

fn arg_error(option: Option<&str>, arg: &str, message: String) -> JobError {
    error(SOURCE, 0, option, format!("{message} (argument '{arg}')"))
}

pub(crate) fn parse_args(args: &[String], inputs: &Inputs) -> Result<JobFile, JobError> {
    let mut sections: Vec<Section> = Vec::new();
    let mut files: Vec<&str> = Vec::new();
    let mut only_files = false;
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        i += 1;
        let body = if only_files || arg == "-" || !arg.starts_with('-') {
            files.push(arg);
            continue;
        } else if arg == "--" {
            only_files = true;
            continue;
        } else {
            arg.strip_prefix("--").unwrap_or(&arg[1..])
        };
        let (key, mut value) = match body.split_once('=') {
            Some((k, v)) => (k, Some(v.to_string())),
            None => (body, None),
        };
        let Some(def) = lookup(key) else {
            let msg = match suggest(key) {
                Some(s) => format!("unknown option '{key}'; did you mean '{s}'?"),
                None => format!("unknown option '{key}'"),
            };
            return Err(arg_error(Some(key), arg, msg));
        };
        // getopt semantics: a required value may be the next argument.
        if value.is_none() {
            let next = args.get(i).map(String::as_str);
            match def.arg {
                // fio's booleans take a required argument too, so
                // `--direct --bs=16k` is direct="--bs=16k" (an error).
                Arg::Value | Arg::Bool => match next {
                    Some(n) => {
                        value = Some(n.to_string());
                        i += 1;
                    }
                    None => {
                        return Err(arg_error(
                            Some(key),
                            arg,
                            format!("option '{key}' needs a value"),
                        ));
                    }
                },
                Arg::Flag | Arg::Optional => {}
            }
        }
        if def.name == "name" {
            let name = value.unwrap_or_default().trim().to_string();
            if name.is_empty() {
                return Err(arg_error(
                    Some(key),
                    arg,
                    "option 'name' needs a job name".into(),
                ));
            }
            // fio records --name among the section's options (for
            // --name=global that lands in the global options).
            let name_opt = RawOpt {
                key: key.to_string(),
                value: Some(name.clone()),
                file: SOURCE.to_string(),
                line: 0,
                arg: Some(arg.to_string()),
            };
            sections.push(Section {
                name,
                file: SOURCE.to_string(),
                line: 0,
                opts: vec![name_opt],
            });
            continue;
        }
        if sections.is_empty() {
            sections.push(Section {
                name: "global".to_string(),
                file: SOURCE.to_string(),
                line: 0,
                opts: Vec::new(),
            });
        }
        if let Some(sec) = sections.last_mut() {
            sec.opts.push(RawOpt {
                key: key.to_string(),
                value,
                file: SOURCE.to_string(),
                line: 0,
                arg: Some(arg.to_string()),
            });
        }
    }

    let mut parser = Parser::new(inputs);
    for sec in &sections {
        parser.section(sec, false)?;
    }
    for (idx, file) in files.iter().enumerate() {
        let path = Path::new(file);
        let text = (inputs.read)(path)
            .map_err(|e| error(file, 0, None, format!("cannot read job file: {e}")))?;
        let base = path.parent().unwrap_or(Path::new(""));
        if idx > 0 {
            parser.reset_globals();
        }
        let mut first_job = idx > 0;
        for sec in lex(&text, file, base, inputs.read)? {
            let stonewall = first_job && !sec.is_global();
            if stonewall {
                first_job = false;
            }
            parser.section(&sec, stonewall)?;
        }
    }
    // One job file and no job options on the command line: the jobs are
    // that file's, and its errors name it.
    let source = match (sections.is_empty(), files.as_slice()) {
        (true, [file]) => file,
        _ => SOURCE,
    };
    parser.finish(source)
}
