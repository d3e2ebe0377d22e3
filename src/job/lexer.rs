//! Job-file lines → sections of raw `key[=value]` options.
//!
//! Handles comments (`;`/`#` lines, and like fio everything after a `;` or
//! `#` on a line), `[section]` headers, and `include FILE` (resolved against
//! the including file's directory, nested, sections forbidden inside).
//! Values are kept verbatim here; `${VAR}` expansion happens in the parser.

use std::path::{Path, PathBuf};

use super::spec::JobError;

/// Nested includes deeper than this are treated as a loop.
const MAX_INCLUDE_DEPTH: u32 = 16;

/// One `key[=value]` as written, with where it was written.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RawOpt {
    pub key: String,
    /// `None` for a bare `key`.
    pub value: Option<String>,
    pub file: String,
    /// 1-based; 0 on the command line.
    pub line: u32,
    /// The command-line argument this came from, for error messages.
    pub arg: Option<String>,
}

/// A `[name]` section and its options (includes already spliced in).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Section {
    pub name: String,
    pub file: String,
    pub line: u32,
    pub opts: Vec<RawOpt>,
}

impl Section {
    pub(crate) fn is_global(&self) -> bool {
        self.name == "global"
    }
}

pub(crate) fn error(
    file: &str,
    line: u32,
    option: Option<&str>,
    message: impl Into<String>,
) -> JobError {
    JobError {
        file: file.to_string(),
        line,
        option: option.map(str::to_string),
        message: message.into(),
    }
}

/// Largest job or include file we read; real job files are a few KiB.
const MAX_FILE_BYTES: u64 = 16 << 20;

/// A job file and everything it includes may read at most this much text
/// all together, and include at most `MAX_INCLUDED_FILES` files (counting
/// each `include` line that is followed). fio itself has no such limits
/// (only our depth limit above stops a loop), so these are the model's: a
/// file that includes the next level four times, 14 levels deep, would
/// otherwise make 4^14 reads. Real job files include a handful of files.
const MAX_JOB_TEXT_BYTES: u64 = MAX_FILE_BYTES;
const MAX_INCLUDED_FILES: u32 = 1024;

/// What a job file and its includes have used of the limits above.
#[derive(Default)]
struct Budget {
    bytes: u64,
    files: u32,
}

/// Read a job or include file. Only regular files: `include /dev/zero` must
/// fail instead of reading forever.
pub(crate) fn read_job_text(path: &Path) -> Result<String, String> {
    read_at_most(path, MAX_FILE_BYTES)
}

fn read_at_most(path: &Path, max: u64) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    if meta.len() > max {
        return Err(format!("file larger than {max} bytes"));
    }
    std::fs::read_to_string(path).map_err(|e| e.to_string())
}

/// Split job-file text into sections.
pub(crate) fn lex(
    text: &str,
    source: &str,
    base_dir: &Path,
    read: &dyn Fn(&Path) -> Result<String, String>,
) -> Result<Vec<Section>, JobError> {
    let mut sections = Vec::new();
    let mut budget = Budget {
        bytes: text.len() as u64,
        files: 0,
    };
    lex_into(text, source, base_dir, read, 0, &mut budget, &mut sections)?;
    Ok(sections)
}

/// The part of a line that matters: leading/trailing blanks and comments
/// removed. fio cuts a line at its first `;` or `#`, wherever it is.
fn significant(line: &str) -> &str {
    let cut = line.find([';', '#']).unwrap_or(line.len());
    line[..cut].trim()
}

/// Where a line is: the file's name and the line's number.
#[derive(Clone, Copy)]
struct At<'a> {
    source: &'a str,
    line: u32,
}

impl At<'_> {
    fn err(self, option: Option<&str>, message: impl Into<String>) -> JobError {
        error(self.source, self.line, option, message)
    }
}

fn lex_into(
    text: &str,
    source: &str,
    base_dir: &Path,
    read: &dyn Fn(&Path) -> Result<String, String>,
    depth: u32,
    budget: &mut Budget,
    sections: &mut Vec<Section>,
) -> Result<(), JobError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    for (idx, raw) in text.lines().enumerate() {
        let at = At {
            source,
            line: u32::try_from(idx + 1).unwrap_or(u32::MAX),
        };
        let line = significant(raw);
        if line.is_empty() {
            continue;
        }
        if line.starts_with('[') {
            sections.push(section_header(line, at, depth > 0)?);
            continue;
        }
        if let Some(rest) = include_target(line) {
            if sections.is_empty() {
                return Err(at.err(
                    Some("include"),
                    "include before any [section]; put it inside [global] or a job",
                ));
            }
            let (path, inc_text) = read_include(rest, at, base_dir, read, depth, budget)?;
            let inc_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
            let inc_name = path.display().to_string();
            lex_into(
                &inc_text,
                &inc_name,
                &inc_dir,
                read,
                depth + 1,
                budget,
                sections,
            )?;
            continue;
        }
        let (key, value) = match line.split_once('=') {
            // fio keeps blanks after '=' in the value it reports (`rwmixread = 30`
            // shows as " 30" in its JSON); parsers trim.
            Some((k, v)) => (k.trim(), Some(v.trim_end().to_string())),
            None => (line, None),
        };
        if key.is_empty() {
            return Err(at.err(None, format!("missing option name in '{line}'")));
        }
        let Some(section) = sections.last_mut() else {
            return Err(at.err(
                Some(key),
                "option before any [section]; start with [global] or [jobname]",
            ));
        };
        section.opts.push(RawOpt {
            key: key.to_string(),
            value,
            file: source.to_string(),
            line: at.line,
            arg: None,
        });
    }
    Ok(())
}

/// A `[name]` line; included files (`nested`) may not start sections.
fn section_header(line: &str, at: At, nested: bool) -> Result<Section, JobError> {
    if nested {
        return Err(at.err(
            None,
            format!("included files may not contain sections, found '{line}'"),
        ));
    }
    let Some(inner) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) else {
        return Err(at.err(None, format!("section header '{line}' has no closing ']'")));
    };
    let name = inner.trim();
    if name.is_empty() {
        return Err(at.err(None, "empty section name '[]'"));
    }
    if name.contains(['[', ']']) {
        return Err(at.err(
            None,
            format!("bad section header '{line}'; expected [name]"),
        ));
    }
    Ok(Section {
        name: name.to_string(),
        file: at.source.to_string(),
        line: at.line,
        opts: Vec::new(),
    })
}

/// The path and text of `include FILE`, within the depth, file-count and
/// text-size budgets of one job file.
fn read_include(
    rest: &str,
    at: At,
    base_dir: &Path,
    read: &dyn Fn(&Path) -> Result<String, String>,
    depth: u32,
    budget: &mut Budget,
) -> Result<(PathBuf, String), JobError> {
    let fail = |message: String| at.err(Some("include"), message);
    if rest.is_empty() {
        return Err(fail("include needs a file name".into()));
    }
    if depth >= MAX_INCLUDE_DEPTH {
        return Err(fail(format!(
            "includes nested more than {MAX_INCLUDE_DEPTH} deep (include loop?)"
        )));
    }
    let path: PathBuf = if Path::new(rest).is_absolute() {
        PathBuf::from(rest)
    } else {
        base_dir.join(rest)
    };
    if budget.files >= MAX_INCLUDED_FILES {
        return Err(fail(format!(
            "'{}': more than {MAX_INCLUDED_FILES} includes followed for one job \
             file in all (include fan-out?)",
            path.display()
        )));
    }
    budget.files += 1;
    let left = MAX_JOB_TEXT_BYTES.saturating_sub(budget.bytes);
    let limit = left.min(MAX_FILE_BYTES);
    let text = read(&path).and_then(|t| {
        if t.len() as u64 > limit {
            Err(format!("file larger than {limit} bytes"))
        } else {
            Ok(t)
        }
    });
    let text = text.map_err(|e| {
        let why = if left < MAX_FILE_BYTES && e.starts_with("file larger") {
            format!(
                "the job file and its includes may hold at most \
                 {MAX_JOB_TEXT_BYTES} bytes of text in all, and only {left} are left"
            )
        } else {
            e
        };
        fail(format!(
            "cannot read include file '{}': {why}",
            path.display()
        ))
    })?;
    budget.bytes += text.len() as u64;
    Ok((path, text))
}

/// `include FILE` → Some("FILE"); other lines → None.
fn include_target(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("include")?;
    if rest.is_empty() {
        return Some("");
    }
    if rest.starts_with(|c: char| c.is_whitespace()) {
        return Some(rest.trim());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lexed(text: &str) -> Result<Vec<Section>, JobError> {
        lex(text, "t.fio", Path::new("/nonexistent"), &read_job_text)
    }

    #[test]
    fn sections_options_and_comments() {
        let s = lexed(
            "; header comment\n# another\n\n[global]\nbs = 4k ; trailing\nrw=randread # trailing\n\
             time_based\n  [ job one ]  \nsize=1m\n",
        )
        .unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].name, "global");
        assert_eq!(s[0].line, 4);
        let kv: Vec<_> = s[0]
            .opts
            .iter()
            .map(|o| (o.key.as_str(), o.value.as_deref(), o.line))
            .collect();
        assert_eq!(
            kv,
            vec![
                // Blanks after '=' stay, as in fio's reported value.
                ("bs", Some(" 4k"), 5),
                ("rw", Some("randread"), 6),
                ("time_based", None, 7)
            ]
        );
        assert_eq!(s[1].name, "job one");
        assert_eq!(s[1].opts[0].value.as_deref(), Some("1m"));
    }

    #[test]
    fn errors() {
        let e = lexed("bs=4k\n").unwrap_err();
        assert_eq!((e.line, e.option.as_deref()), (1, Some("bs")));
        let e = lexed("[global\n").unwrap_err();
        assert_eq!(e.line, 1);
        assert!(e.message.contains("closing"));
        let e = lexed("[]\n").unwrap_err();
        assert!(e.message.contains("empty"));
        let e = lexed("[a]\ninclude\n").unwrap_err();
        assert_eq!((e.line, e.option.as_deref()), (2, Some("include")));
        let e = lexed("[a]\ninclude missing.fio\n").unwrap_err();
        assert!(e.message.contains("missing.fio"), "{e}");
        let e = lexed("include x.fio\n").unwrap_err();
        assert!(e.message.contains("before any"));
        let e = lexed("[a]\n=5\n").unwrap_err();
        assert_eq!(e.line, 2);
    }

    #[test]
    fn include_keyword_needs_a_separator() {
        assert_eq!(include_target("include foo.fio"), Some("foo.fio"));
        assert_eq!(include_target("include\tfoo.fio"), Some("foo.fio"));
        assert_eq!(include_target("includes=1"), None);
    }
}
