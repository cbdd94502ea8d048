//! Writing results: JSON for scripts, short tables and text for people.
//! Stdout carries data only; a closed pipe (`nexo tools ... | head`) ends
//! quietly.

use std::io::Write;

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
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// A plain table: a header row and aligned columns, no borders or colour.
pub fn table(header: &[&str], rows: Vec<Vec<String>>) -> String {
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
        .map(|line| line.trim_end().trim_start_matches(' ').to_owned())
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

/// The first line of a description, shortened for a table cell.
pub fn summary(text: Option<&str>) -> String {
    let line = text.unwrap_or_default().lines().next().unwrap_or_default();
    let mut short: String = line.chars().take(72).collect();
    if line.chars().count() > 72 {
        short.push('…');
    }
    short
}
