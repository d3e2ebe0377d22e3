//! Where the lab's progress, notes and warnings go. The lab's library code
//! never writes to the terminal itself: the command-line front end
//! installs standard error once (`elevator::cli`), and a program using the
//! library may install its own sink or none (then the lines are dropped).

use std::sync::OnceLock;

/// Receives text exactly as it would be printed, newlines included.
pub type Sink = fn(&str);

static SINK: OnceLock<Sink> = OnceLock::new();

/// Install the sink for this process; only the first call takes effect.
pub fn install(sink: Sink) {
    let _ = SINK.set(sink);
}

/// Text without a line end (a progress line finished later).
pub fn part(text: &str) {
    if let Some(sink) = SINK.get() {
        sink(text);
    }
}

/// One whole line.
pub fn line(text: &str) {
    if let Some(sink) = SINK.get() {
        sink(&format!("{text}\n"));
    }
}
