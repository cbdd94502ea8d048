//! The model's answer, written in Markdown, made readable on a terminal as
//! it streams: each line, once complete, has its headings and bold text in
//! bold, inline code and code blocks in colour, quotes dimmed and list
//! markers as bullets. Without colour (`NO_COLOR`, or not a terminal) the
//! text passes as it comes, unchanged: Markdown reads well as it is.

const BOLD: &str = "\x1b[1m";
const DIM: &str = "\x1b[2m";
const CODE: &str = "\x1b[36m";
const RESET: &str = "\x1b[0m";

/// One answer's renderer.
pub struct Markdown {
    colour: bool,
    /// The line under way.
    pending: String,
    in_code_block: bool,
}

impl Markdown {
    pub fn new(colour: bool) -> Self {
        Self {
            colour,
            pending: String::new(),
            in_code_block: false,
        }
    }

    /// What to print of `text`, the next piece of the answer.
    pub fn push(&mut self, text: &str) -> String {
        if !self.colour {
            return text.to_owned();
        }
        self.pending.push_str(text);
        let mut out = String::new();
        while let Some(end) = self.pending.find('\n') {
            let line: String = self.pending.drain(..=end).collect();
            out.push_str(&self.line(line.trim_end_matches('\n')));
            out.push('\n');
        }
        out
    }

    /// What is left when the answer ends.
    pub fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.pending);
        self.in_code_block = false;
        if rest.is_empty() || !self.colour {
            return rest;
        }
        self.line(&rest)
    }

    fn line(&mut self, line: &str) -> String {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") {
            self.in_code_block = !self.in_code_block;
            return format!("{DIM}{line}{RESET}");
        }
        if self.in_code_block {
            return format!("{CODE}{line}{RESET}");
        }
        let hashes = trimmed.chars().take_while(|c| *c == '#').count();
        if (1..=6).contains(&hashes) && trimmed[hashes..].starts_with(' ') {
            return format!("{BOLD}{}{RESET}", trimmed[hashes..].trim());
        }
        if let Some(quote) = trimmed.strip_prefix('>') {
            return format!("{DIM}│{}{RESET}", inline(quote));
        }
        let indent = &line[..line.len() - trimmed.len()];
        if let Some(item) = trimmed
            .strip_prefix("- ")
            .or_else(|| trimmed.strip_prefix("* "))
            .or_else(|| trimmed.strip_prefix("+ "))
        {
            return format!("{indent}• {}", inline(item));
        }
        inline(line)
    }
}

/// `code` in colour and **bold** in bold, within one line.
fn inline(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    loop {
        let code = rest.find('`');
        let bold = rest.find("**");
        let (start, marker, style) = match (code, bold) {
            (Some(code), Some(bold)) if bold < code => (bold, "**", BOLD),
            (Some(code), _) => (code, "`", CODE),
            (None, Some(bold)) => (bold, "**", BOLD),
            (None, None) => break,
        };
        let after = &rest[start + marker.len()..];
        let Some(end) = after.find(marker).filter(|end| *end > 0) else {
            break;
        };
        out.push_str(&rest[..start]);
        out.push_str(style);
        out.push_str(&after[..end]);
        out.push_str(RESET);
        rest = &after[end + marker.len()..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rendered(pieces: &[&str]) -> String {
        let mut markdown = Markdown::new(true);
        let mut out: String = pieces.iter().map(|piece| markdown.push(piece)).collect();
        out.push_str(&markdown.finish());
        out
    }

    #[test]
    fn lines_are_rendered_once_whole() {
        let out = rendered(&["# Ti", "tle\n- one **b", "old** item\n`x` and ", "more"]);
        assert_eq!(
            out,
            format!("{BOLD}Title{RESET}\n• one {BOLD}bold{RESET} item\n{CODE}x{RESET} and more")
        );
    }

    #[test]
    fn code_blocks_are_left_as_written() {
        let out = rendered(&["```rust\nlet a = **b**;\n```\n"]);
        assert_eq!(
            out,
            format!("{DIM}```rust{RESET}\n{CODE}let a = **b**;{RESET}\n{DIM}```{RESET}\n")
        );
    }

    #[test]
    fn without_colour_text_passes_as_it_comes() {
        let mut markdown = Markdown::new(false);
        assert_eq!(markdown.push("# a **b"), "# a **b");
        assert_eq!(markdown.finish(), "");
    }

    #[test]
    fn unclosed_markers_stay_as_written() {
        assert_eq!(inline("a ` b ** c"), "a ` b ** c");
        assert_eq!(inline("2 * 3 = 6"), "2 * 3 = 6");
    }
}
