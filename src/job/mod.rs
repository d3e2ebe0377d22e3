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

pub use spec::*;

use std::path::Path;

/// Parse a job file from disk. `env` resolves `${VAR}` (undefined → empty).
pub fn parse_file(path: &Path, env: &dyn Fn(&str) -> Option<String>) -> Result<JobFile, JobError> {
    let source = path.display().to_string();
    let text = lexer::read_job_text(path)
        .map_err(|e| lexer::error(&source, 0, None, format!("cannot read job file: {e}")))?;
    let base_dir = path.parent().unwrap_or(Path::new(""));
    parse_str(&text, &source, base_dir, env)
}

/// Parse job-file text; `source` names it in errors; `base_dir` resolves `include`.
pub fn parse_str(
    text: &str,
    source: &str,
    base_dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<JobFile, JobError> {
    let sections = lexer::lex(text, source, base_dir)?;
    let mut parser = parse::Parser::new(env);
    for sec in &sections {
        parser.section(sec, false)?;
    }
    parser.finish(source)
}

/// Parse fio's command-line form: `--name=x --rw=randread ...`, and job file
/// paths given as positional arguments (they are read and appended in order).
pub fn parse_args(
    args: &[String],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<JobFile, JobError> {
    cli::parse_args(args, env)
}
