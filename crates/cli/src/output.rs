//! Writing results: JSON for scripts, short tables and text for people.
//! Stdout carries data only; a closed pipe (`nexo tools ... | head`) ends
//! quietly. Tables fit the terminal's width; the labels of what goes to
//! stderr (`error:`, `hint:`, `warning:`) are coloured when stderr is a
//! terminal and `NO_COLOR` is not set.

use std::io::{IsTerminal, Write};

use crate::env;

use comfy_table::{ContentArrangement, Table, presets};

/// Writes `text` to stdout; a broken pipe is not an error.
pub fn data(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
}

/// Pretty JSON of an MCP result object, then a newline.
pub fn json<T: serde::Serialize>(value: &T) {
    match serde_json::to_string_pretty(value) {
        Ok(text) => data(&format!("{text}\n")),
        Err(error) => status(&format!("error: cannot encode the result: {error}")),
    }
}

/// A line for the person at the terminal (stderr).
pub fn status(line: &str) {
    let _ = writeln!(std::io::stderr(), "{}", paint_labels(line, colour()));
}

/// Asks a person a yes-or-no question on the terminal: `question` on
/// stderr, the answer read from stdin; anything but `y` or `yes` is no.
/// `None` when stdin or stderr is no terminal: there is no one to ask, and
/// a script's piped input is never taken for a person's answer.
pub fn ask(question: &str) -> Option<bool> {
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return None;
    }
    let _ = write!(std::io::stderr(), "{question} [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer).ok()?;
    Some(matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}

/// Whether a progress bar is drawn on the current stderr line.
static PROGRESS_DRAWN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A server's log message or progress, on stderr while a call runs: logs
/// dimmed on a terminal, progress as a bar redrawn in place on a terminal
/// and as plain lines otherwise; a task's status, like progress, as a line
/// redrawn in place on a terminal.
pub fn notice(notice: nexo_client::handler::Notice) {
    use nexo_client::handler::Notice;
    use std::sync::atomic::Ordering;
    let terminal = std::io::stderr().is_terminal();
    let mut stderr = std::io::stderr().lock();
    if PROGRESS_DRAWN.swap(false, Ordering::Relaxed) {
        let _ = write!(stderr, "\r\x1b[K");
    }
    match notice {
        Notice::Log {
            level,
            logger,
            text,
        } => {
            let from = logger
                .map(|logger| format!(" {logger}"))
                .unwrap_or_default();
            let line = printable(&format!("[{level}{from}] {text}")).into_owned();
            if colour() {
                let _ = writeln!(stderr, "\x1b[2m{line}\x1b[0m");
            } else {
                let _ = writeln!(stderr, "{line}");
            }
        }
        Notice::Progress {
            progress,
            total,
            message,
        } => {
            let message = message
                .map(|message| format!(" {message}"))
                .unwrap_or_default();
            match total.filter(|total| *total > 0.0) {
                Some(total) if terminal => {
                    const BAR: usize = 30;
                    let done = (progress / total).clamp(0.0, 1.0);
                    // The bar's cells are whole characters.
                    #[expect(
                        clippy::cast_possible_truncation,
                        clippy::cast_sign_loss,
                        reason = "a fraction of 30, clamped to 0..=1"
                    )]
                    let filled = (done * BAR as f64).round() as usize;
                    let _ = write!(
                        stderr,
                        "[{}{}] {:>3.0}%{}",
                        "#".repeat(filled),
                        " ".repeat(BAR - filled),
                        done * 100.0,
                        printable(&message)
                    );
                    let _ = stderr.flush();
                    PROGRESS_DRAWN.store(true, Ordering::Relaxed);
                }
                Some(total) => {
                    let message = printable(&message);
                    let _ = writeln!(stderr, "progress: {progress} of {total}{message}");
                }
                None => {
                    let message = printable(&message);
                    let _ = writeln!(stderr, "progress: {progress}{message}");
                }
            }
        }
        Notice::Task {
            task,
            status,
            message,
        } => {
            let status = serde_json::to_value(status)
                .ok()
                .and_then(|status| status.as_str().map(str::to_owned))
                .unwrap_or_default();
            let message = message
                .map(|message| format!(": {message}"))
                .unwrap_or_default();
            let line = printable(&format!("task {task} {status}{message}")).into_owned();
            if terminal {
                let _ = write!(stderr, "{line}");
                let _ = stderr.flush();
                PROGRESS_DRAWN.store(true, Ordering::Relaxed);
            } else {
                let _ = writeln!(stderr, "{line}");
            }
        }
        // A live line on a terminal (wiped above once it is ready); off a
        // terminal, a line every ten seconds.
        Notice::Starting {
            command,
            elapsed,
            ready,
        } => {
            let seconds = elapsed.as_secs();
            let line = printable(&format!("starting `{command}`: {seconds} s")).into_owned();
            if ready {
                return;
            }
            if terminal {
                let _ = write!(stderr, "{line}");
                let _ = stderr.flush();
                PROGRESS_DRAWN.store(true, Ordering::Relaxed);
            } else if seconds % 10 == 0 {
                let _ = writeln!(stderr, "{line}");
            }
        }
    }
}

/// Draws `text` as the one live line on stderr (a terminal's), replacing
/// the last one.
pub fn live_line(text: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = write!(stderr, "\r\x1b[K{text}");
    let _ = stderr.flush();
    PROGRESS_DRAWN.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Wipes the live line, if one is drawn.
pub fn clear_live_line() {
    if PROGRESS_DRAWN.swap(false, std::sync::atomic::Ordering::Relaxed) {
        let _ = write!(std::io::stderr(), "\r\x1b[K");
    }
}

/// Ends a progress bar's line, if one is drawn.
pub fn end_progress() {
    if PROGRESS_DRAWN.swap(false, std::sync::atomic::Ordering::Relaxed) {
        let _ = writeln!(std::io::stderr());
    }
}

/// `text` from a peer (a server, a model) made safe to print on a
/// terminal: control characters but newline and tab (escape sequences that
/// could move the cursor, rewrite what was shown, set the title or the
/// clipboard) are shown as `\u{..}` instead of acting.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let acts = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(acts) {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(
        text.chars()
            .map(|c| {
                if acts(c) {
                    c.escape_unicode().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect(),
    )
}

/// Whether stdout gets colour: a terminal, and no `NO_COLOR`.
pub fn colour_stdout() -> bool {
    env::var(env::NO_COLOR).is_none() && std::io::stdout().is_terminal()
}

/// Whether stderr gets colour: a terminal, and no `NO_COLOR`.
pub fn colour() -> bool {
    env::var(env::NO_COLOR).is_none() && std::io::stderr().is_terminal()
}

/// `text` with the label that starts each of its lines (`error:`,
/// `hint:`, `warning:`, `caused by:`) coloured, when `colour` says so.
pub fn paint_labels(text: &str, colour: bool) -> String {
    const LABELS: [(&str, &str); 4] = [
        ("error:", "\x1b[1;31m"),
        ("warning:", "\x1b[1;33m"),
        ("hint:", "\x1b[1;36m"),
        ("  caused by:", "\x1b[2m"),
    ];
    if !colour {
        return text.to_owned();
    }
    text.split_inclusive('\n')
        .map(
            |line| match LABELS.iter().find(|(label, _)| line.starts_with(label)) {
                Some((label, style)) => {
                    format!("{style}{label}\x1b[0m{}", &line[label.len()..])
                }
                None => line.to_owned(),
            },
        )
        .collect()
}

/// The width tables may take: the terminal's, when stdout is one, else
/// `$COLUMNS`; `None` when neither says (a pipe: no limit but the cells').
fn width() -> Option<usize> {
    if std::io::stdout().is_terminal()
        && let Some((terminal_size::Width(columns), _)) = terminal_size::terminal_size()
    {
        return Some(usize::from(columns));
    }
    env::var(env::COLUMNS).and_then(|columns| columns.parse().ok())
}

/// The narrowest a table's last column (a description) is cut to.
const NARROWEST_DESCRIPTION: usize = 20;
/// A description's length in a table when the width is unknown.
const DESCRIPTION_WITHOUT_WIDTH: usize = 72;

/// What a table does with a last cell too long for the width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overflow {
    /// Cut it, with `…` (a description, whose whole is a command away).
    Cut,
    /// Wrap it on more lines, at spaces (an error and its hint, which are
    /// read whole).
    Wrap,
}

/// Fits each row's last cell to what the width leaves.
fn fit(header: &[&str], rows: &mut [Vec<String>], overflow: Overflow) {
    let columns = header.len();
    let mut widths: Vec<usize> = header.iter().map(|title| title.chars().count()).collect();
    for row in rows.iter() {
        for (column, cell) in row.iter().enumerate().take(columns) {
            widths[column] = widths[column].max(cell.chars().count());
        }
    }
    let others: usize = widths.iter().take(columns.saturating_sub(1)).sum();
    let gaps = 2 * columns.saturating_sub(1);
    let room = match width() {
        Some(width) => width
            .saturating_sub(others + gaps)
            .max(NARROWEST_DESCRIPTION),
        None => DESCRIPTION_WITHOUT_WIDTH,
    };
    for row in rows.iter_mut() {
        let Some(last) = row.last_mut() else {
            continue;
        };
        match overflow {
            Overflow::Cut if last.chars().count() > room => {
                let mut short: String = last.chars().take(room.saturating_sub(1)).collect();
                short.push('…');
                *last = short;
            }
            Overflow::Cut => {}
            Overflow::Wrap => *last = wrap(last, room),
        }
    }
}

/// `text` on lines of at most `width` characters, broken at spaces (a
/// longer word alone on its lines, cut); its own line breaks kept.
fn wrap(text: &str, width: usize) -> String {
    let width = width.max(1);
    let mut lines = Vec::new();
    for paragraph in text.lines() {
        let mut line = String::new();
        for word in paragraph.split(' ') {
            let mut word: Vec<char> = word.chars().collect();
            while word.len() > width {
                if !line.is_empty() {
                    lines.push(std::mem::take(&mut line));
                }
                lines.push(word.drain(..width).collect());
            }
            let word: String = word.into_iter().collect();
            let length = line.chars().count();
            if length > 0 && length + 1 + word.chars().count() > width {
                lines.push(std::mem::take(&mut line));
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(&word);
        }
        lines.push(line);
    }
    lines.join("\n")
}

/// A plain table: a header row and aligned columns, no borders or colour;
/// its last column is fitted to the terminal's width as `overflow` says.
pub fn table(header: &[&str], mut rows: Vec<Vec<String>>, overflow: Overflow) -> String {
    fit(header, &mut rows, overflow);
    let mut table = Table::new();
    table
        .load_preset(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(header.to_vec());
    for row in rows {
        table.add_row(row);
    }
    let text: Vec<String> = table
        .to_string()
        .lines()
        .map(|line| line.trim_end().strip_prefix(' ').unwrap_or(line).to_owned())
        .collect();
    format!("{}\n", text.join("\n"))
}

/// Aligned columns without a header (the leading blanks of the first cell
/// kept), for lists inside a text.
pub fn rows(rows: Vec<Vec<String>>) -> String {
    let mut table = Table::new();
    table
        .load_preset(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled);
    for row in rows {
        table.add_row(row);
    }
    let text: Vec<String> = table
        .to_string()
        .lines()
        .map(|line| line.trim_end().strip_prefix(' ').unwrap_or(line).to_owned())
        .collect();
    format!("{}\n", text.join("\n"))
}

/// The first line of a description, for a table cell ([`table`] cuts it
/// to the width).
pub fn summary(text: Option<&str>) -> String {
    text.unwrap_or_default()
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_text_cannot_drive_the_terminal() {
        assert_eq!(printable("plain\ttext\n"), "plain\ttext\n");
        assert_eq!(
            printable("\x1b]0;owned\x07\u{9b}2J\r"),
            "\\u{1b}]0;owned\\u{7}\\u{9b}2J\\u{d}"
        );
    }

    #[test]
    fn labels_are_coloured_only_when_asked() {
        let text = "error: x\n  caused by: y\nhint: z\n{\"error\":{}}\n";
        assert_eq!(paint_labels(text, false), text);
        let painted = paint_labels(text, true);
        assert!(
            painted.starts_with("\x1b[1;31merror:\x1b[0m x\n"),
            "{painted:?}"
        );
        assert!(
            painted.contains("\x1b[1;36mhint:\x1b[0m z\n"),
            "{painted:?}"
        );
        assert!(
            painted.ends_with("{\"error\":{}}\n"),
            "the JSON line stays plain"
        );
    }
}
