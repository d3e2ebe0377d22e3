//! fio job files: lexer, option table (fio's names, types, units, defaults),
//! parser for files and for fio's command-line form. Errors carry file:line:option.
//!
//! Layout: `lexer` splits text into sections (comments, includes), `options`
//! is fio's option table, `units` reads sizes/times/percentages/arithmetic,
//! `parse` turns sections into `JobSpec`s (globals, numjobs, groups), `cli`
//! handles `--opt=value` argument lists.

mod cli;
mod lexer;
mod options;
mod parse;
pub mod spec;
mod units;

#[cfg(test)]
mod tests;

pub use options::nearest;
pub use spec::*;

use crate::machine::Machine;
use std::path::Path;

/// What a job parse reads besides the text in hand: job and include files,
/// environment variables (`${NAME}`), and the machine (`$ncpus`,
/// `$mb_memory`, the CPUs `cpus_allowed` may name).
#[derive(Clone, Copy)]
pub struct Inputs<'a> {
    /// Contents of a job or include file, by the path named.
    pub read: &'a dyn Fn(&Path) -> Result<String, String>,
    pub env: &'a dyn Fn(&str) -> Option<String>,
    pub machine: &'a Machine,
}

impl Inputs<'static> {
    /// Regular files from disk, no environment, the default machine.
    pub fn plain() -> Inputs<'static> {
        Inputs {
            read: &lexer::read_job_text,
            env: &|_| None,
            machine: &Machine::DEFAULT,
        }
    }
}

/// Whether `name` is an fio job option (or an alias of one).
pub fn is_fio_option(name: &str) -> bool {
    options::lookup(name).is_some()
}

/// The fio option nearest to `name` (for "did you mean").
pub fn nearest_fio_option(name: &str) -> Option<&'static str> {
    options::suggest(name)
}

/// Read a job or include file from disk the way the parser does (regular
/// files only, bounded size).
pub fn read_job_file(path: &Path) -> Result<String, String> {
    lexer::read_job_text(path)
}

/// Parse a job file from disk (through `inputs.read`).
pub fn parse_file(path: &Path, inputs: &Inputs) -> Result<JobFile, JobError> {
    let source = path.display().to_string();
    let text = (inputs.read)(path)
        .map_err(|e| lexer::error(&source, 0, None, format!("cannot read job file: {e}")))?;
    let base_dir = path.parent().unwrap_or(Path::new(""));
    parse_str(&text, &source, base_dir, inputs)
}

/// Parse job-file text; `source` names it in errors; `base_dir` resolves `include`.
pub fn parse_str(
    text: &str,
    source: &str,
    base_dir: &Path,
    inputs: &Inputs,
) -> Result<JobFile, JobError> {
    let sections = lexer::lex(text, source, base_dir, inputs.read)?;
    let mut parser = parse::Parser::new(inputs);
    for sec in &sections {
        parser.section(sec, false)?;
    }
    parser.finish(source)
}

/// Parse fio's command-line form: `--name=x --rw=randread ...`, and job file
/// paths given as positional arguments (they are read and appended in order;
/// `-` is standard input, which the caller's `read` provides).
pub fn parse_args(args: &[String], inputs: &Inputs) -> Result<JobFile, JobError> {
    cli::parse_args(args, inputs)
}
