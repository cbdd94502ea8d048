//! The shell matcher: what in a text would make a POSIX shell do more than
//! run one harmless command: command substitution (`$(...)`, backquotes,
//! `<(...)`, `${...}`), chaining (`;`, `&&`, `||`, `|`, `&`, a new line),
//! redirection (`>`, `<`) and known dangerous commands (`rm`, `curl`,
//! `sudo`, `mkfs`, a fork bomb...), each found outside the quotes that
//! would disarm it (inside double quotes, substitution still counts).
//!
//! The scan is by hand: no crate reports these hazards; shell-words
//! splits each command into words as the shell would, to find its name.

use serde::{Deserialize, Serialize};

/// One kind of thing a shell would do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShellHazard {
    Substitution,
    Chaining,
    Redirection,
    DangerousCommand,
}

impl ShellHazard {
    pub fn name(self) -> &'static str {
        match self {
            Self::Substitution => "substitution",
            Self::Chaining => "chaining",
            Self::Redirection => "redirection",
            Self::DangerousCommand => "dangerous_command",
        }
    }
}

/// A hazard found, with the text that shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub hazard: ShellHazard,
    pub what: String,
}

/// Commands that delete, overwrite, escalate, reach the network or run
/// other code.
const DANGEROUS: &[&str] = &[
    "rm",
    "rmdir",
    "shred",
    "dd",
    "mkfs",
    "fdisk",
    "parted",
    "wipefs",
    "chmod",
    "chown",
    "chattr",
    "sudo",
    "su",
    "doas",
    "curl",
    "wget",
    "nc",
    "ncat",
    "netcat",
    "socat",
    "telnet",
    "ssh",
    "scp",
    "sftp",
    "rsync",
    "ftp",
    "tftp",
    "sh",
    "bash",
    "zsh",
    "dash",
    "ksh",
    "fish",
    "eval",
    "exec",
    "source",
    "kill",
    "killall",
    "pkill",
    "shutdown",
    "reboot",
    "halt",
    "poweroff",
    "init",
    "systemctl",
    "crontab",
    "at",
    "iptables",
    "nft",
    "mount",
    "umount",
    "useradd",
    "userdel",
    "usermod",
    "passwd",
    "visudo",
    "insmod",
    "modprobe",
    "nohup",
    "python",
    "python3",
    "perl",
    "ruby",
    "node",
    "php",
    "lua",
    "docker",
    "kubectl",
];

/// Words that run the command after them.
const WRAPPERS: &[&str] = &[
    "env", "time", "command", "nice", "ionice", "xargs", "timeout", "builtin",
];

/// Every hazard in `text`, in the order found, each kind once per
/// distinct sign.
pub fn scan(text: &str) -> Vec<Found> {
    let mut found: Vec<Found> = Vec::new();
    let mut note = |hazard: ShellHazard, what: &str| {
        if !found.iter().any(|f| f.hazard == hazard && f.what == what) {
            found.push(Found {
                hazard,
                what: what.to_owned(),
            });
        }
    };
    let chars: Vec<char> = text.chars().collect();
    let mut segments: Vec<String> = vec![String::new()];
    let mut single = false;
    let mut double = false;
    // Inside `$'...'`, where a backslash escapes a quote.
    let mut dollar_single = false;
    let mut index = 0;
    while index < chars.len() {
        let c = chars[index];
        let next = chars.get(index + 1).copied();
        let mut split = false;
        if single {
            if c == '\'' {
                single = false;
            }
        } else if dollar_single && c == '\'' {
            dollar_single = false;
        } else if c == '\\' {
            if let (Some(escaped), Some(segment)) = (next, segments.last_mut()) {
                segment.push(c);
                segment.push(escaped);
            }
            index += 2;
            continue;
        } else {
            match (c, next) {
                _ if dollar_single => {}
                ('$', Some('(')) => note(ShellHazard::Substitution, "$("),
                ('$', Some('{')) => note(ShellHazard::Substitution, "${"),
                ('`', _) => note(ShellHazard::Substitution, "`"),
                ('"', _) => double = !double,
                _ if double => {}
                ('$', Some('\'')) => {
                    dollar_single = true;
                    if let Some(segment) = segments.last_mut() {
                        segment.push_str("$'");
                    }
                    index += 2;
                    continue;
                }
                ('\'', _) => single = true,
                ('<' | '>', Some('(')) => note(ShellHazard::Substitution, "process substitution"),
                (';', _) => {
                    note(ShellHazard::Chaining, ";");
                    split = true;
                }
                ('\n' | '\r', _) => {
                    note(ShellHazard::Chaining, "a new line");
                    split = true;
                }
                ('&', Some('&')) | ('|', Some('|')) => {
                    note(ShellHazard::Chaining, if c == '&' { "&&" } else { "||" });
                    index += 1;
                    split = true;
                }
                ('|', _) => {
                    note(ShellHazard::Chaining, "|");
                    split = true;
                }
                ('&', _) if index > 0 && matches!(chars[index - 1], '>' | '<') => {}
                ('&', _) => {
                    note(ShellHazard::Chaining, "&");
                    split = true;
                }
                ('>' | '<', _) => note(ShellHazard::Redirection, &c.to_string()),
                _ => {}
            }
        }
        if split {
            segments.push(String::new());
        } else if let Some(segment) = segments.last_mut() {
            segment.push(c);
        }
        index += 1;
    }
    if text.contains(":(){") || text.contains(":() {") {
        note(ShellHazard::DangerousCommand, "a fork bomb");
    }
    for segment in &segments {
        if let Some(name) = command_name(segment)
            && DANGEROUS.contains(&name.as_str())
        {
            note(ShellHazard::DangerousCommand, &name);
        }
    }
    found
}

/// The name of the command a segment runs: assignments (`A=b`) and
/// wrappers (`env`, `nohup`...) with their options skipped, the directory
/// dropped (`/bin/rm` is `rm`), a version suffix too (`python3.12`).
fn command_name(segment: &str) -> Option<String> {
    let segment = dollar_single_decoded(segment);
    let words = shell_words::split(&segment)
        .unwrap_or_else(|_| segment.split_whitespace().map(str::to_owned).collect());
    let mut after_wrapper = false;
    for word in words {
        let word = word.trim_start_matches(['(', '{', '!']);
        if word.is_empty() || (after_wrapper && word.starts_with('-')) {
            continue;
        }
        if word.contains('=') && !word.starts_with('=') && !word.contains('/') {
            continue;
        }
        let base = word.rsplit('/').next().unwrap_or(word).to_ascii_lowercase();
        if WRAPPERS.contains(&base.as_str()) {
            after_wrapper = true;
            continue;
        }
        let trimmed = base
            .trim_end_matches(|c: char| c.is_ascii_digit() || c == '.')
            .to_owned();
        let name = if DANGEROUS.contains(&trimmed.as_str()) || trimmed.starts_with("mkfs") {
            if trimmed.starts_with("mkfs") {
                "mkfs".to_owned()
            } else {
                trimmed
            }
        } else {
            base
        };
        return Some(name);
    }
    None
}

/// `segment` with every `$'...'` outside other quotes decoded and written
/// in single quotes instead, as shell-words reads those.
fn dollar_single_decoded(segment: &str) -> String {
    let chars: Vec<char> = segment.chars().collect();
    let mut out = String::with_capacity(segment.len());
    let (mut single, mut double) = (false, false);
    let mut index = 0;
    while index < chars.len() {
        let c = chars[index];
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '\\' if !single => {
                out.push(c);
                if let Some(&next) = chars.get(index + 1) {
                    out.push(next);
                }
                index += 2;
                continue;
            }
            '$' if !single && !double && chars.get(index + 1) == Some(&'\'') => {
                let (decoded, end) = decode_dollar_single(&chars, index + 2);
                out.push('\'');
                out.push_str(&decoded.replace('\'', "'\\''"));
                out.push('\'');
                index = end;
                continue;
            }
            _ => {}
        }
        out.push(c);
        index += 1;
    }
    out
}

/// The text of a `$'...'` whose body starts at `start`, and the index
/// after its closing quote.
fn decode_dollar_single(chars: &[char], start: usize) -> (String, usize) {
    let mut bytes: Vec<u8> = Vec::new();
    let push = |c: char, bytes: &mut Vec<u8>| {
        let mut buffer = [0; 4];
        bytes.extend_from_slice(c.encode_utf8(&mut buffer).as_bytes());
    };
    // Up to `most` digits of `radix` from `at`: their value and count.
    let number = |at: usize, radix: u32, most: usize| {
        let digits: Vec<u32> = chars[at.min(chars.len())..]
            .iter()
            .take(most)
            .map_while(|c| c.to_digit(radix))
            .collect();
        let value = digits
            .iter()
            .fold(0u32, |value, digit| value * radix + digit);
        (value, digits.len())
    };
    let mut index = start;
    while let Some(&c) = chars.get(index) {
        index += 1;
        match c {
            '\'' => break,
            '\\' => {
                let Some(&escaped) = chars.get(index) else {
                    break;
                };
                index += 1;
                let simple = match escaped {
                    'a' => Some('\u{7}'),
                    'b' => Some('\u{8}'),
                    'e' | 'E' => Some('\u{1b}'),
                    'f' => Some('\u{c}'),
                    'n' => Some('\n'),
                    'r' => Some('\r'),
                    't' => Some('\t'),
                    'v' => Some('\u{b}'),
                    '\\' | '\'' | '"' | '?' => Some(escaped),
                    _ => None,
                };
                if let Some(simple) = simple {
                    push(simple, &mut bytes);
                    continue;
                }
                match escaped {
                    'x' => {
                        let (value, count) = number(index, 16, 2);
                        index += count;
                        bytes.push(u8::try_from(value).unwrap_or(b'?'));
                    }
                    '0'..='7' => {
                        let (value, count) = number(index - 1, 8, 3);
                        index += count - 1;
                        bytes.push(u8::try_from(value & 0xff).unwrap_or(b'?'));
                    }
                    'u' | 'U' => {
                        let (value, count) = number(index, 16, if escaped == 'u' { 4 } else { 8 });
                        index += count;
                        push(char::from_u32(value).unwrap_or('\u{fffd}'), &mut bytes);
                    }
                    'c' => {
                        if let Some(&control) = chars.get(index) {
                            index += 1;
                            bytes.push(u8::try_from(u32::from(control) & 0x1f).unwrap_or(b'?'));
                        }
                    }
                    other => {
                        push('\\', &mut bytes);
                        push(other, &mut bytes);
                    }
                }
            }
            other => push(other, &mut bytes),
        }
    }
    (String::from_utf8_lossy(&bytes).into_owned(), index)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<ShellHazard> {
        scan(text).into_iter().map(|found| found.hazard).collect()
    }

    #[test]
    fn plain_commands_and_quoted_signs_are_harmless() {
        for text in [
            "ls -la /tmp",
            "grep 'a;b|c' file.txt",
            "echo 'rm -rf / $(whoami)'",
            "cat notes.txt",
            "The meeting is at 3 o'clock",
        ] {
            assert!(kinds(text).is_empty(), "{text}: {:?}", scan(text));
        }
    }

    #[test]
    fn hazards_are_found_outside_quotes() {
        let table: [(&str, &[ShellHazard]); 8] = [
            ("echo $(id)", &[ShellHazard::Substitution]),
            ("echo \"`id`\"", &[ShellHazard::Substitution]),
            ("ls; id", &[ShellHazard::Chaining]),
            (
                "cat a | sh",
                &[ShellHazard::Chaining, ShellHazard::DangerousCommand],
            ),
            ("echo x > /etc/passwd", &[ShellHazard::Redirection]),
            ("rm -rf /", &[ShellHazard::DangerousCommand]),
            (
                "FOO=1 /usr/bin/curl http://x",
                &[ShellHazard::DangerousCommand],
            ),
            ("env -i python3.12 -c 'x'", &[ShellHazard::DangerousCommand]),
        ];
        for (text, expected) in table {
            assert_eq!(kinds(text), expected, "{text}");
        }
    }

    /// Found by the `shell` fuzz target: `$'...'` (POSIX.1-2024, bash, zsh,
    /// ksh) hid a command's name (`$'\x72\x6d'` is `rm`), and a quote
    /// escaped inside it (`\'`) was taken for its end, so what followed
    /// was read as quoted.
    #[test]
    fn dollar_single_quotes_are_read_as_the_shell_reads_them() {
        let table: [(&str, &[ShellHazard]); 5] = [
            (r"$'\x72\x6d' -rf /", &[ShellHazard::DangerousCommand]),
            (r"$'r\155' -rf /", &[ShellHazard::DangerousCommand]),
            (
                r"echo $'\'';rm -rf / #'",
                &[ShellHazard::Chaining, ShellHazard::DangerousCommand],
            ),
            (r"echo $'a;b|c' \$'x'", &[]),
            (r#"echo "$'" ; ls"#, &[ShellHazard::Chaining]),
        ];
        for (text, expected) in table {
            assert_eq!(kinds(text), expected, "{text}");
        }
    }
}
