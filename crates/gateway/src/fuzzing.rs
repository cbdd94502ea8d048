//! The policy's matchers under a fuzzer (the targets in `fuzz/fuzz_targets`
//! call these; the committed corpora are replayed by this module's tests):
//!
//! - [`path_matcher`]: a path the matcher places inside its directories
//!   is inside them however a server reads it (as written, percent-decoded
//!   until nothing changes, backslashes as separators, full-width
//!   lookalikes folded), each reading normalized by a reference written
//!   from the rules alone; and no input panics.
//! - [`url_matcher`]: a URL the matcher admits (private addresses not
//!   allowed) leads, as an HTTP client reads it (the url crate) and as
//!   its name resolves, only to addresses that a reference, written with
//!   ipnet from the IANA special-purpose registries, calls public or that
//!   the policy's networks hold; IPv4 inside IPv6 (mapped, compatible,
//!   NAT64, 6to4) and `inet_aton`'s loose spellings included.
//! - [`shell_quoting`]: the shell matcher finds the same hazards in two
//!   command lines a POSIX shell reads as the same words and operators,
//!   one written plainly and one quoted another way (single or double
//!   quotes, backslashes, a quote in the middle of a word, `$'...'`).
//! - [`policy_twins`]: a policy written as JSON and as its YAML twin
//!   (block or flow, quoted or plain) compiles to the same policy, or both
//!   fail, each error placed at a line and column of its own text.
//! - [`sql_matcher`]: the SQL matcher never panics, and a text it calls
//!   `read` only reads under a reading of its own (comments, quoting,
//!   stacked statements, writes inside a `WITH`, MySQL's `/*! */`,
//!   functions that write).

use std::net::{IpAddr, Ipv4Addr};

use ipnet::IpNet;
use unicode_normalization::UnicodeNormalization;

use crate::policy::path::Dirs;
use crate::policy::resolve::Resolver;
use crate::policy::shell::{Found, scan};
use crate::policy::sql::SqlClass;
use crate::policy::url::UrlRules;

const DIR: &str = "/srv/data";
const BASE: &str = "/srv/data/work";

/// One fuzz input: an argument's value.
pub fn path_matcher(data: &[u8]) {
    let value = String::from_utf8_lossy(data);
    let Ok(dirs) = Dirs::new(&[DIR.to_owned()], Some(BASE)) else {
        return;
    };
    let placed = dirs.place(&value);
    // A `file:` URL is read by its own rules; only the other readings
    // are checked here.
    if !placed.inside
        || value
            .get(..5)
            .is_some_and(|scheme| scheme.eq_ignore_ascii_case("file:"))
    {
        return;
    }
    for reading in readings(&value) {
        assert!(
            inside(&reading),
            "{value:?} was placed inside {DIR}, but read as {reading:?} it is not"
        );
    }
}

/// The readings a server might make of `value`.
fn readings(value: &str) -> Vec<String> {
    let mut decoded = value.to_owned();
    loop {
        let next = percent_encoding::percent_decode_str(&decoded)
            .decode_utf8_lossy()
            .into_owned();
        if next == decoded {
            break;
        }
        decoded = next;
    }
    let mut readings = Vec::new();
    for text in [value.to_owned(), decoded] {
        for form in [text.clone(), text.nfkc().collect::<String>()] {
            readings.push(form.replace('\\', "/"));
            readings.push(form);
        }
    }
    readings
}

/// Whether `path`, resolved against the base and normalized, is in `DIR`.
fn inside(path: &str) -> bool {
    let full = if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("{BASE}/{path}")
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in full.split('/') {
        match part {
            "" | "." => {}
            ".." => drop(parts.pop()),
            other => parts.push(other),
        }
    }
    parts.len() >= 2 && parts[0] == "srv" && parts[1] == "data"
}

/// The networks the fuzzed policy allows although they are not public.
const ALLOWED_NETWORKS: [&str; 2] = ["203.0.113.0/25", "fd00:1::/32"];

/// The IPv4 networks that are not public, from IANA's special-purpose
/// registry (and the whole of 240.0.0.0/4).
const SPECIAL_V4: [&str; 15] = [
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.0.0.0/24",
    "192.0.2.0/24",
    "192.168.0.0/16",
    "198.18.0.0/15",
    "198.51.100.0/24",
    "203.0.113.0/24",
    "224.0.0.0/4",
    "240.0.0.0/4",
    "255.255.255.255/32",
];

/// The IPv6 networks that are not public (those holding an IPv4 address
/// at a fixed place are read by that address instead; the local-use NAT64
/// prefix of RFC 8215 places it where the network chooses, so all of it).
const SPECIAL_V6: [&str; 11] = [
    "::/128",
    "::1/128",
    "64:ff9b:1::/48",
    "100::/64",
    "3fff::/20",
    "2001:db8::/32",
    "fc00::/7",
    "fe80::/10",
    "fec0::/10",
    "ff00::/8",
    "::/96",
];

/// A resolver answering every name with the same addresses, as a DNS
/// server the input controls would; a name spelled as a number is not
/// looked up (hickory sends it to DNS, which knows no such name).
struct AnyName(Vec<IpAddr>);

#[async_trait::async_trait]
impl Resolver for AnyName {
    async fn resolve(&self, host: &str) -> Result<Vec<IpAddr>, String> {
        if self.0.is_empty() || reference_inet_aton(host).is_some() {
            return Err(format!("`{host}` has no address"));
        }
        Ok(self.0.clone())
    }
}

/// One fuzz input: the first line a URL, every other line an address its
/// host name resolves to.
pub fn url_matcher(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut lines = text.split('\n');
    let value = lines.next().unwrap_or_default();
    let answers: Vec<IpAddr> = lines.filter_map(|line| line.trim().parse().ok()).collect();
    let allowed: Vec<IpNet> = ALLOWED_NETWORKS
        .iter()
        .filter_map(|net| net.parse().ok())
        .collect();
    let rules = UrlRules {
        schemes: ["http", "https", "ws", "ftp", "git"]
            .map(str::to_owned)
            .to_vec(),
        allow_hosts: None,
        deny_hosts: None,
        allow_private: false,
        allow_addresses: allowed.clone(),
    };
    let resolver = AnyName(answers.clone());
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread().build() else {
        return;
    };
    let check = runtime.block_on(rules.check(value, &resolver));
    if check.refused {
        return;
    }
    let Ok(url) = url::Url::parse(value.trim()) else {
        panic!("{value:?} is admitted but is no URL: {}", check.detail);
    };
    let reached = match url.host() {
        None => panic!("{value:?} is admitted without a host: {}", check.detail),
        Some(url::Host::Ipv4(v4)) => vec![IpAddr::V4(v4)],
        Some(url::Host::Ipv6(v6)) => vec![IpAddr::V6(v6)],
        Some(url::Host::Domain(name)) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            match reference_inet_aton(&name) {
                Some(v4) => vec![IpAddr::V4(v4)],
                None if name == "localhost" || name.ends_with(".localhost") => {
                    vec![IpAddr::V4(Ipv4Addr::LOCALHOST)]
                }
                None => answers,
            }
        }
    };
    for address in reached {
        assert!(
            allowed.iter().any(|net| net.contains(&address)) || reference_public(address),
            "{value:?} is admitted, but leads to {address}, which is not public: {}",
            check.detail
        );
    }
}

/// Whether `address` is public, by the registries' networks.
fn reference_public(address: IpAddr) -> bool {
    let within = |nets: &[&str], address: IpAddr| {
        nets.iter()
            .filter_map(|net| net.parse::<IpNet>().ok())
            .any(|net| net.contains(&address))
    };
    match address {
        IpAddr::V4(v4) => !within(&SPECIAL_V4, IpAddr::V4(v4)),
        IpAddr::V6(v6) => {
            let embedded = |prefix: &str| {
                prefix
                    .parse::<IpNet>()
                    .is_ok_and(|net| net.contains(&IpAddr::V6(v6)))
            };
            let bits = u128::from(v6);
            let low = Ipv4Addr::from(u32::try_from(bits & 0xffff_ffff).unwrap_or(0));
            if embedded("::ffff:0:0/96") || embedded("64:ff9b::/96") {
                return reference_public(IpAddr::V4(low));
            }
            if embedded("2002::/16") {
                let high = Ipv4Addr::from(u32::try_from((bits >> 80) & 0xffff_ffff).unwrap_or(0));
                return reference_public(IpAddr::V4(high));
            }
            if embedded("::/96") && !within(&SPECIAL_V6[..2], IpAddr::V6(v6)) {
                return reference_public(IpAddr::V4(low));
            }
            !within(&SPECIAL_V6, IpAddr::V6(v6))
        }
    }
}

/// A host name as C's `inet_aton` reads it: one to four numbers (`0x`
/// hexadecimal, a leading `0` octal, else decimal), the last filling the
/// bytes left; a single trailing dot allowed, as a name may end in one.
fn reference_inet_aton(name: &str) -> Option<Ipv4Addr> {
    let name = name.strip_suffix('.').unwrap_or(name);
    let mut numbers = Vec::new();
    for part in name.split('.') {
        let lower = part.to_ascii_lowercase();
        let number = if let Some(hex) = lower.strip_prefix("0x") {
            if hex.is_empty() {
                0
            } else {
                u64::from_str_radix(hex, 16).ok()?
            }
        } else if lower.len() > 1 && lower.starts_with('0') {
            u64::from_str_radix(&lower[1..], 8).ok()?
        } else {
            lower.parse::<u64>().ok()?
        };
        // `from_str_radix` takes a sign; inet_aton does not.
        if part.contains(['+', '-']) {
            return None;
        }
        numbers.push(number);
    }
    let (&last, leading) = numbers.split_last()?;
    if leading.len() > 3 || leading.iter().any(|number| *number > 255) {
        return None;
    }
    let room = 32 - 8 * u32::try_from(leading.len()).ok()?;
    if last >> room != 0 {
        return None;
    }
    let value = leading
        .iter()
        .enumerate()
        .fold(last, |value, (index, number)| {
            value | number << (24 - 8 * index)
        });
    Some(Ipv4Addr::from(u32::try_from(value).ok()?))
}

/// The operators a command line of the shell harness may hold.
const OPERATORS: [&str; 9] = [";", "|", "&&", "||", "&", ">", "<", ">>", "2>&1"];

/// One fuzz input: the first byte picks how each word is quoted in the
/// second line; then one token a line, `op:` and one of [`OPERATORS`], or
/// a word.
pub fn shell_quoting(data: &[u8]) {
    let [seed, rest @ ..] = data else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let mut plain = Vec::new();
    let mut quoted = Vec::new();
    for (index, token) in text.split('\n').enumerate() {
        if let Some(operator) = token
            .strip_prefix("op:")
            .and_then(|op| OPERATORS.iter().find(|known| **known == op))
        {
            plain.push((*operator).to_owned());
            quoted.push((*operator).to_owned());
            continue;
        }
        if token.is_empty() {
            continue;
        }
        plain.push(plainly(token));
        // An unquoted `=` makes an assignment of a word, a quoted one not.
        let style = if token.contains('=') {
            0
        } else {
            (usize::from(*seed) + index) % 6
        };
        quoted.push(match style {
            0 => plainly(token),
            1 => single_quoted(token),
            2 => double_quoted(token),
            3 => backslashed(token),
            4 => {
                let mut chars = token.chars();
                let first = chars.next().map(String::from).unwrap_or_default();
                let rest = chars.as_str();
                if rest.is_empty() {
                    backslashed(&first)
                } else {
                    backslashed(&first) + &single_quoted(rest)
                }
            }
            _ => ansi_c(token),
        });
    }
    let plain = plain.join(" ");
    let quoted = quoted.join(" ");
    let hazards = |line: &str| {
        let mut found: Vec<Found> = scan(line)
            .into_iter()
            .filter(|found| found.what != "a fork bomb")
            .collect();
        found.sort_by(|a, b| (a.hazard.name(), &a.what).cmp(&(b.hazard.name(), &b.what)));
        found
    };
    assert_eq!(
        hazards(&plain),
        hazards(&quoted),
        "a shell reads {plain:?} and {quoted:?} the same, the matcher does not"
    );
}

/// `word` as is when nothing in it is special to the shell, else in
/// single quotes.
fn plainly(word: &str) -> String {
    if word
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_./,:=+@%-".contains(c))
    {
        word.to_owned()
    } else {
        single_quoted(word)
    }
}

fn single_quoted(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

fn double_quoted(word: &str) -> String {
    let mut out = String::from('"');
    for c in word.chars() {
        if matches!(c, '\\' | '"' | '$' | '`') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// Every character after a backslash (a token holds no new line, which a
/// backslash would remove).
fn backslashed(word: &str) -> String {
    word.chars().map(|c| format!("\\{c}")).collect()
}

/// `$'...'` (POSIX.1-2024, bash, zsh, ksh), every byte as `\xHH`.
fn ansi_c(word: &str) -> String {
    let bytes: String = word.bytes().map(|byte| format!("\\x{byte:02x}")).collect();
    format!("$'{bytes}'")
}

/// One fuzz input: the first byte picks how the YAML twin is written, the
/// rest is a policy in JSON. Read as a `.json` policy, the text never
/// panics and an error in it is placed inside it; the JSON value it holds
/// (as serde_json reads it, duplicate keys read once) is written afresh as
/// JSON and as YAML (block or flow collections, names and strings quoted
/// or plain where plain reads the same), and the two twins compile to the
/// same policy or both fail, each error at a line and column of its own
/// text.
pub fn policy_twins(data: &[u8]) {
    let [style, json @ ..] = data else {
        return;
    };
    let text = String::from_utf8_lossy(json);
    let _ = read_policy("policy.json", &text);
    let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) else {
        return;
    };
    let Ok(json_twin) = serde_json::to_string_pretty(&value) else {
        return;
    };
    let mut yaml_twin = String::new();
    write_yaml(&value, *style, 0, &mut yaml_twin);
    let from_json = read_policy("policy.json", &json_twin);
    let from_yaml = read_policy("policy.yaml", &yaml_twin);
    match (&from_json, &from_yaml) {
        (Ok(json), Ok(yaml)) => assert_eq!(json, yaml, "{json_twin}\n{yaml_twin}"),
        (Err(_), Err(_)) => {}
        _ => panic!(
            "the twins read differently:\n{json_twin}\n{from_json:?}\n{yaml_twin}\n{from_yaml:?}"
        ),
    }
}

/// The policy `text` compiles to (its `Debug` without the file's digest),
/// or the error, after checking that it is placed inside the text.
fn read_policy(name: &str, text: &str) -> Result<String, String> {
    match crate::policy::Policy::parse(std::path::Path::new(name), text) {
        Ok(policy) => {
            let shown = format!("{policy:?}");
            let digest = shown.find("digest: [").unwrap_or(shown.len());
            let end = shown[digest..]
                .find(']')
                .map_or(shown.len(), |end| digest + end);
            Ok(format!("{}{}", &shown[..digest], &shown[end..]))
        }
        Err(crate::error::PolicyError::Invalid {
            line,
            column,
            message,
            ..
        }) => {
            // YAML (which reads the JSON twin too) breaks lines at CR LF,
            // CR and LF, as editors do, but yaml-rust2 counts a CR inside
            // a quoted scalar as no break: the place must be inside the
            // text under one of the two readings.
            let inside = |lines: Vec<&str>| {
                line.checked_sub(1)
                    .and_then(|index| lines.get(index))
                    .is_some_and(|this| (1..=this.chars().count() + 1).contains(&column))
            };
            let within = inside(text.split('\n').collect())
                || inside(
                    text.split("\r\n")
                        .flat_map(|part| part.split(['\r', '\n']))
                        .collect(),
                );
            assert!(
                within,
                "{name}: line {line}, column {column} is not in the text: {message}\n{text}"
            );
            Err(message)
        }
        Err(error) => Err(error.to_string()),
    }
}

/// `value` as YAML: with `style` bit 0 collections in flow style, bit 1
/// names and strings plain where YAML's core schema reads them back as
/// the same strings.
fn write_yaml(value: &serde_json::Value, style: u8, indent: usize, out: &mut String) {
    use serde_json::Value as J;
    let flow = style & 1 == 1;
    let scalar = |text: &str| -> String {
        let plain = style & 2 == 2
            && text
                .chars()
                .next()
                .is_some_and(|first| first.is_ascii_lowercase())
            && text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '/' | '*'))
            && !matches!(text, "true" | "false" | "null");
        if plain {
            text.to_owned()
        } else {
            J::String(text.to_owned()).to_string()
        }
    };
    let pad = " ".repeat(indent);
    match value {
        J::String(text) => out.push_str(&scalar(text)),
        J::Null | J::Bool(_) | J::Number(_) => out.push_str(&value.to_string()),
        J::Array(items) if flow || items.is_empty() => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                write_yaml(item, style | 1, indent, out);
            }
            out.push(']');
        }
        J::Object(fields) if flow || fields.is_empty() => {
            out.push('{');
            for (index, (name, field)) in fields.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                out.push_str(&scalar(name));
                out.push_str(": ");
                write_yaml(field, style | 1, indent, out);
            }
            out.push('}');
        }
        J::Array(items) => {
            for item in items {
                out.push_str(&pad);
                out.push('-');
                write_nested(item, style, indent, out);
            }
        }
        J::Object(fields) => {
            for (name, field) in fields {
                out.push_str(&pad);
                out.push_str(&scalar(name));
                out.push(':');
                write_nested(field, style, indent, out);
            }
        }
    }
}

/// What follows `-` or `name:` in block style: a scalar on the same line,
/// a collection indented on the next.
fn write_nested(value: &serde_json::Value, style: u8, indent: usize, out: &mut String) {
    let block = match value {
        serde_json::Value::Array(items) => !items.is_empty(),
        serde_json::Value::Object(fields) => !fields.is_empty(),
        _ => false,
    };
    if block {
        out.push('\n');
        write_yaml(value, style, indent + 2, out);
    } else {
        out.push(' ');
        write_yaml(value, style, indent, out);
        out.push('\n');
    }
}

/// The dialects a SQL input is read in, by its first byte.
const SQL_DIALECTS: [&str; 5] = ["generic", "postgresql", "mysql", "sqlite", "mssql"];

/// One fuzz input: the first byte picks the dialect, the rest is SQL. The
/// matcher never panics, and a text it calls `read` is read-only under a
/// reading of its own: [`reference_read_only`].
pub fn sql_matcher(data: &[u8]) {
    let [pick, text @ ..] = data else {
        return;
    };
    let name = SQL_DIALECTS[usize::from(*pick) % SQL_DIALECTS.len()];
    let Some(dialect) = crate::policy::sql::dialect(name) else {
        return;
    };
    let text = String::from_utf8_lossy(text);
    let classified = crate::policy::sql::classify(dialect.as_ref(), &text, SqlClass::Admin);
    if classified.class == SqlClass::Read {
        assert!(
            reference_read_only(&text, name),
            "{name}: {text:?} is called read-only ({})",
            classified.detail
        );
    }
}

/// The words that start a statement that reads (or controls a
/// transaction): anything else may write.
const READ_STARTS: &[&str] = &[
    "SELECT",
    // `FROM t`: a query written FROM first, which the generic dialect
    // reads as `SELECT * FROM t`.
    "FROM",
    "WITH",
    "VALUES",
    "SHOW",
    "EXPLAIN",
    "DESCRIBE",
    "DESC",
    "BEGIN",
    "START",
    "COMMIT",
    "ROLLBACK",
    "END",
    "SAVEPOINT",
    "RELEASE",
    "USE",
    "TABLE",
    "(",
];

/// Words that make a statement write or run something where a statement
/// starts (or, in T-SQL, [`TSQL_VERBS`] wherever a keyword may stand).
const WRITE_WORDS: &[&str] = &[
    "INSERT", "UPDATE", "DELETE", "MERGE", "INTO", "CREATE", "DROP", "ALTER", "TRUNCATE", "GRANT",
    "REVOKE", "COPY", "ATTACH", "DETACH", "PRAGMA", "CALL", "EXEC", "EXECUTE", "LOAD", "UPSERT",
    "VACUUM", "REINDEX", "CLUSTER", "LOCK", "REFRESH", "IMPORT", "EXPORT", "OUTFILE", "DUMPFILE",
    "REPLACE",
];

/// T-SQL's reserved verbs: a batch needs no `;`, so after a finished
/// expression one of them starts the next statement (`SELECT 1 DROP
/// TABLE t` is two statements there, an alias and an error elsewhere).
const TSQL_VERBS: &[&str] = &[
    "INSERT", "UPDATE", "DELETE", "MERGE", "CREATE", "DROP", "ALTER", "TRUNCATE", "EXEC", "EXECUTE",
];

/// Functions that change the database or reach past it, whatever calls
/// them.
const WRITE_FUNCTIONS: &[&str] = &[
    "NEXTVAL",
    "SETVAL",
    "SET_CONFIG",
    "LO_CREATE",
    "LO_UNLINK",
    "LO_PUT",
    "LO_FROM_BYTEA",
    "PG_READ_FILE",
    "PG_ADVISORY_LOCK",
    "PG_NOTIFY",
    "LOAD_EXTENSION",
    "LOAD_FILE",
    "DBLINK_EXEC",
];

/// Words after which a statement reading takes an operand or a name, so
/// that a word there is a column, a table or an alias (`SELECT insert`,
/// `ORDER BY drop`, `AS delete`): PostgreSQL's keywords `INSERT`, `DROP`,
/// `ALTER` and more are unreserved, and the dialects that reserve them
/// refuse the text.
const OPERAND_BEFORE: &[&str] = &[
    "SELECT",
    "DISTINCT",
    "ALL",
    "WHERE",
    "AND",
    "OR",
    "NOT",
    "ON",
    "BY",
    "CASE",
    "WHEN",
    "THEN",
    "ELSE",
    "HAVING",
    "AS",
    "FROM",
    "JOIN",
    "IN",
    "IS",
    "LIKE",
    "BETWEEN",
    "TOP",
    "LIMIT",
    "OFFSET",
    "FETCH",
    "WITH",
    "RECURSIVE",
    "TABLE",
    "USE",
];

/// Words before a `(` that opens a subquery rather than a call's
/// arguments (`FROM (DELETE ...)`, but `trim(delete FROM x)`).
const SUBQUERY_BEFORE: &[&str] = &[
    "AS",
    "MATERIALIZED",
    "FROM",
    "JOIN",
    "LATERAL",
    "IN",
    "EXISTS",
    "ANY",
    "SOME",
    "ALL",
    "SELECT",
    "WHERE",
    "AND",
    "OR",
    "NOT",
    "ON",
    "HAVING",
    "WHEN",
    "THEN",
    "ELSE",
    "UNION",
    "EXCEPT",
    "INTERSECT",
];

/// Words that an `EXPLAIN` may take before the statement it explains.
const EXPLAIN_OPTIONS: &[&str] = &[
    "ANALYZE", "ANALYSE", "VERBOSE", "QUERY", "PLAN", "EXTENDED", "ESTIMATE",
];

/// What the SQL reference reads an operator as (`+`, `@@`, `<=`, ...): a
/// word after it is an operand.
const OPERATOR: &str = "operator";

fn push_word(statements: &mut [Vec<String>], word: String) {
    if let Some(words) = statements.last_mut() {
        words.push(word);
    }
}

/// Whether `text` only reads, read as words outside comments (`--` to the
/// end of the line, in MySQL only before white space or a control
/// character; `/* */`, nested but in MySQL and SQLite; `#` in MySQL, whose
/// `/*! */` is code), string literals (`'...'` with `''`; `$tag$...$tag$`
/// but in MySQL, whose names hold `$`, and SQLite, where `$name(...)` is a
/// parameter; backslash escapes in MySQL and in PostgreSQL's `E'...'`; the
/// generic dialect's triple-quoted `R"""..."""`) and quoted names
/// (`"..."`; `` `...` `` in MySQL, SQLite and the generic dialect; `[...]`
/// with `]]` but in PostgreSQL and MySQL), statement by statement (`;`):
/// no statement writes ([`statement_writes`]). MySQL's text must only read
/// both with and without backslash escapes, as its `NO_BACKSLASH_ESCAPES`
/// and `ANSI_QUOTES` modes read it.
fn reference_read_only(text: &str, dialect: &str) -> bool {
    let statements = reference_statements(text, dialect, true);
    let reads = |statements: Vec<Vec<String>>| {
        statements
            .iter()
            .filter(|words| !words.is_empty())
            .all(|words| !statement_writes(words, dialect))
    };
    reads(statements) && (dialect != "mysql" || reads(reference_statements(text, dialect, false)))
}

/// The words of each statement of `text` as [`reference_read_only`] reads
/// them (in MySQL with or without backslash escapes): a string or quoted
/// name is `'`, an operator [`OPERATOR`].
fn reference_statements(text: &str, dialect: &str, mysql_escapes: bool) -> Vec<Vec<String>> {
    let mysql = dialect == "mysql";
    let sqlite = dialect == "sqlite";
    // `[` quotes a name but in PostgreSQL (an array's subscript) and MySQL.
    let brackets_quote = !matches!(dialect, "postgresql" | "mysql");
    // `` ` `` quotes a name in MySQL, SQLite and the generic dialect; it
    // may be part of an operator in PostgreSQL (`&\``).
    let backticks_quote = matches!(dialect, "generic" | "mysql" | "sqlite");
    // Any other character than ASCII's is part of a name, as PostgreSQL,
    // MySQL and SQLite read it (`nextval\u{fffd}` is another function),
    // but Unicode's white space, which separates words in the generic
    // dialect and T-SQL, whose names hold letters (`SELECT\u{85}1`).
    let letters_only = matches!(dialect, "generic" | "mssql");
    // `@` and `#` begin and continue names in T-SQL (`@var`, `#temp`,
    // `D#nextval`) and the generic dialect, `@` and `$` in MySQL as the
    // parser reads it (`a.$ * into`, a product); elsewhere they are
    // operators.
    let name_symbols: &[char] = match dialect {
        "generic" | "mssql" => &['@', '#'],
        "mysql" => &['@', '$'],
        _ => &[],
    };
    let in_name = |c: char| {
        c.is_alphanumeric()
            || c == '_'
            || name_symbols.contains(&c)
            || !(c.is_ascii() || letters_only && c.is_whitespace())
    };
    let nested_comments = matches!(dialect, "generic" | "postgresql" | "mssql");
    let escape_strings = matches!(dialect, "generic" | "postgresql");
    let continues_name = |c: char| in_name(c) || (!sqlite && c == '$');
    let mut statements: Vec<Vec<String>> = vec![Vec::new()];
    let chars: Vec<char> = text.chars().collect();
    let mut at = 0;
    let until = |from: usize, end: &[char]| -> usize {
        (from..chars.len())
            .find(|&i| chars[i..].starts_with(end))
            .map_or(chars.len(), |i| i + end.len())
    };
    while at < chars.len() {
        let c = chars[at];
        let next = chars.get(at + 1).copied();
        let mysql_comment = |after: Option<&char>| {
            after.is_none_or(|after| *after == ' ' || after.is_ascii_control())
        };
        if (c == '-' && next == Some('-') && (!mysql || mysql_comment(chars.get(at + 2))))
            || (c == '#' && mysql)
        {
            at = until(at, &['\n']);
        } else if c == '/' && next == Some('*') {
            if mysql && chars.get(at + 2) == Some(&'!') {
                // MySQL runs what such a comment holds.
                at += 3;
                continue;
            }
            if !nested_comments {
                at = until(at + 2, &['*', '/']);
                continue;
            }
            let mut depth = 0;
            let mut i = at;
            while i < chars.len() {
                if chars[i..].starts_with(&['/', '*']) {
                    depth += 1;
                    i += 2;
                } else if chars[i..].starts_with(&['*', '/']) {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            at = i;
        } else if matches!(c, '\'' | '"')
            || (c == '`' && backticks_quote)
            || (c == '[' && brackets_quote)
        {
            // A one-letter prefix: `E'...'`, the generic dialect's raw
            // `R'...'` and `R"""..."""`.
            let prefixed = |letters: [char; 2]| {
                at.checked_sub(1)
                    .is_some_and(|p| letters.contains(&chars[p]))
                    && at.checked_sub(2).is_none_or(|b| !continues_name(chars[b]))
            };
            if dialect == "generic" && prefixed(['r', 'R']) && chars[at..].starts_with(&[c, c, c]) {
                at = until(at + 3, &[c, c, c]);
                push_word(&mut statements, "'".to_owned());
                continue;
            }
            // `[name]` closes at `]`; every quote is written twice inside.
            let close = if c == '[' { ']' } else { c };
            let escapes = (mysql && mysql_escapes && c != '`')
                || (escape_strings && c == '\'' && prefixed(['e', 'E']));
            let mut i = at + 1;
            while i < chars.len() {
                if escapes && chars[i] == '\\' {
                    i += 2;
                } else if chars[i] == close {
                    if chars.get(i + 1) == Some(&close) {
                        i += 2;
                    } else {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            at = i + 1;
            push_word(&mut statements, "'".to_owned());
        } else if c == '$' && sqlite {
            // SQLite's `$name` parameter, with `::` and a `(...)` suffix
            // that ends at white space or `)`.
            let mut i = at + 1;
            while i < chars.len() && (in_name(chars[i]) || chars[i] == '$' || chars[i] == ':') {
                i += 1;
            }
            if i > at + 1 && chars.get(i) == Some(&'(') {
                while i < chars.len() && !(chars[i].is_ascii_whitespace() || chars[i] == ')') {
                    i += 1;
                }
                i += 1;
            }
            at = i;
            push_word(&mut statements, "'".to_owned());
        } else if c == '$' && !mysql {
            let tag_end =
                (at + 1..chars.len()).find(|&i| !(chars[i].is_alphanumeric() || chars[i] == '_'));
            match tag_end {
                Some(end) if chars[end] == '$' => {
                    let tag: Vec<char> = chars[at..=end].to_vec();
                    at = until(end + 1, &tag);
                    push_word(&mut statements, "'".to_owned());
                }
                _ => at += 1,
            }
        } else if c == ';' {
            statements.push(Vec::new());
            at += 1;
        } else if in_name(c) {
            let start = at;
            // A name holds `$` after its first character (`a$merge`,
            // `E$$a` in T-SQL), but in SQLite, where it starts a parameter
            // (`SELECT$1`).
            while at < chars.len() && continues_name(chars[at]) {
                at += 1;
            }
            let word: String = chars[start..at].iter().collect::<String>().to_uppercase();
            push_word(&mut statements, word);
        } else if matches!(c, '(' | ')' | '.' | ':' | ',') {
            push_word(&mut statements, c.to_string());
            at += 1;
        } else if c == '*' {
            // `SELECT *` and `t.*` name every column; anywhere else `*`
            // multiplies.
            let wildcard = statements
                .last()
                .and_then(|words| words.last())
                .is_some_and(|last| {
                    matches!(last.as_str(), "SELECT" | "DISTINCT" | "ALL" | "," | ".")
                });
            let word = if wildcard { "*" } else { OPERATOR };
            push_word(&mut statements, word.to_owned());
            at += 1;
        } else if "@#+-=<>|&~!%^/?`".contains(c) {
            push_word(&mut statements, OPERATOR.to_owned());
            at += 1;
        } else {
            at += 1;
        }
    }
    statements
}

/// Whether one statement's words (as [`reference_read_only`] reads them)
/// write. A word writes only where a statement's verb stands: first; after
/// a `WITH`'s list (`WITH a AS (...) DELETE ...`); as the statement an
/// `EXPLAIN` names; as a data-modifying subquery (`(DELETE FROM`, `(INSERT
/// INTO`, `(MERGE INTO`, `(UPDATE t SET a =`) after a `(` that opens a
/// subquery; `INTO` after a select list (`SELECT * INTO t2`) or, in
/// MySQL, before `OUTFILE`, `DUMPFILE` or `@var`; in T-SQL, a reserved verb
/// where a keyword stands. So do calls of [`WRITE_FUNCTIONS`]. Anywhere
/// else a write word is a name, as the dialects that do not reserve it
/// read it: a column, a table or an alias (`SELECT 1 drop`, `SELECT
/// count(*) delete FROM t`, `SELECT!!!!I VACUUM`, `trim(delete FROM x)`).
fn statement_writes(words: &[String], dialect: &str) -> bool {
    let word = |i: usize| words.get(i).map(String::as_str);
    let is_write_word = |i: usize| word(i).is_some_and(|w| WRITE_WORDS.contains(&w));
    let called = |i: usize| word(i + 1) == Some("(");
    // A name, not a keyword: `t.drop`; `v:drop` (a key of a
    // semi-structured value, a `:param`, a `::type`); an operand; or a word
    // ending the statement, a list or a group (`FROM t INTO`, `SELECT 0
    // lock, 1`).
    let named = |i: usize| {
        let before = i.checked_sub(1).and_then(word);
        matches!(word(i + 1), None | Some("," | ")"))
            || before.is_some_and(|b| {
                matches!(b, "." | ":" | "," | OPERATOR) || OPERAND_BEFORE.contains(&b)
            })
    };
    // A verb followed by its statement, not by an operator or a `.`.
    let verb_at = |i: usize| {
        is_write_word(i)
            && !called(i)
            && !matches!(word(i + 1), None | Some("," | ")" | "." | ":" | OPERATOR))
    };
    if !READ_STARTS.contains(&words[0].as_str()) {
        return true;
    }
    if words
        .iter()
        .enumerate()
        .any(|(i, w)| called(i) && WRITE_FUNCTIONS.contains(&w.as_str()))
    {
        return true;
    }
    if words.iter().enumerate().any(|(i, w)| {
        // MySQL's `INTO OUTFILE`, `INTO DUMPFILE` and `INTO @var` may
        // also end the statement.
        let mysql_target =
            dialect == "mysql" && matches!(word(i + 1), Some("OUTFILE" | "DUMPFILE" | OPERATOR));
        w == "INTO" && !called(i) && !named(i) && (after_the_select_list(words, i) || mysql_target)
    }) {
        return true;
    }
    if words[0] == "WITH" && main_verb(words).is_some_and(verb_at) {
        return true;
    }
    if matches!(words[0].as_str(), "EXPLAIN" | "DESCRIBE" | "DESC")
        && explained_verb(words).is_some_and(verb_at)
    {
        return true;
    }
    if (0..words.len()).any(|i| data_modifying_subquery(words, i)) {
        return true;
    }
    dialect == "mssql"
        && words.iter().enumerate().any(|(i, w)| {
            let before = i.checked_sub(1).and_then(word);
            // Locking reads: `FOR UPDATE`, `FOR NO KEY UPDATE`.
            let reading = w == "UPDATE" && matches!(before, Some("FOR" | "KEY"));
            TSQL_VERBS.contains(&w.as_str())
                && before != Some("(")
                && !(called(i) || named(i) || reading)
                && !matches!(word(i + 1), Some("." | OPERATOR))
        })
}

/// Whether the word at `i` stands after a select list, before its `FROM`
/// (`SELECT a INTO t2 FROM t`); elsewhere `INTO` is a name (`FROM t INTO
/// WHERE ...`, an alias).
fn after_the_select_list(words: &[String], i: usize) -> bool {
    let mut depth = 0usize;
    for word in words[..i].iter().rev() {
        match word.as_str() {
            ")" => depth += 1,
            "(" if depth == 0 => return false,
            "(" => depth -= 1,
            "FROM" if depth == 0 => return false,
            "SELECT" if depth == 0 => return true,
            _ => {}
        }
    }
    false
}

/// The index of the verb of a `WITH` statement's main statement: the first
/// word after the list of named queries, at the outermost level.
fn main_verb(words: &[String]) -> Option<usize> {
    let mut depth = 0usize;
    for (i, word) in words.iter().enumerate().skip(1) {
        match word.as_str() {
            "(" => depth += 1,
            ")" => depth = depth.checked_sub(1)?,
            "," | "AS" | "MATERIALIZED" | "NOT" => {}
            _ if depth == 0 && words[i - 1] == ")" => return Some(i),
            _ => {}
        }
    }
    None
}

/// The index of the first word of the statement an `EXPLAIN` names, past
/// its options (`ANALYZE`, `FORMAT JSON`, `(ANALYZE, VERBOSE)`).
fn explained_verb(words: &[String]) -> Option<usize> {
    let mut i = 1;
    loop {
        match words.get(i)?.as_str() {
            "(" => i = i + words[i..].iter().position(|w| w == ")")? + 1,
            "FORMAT" => i += 2,
            option if EXPLAIN_OPTIONS.contains(&option) => i += 1,
            _ => return Some(i),
        }
    }
}

/// Whether the word at `i` starts a data-modifying statement inside a
/// subquery's `(`: `DELETE FROM`, `INSERT INTO`, `MERGE INTO`, `UPDATE t
/// SET a =` (a name in at most four words, then `SET`, a name and an
/// operator).
fn data_modifying_subquery(words: &[String], i: usize) -> bool {
    let word = |at: usize| words.get(at).map(String::as_str);
    let opens_a_subquery = i.checked_sub(2).is_none_or(|b| {
        SUBQUERY_BEFORE.contains(&words[b].as_str())
            || matches!(words[b].as_str(), "(" | "," | OPERATOR)
    }) && i.checked_sub(1).and_then(word) == Some("(");
    if !opens_a_subquery {
        return false;
    }
    match (word(i), word(i + 1)) {
        (Some("DELETE"), Some("FROM")) | (Some("INSERT" | "MERGE"), Some("INTO")) => true,
        (Some("UPDATE"), _) => (i + 2..=i + 5).any(|set| {
            let name = |w: &str| w == "'" || w.chars().all(|c| c.is_alphanumeric() || c == '_');
            word(set) == Some("SET")
                && words[i + 1..set].iter().all(|w| w == "." || name(w))
                && word(set + 1).is_some_and(name)
                && word(set + 2) == Some(OPERATOR)
        }),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_committed_command_lines_pass() {
        nexo_testkit::replay("shell", super::shell_quoting);
    }

    #[test]
    fn the_committed_urls_pass() {
        nexo_testkit::replay("url", super::url_matcher);
    }

    #[test]
    fn the_committed_policy_twins_pass() {
        nexo_testkit::replay("policy_twins", super::policy_twins);
    }

    /// The twins are not vacuous: a policy of rules reads the same both
    /// ways, and a wrong field fails both.
    #[test]
    fn the_policy_twins_read_alike() {
        let json = r#"{"default":"deny","rule":[{"name":"r","decision":"deny","tool":["a","b*"],"argument":[{"pointer":"/sql","sql":["write"]}]}]}"#;
        let value: serde_json::Value = serde_json::from_str(json).unwrap_or_default();
        for style in 0..4 {
            let mut yaml = String::new();
            super::write_yaml(&value, style, 0, &mut yaml);
            let read = super::read_policy("p.yaml", &yaml);
            assert!(read.is_ok(), "{yaml}\n{read:?}");
            assert_eq!(read, super::read_policy("p.json", json), "{yaml}");
            super::policy_twins(&[&[style], json.as_bytes()].concat());
        }
        assert!(super::read_policy("p.json", r#"{"rules":[]}"#).is_err());
    }

    #[test]
    fn the_committed_sql_texts_pass() {
        nexo_testkit::replay("sql", super::sql_matcher);
    }

    #[test]
    fn the_sql_reference_reads_the_usual_tricks() {
        for (text, read_only) in [
            ("SELECT 1 -- ; DROP TABLE t", true),
            ("SELECT ';DROP TABLE t' /* ; DELETE FROM t */", true),
            ("SELECT 1; DROP TABLE t", false),
            (
                "WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d",
                false,
            ),
            ("SELECT nextval('s')", false),
            ("SELECT * FROM t FOR UPDATE", true),
            ("SELECT \"delete\" FROM t", true),
            ("SELECT v: -- x\n DROP t", true),
            ("SELECT v:drop FROM t; DROP TABLE t", false),
            ("SELECT lect @@detach", true),
            ("SELECT * INTO t2 FROM t", false),
            ("SELECT alter[a] FROM [t] ORDER BY drop", true),
            ("SELECT [a]]; DROP TABLE t] FROM t", true),
            ("SELECT * FROM t INTO", true),
            ("SELECT 0 lock, 1", true),
            ("SELECT * FROM t INTO OUTFILE '/tmp/x'", true),
            ("SELECT * FROM t INTO WHERE 1 = 1", true),
            ("SELECT (SELECT 1 FROM u) INTO t2 FROM t", false),
            ("WITH d AS (DELETE FROM t) SELECT 1", false),
            ("SELECT 1 drop", true),
            ("SELECT count(*) delete FROM t", true),
            ("SELECT trim(delete FROM x), CAST(drop AS int)", true),
            ("SELECT (update or set) FROM t", true),
            ("WITH delete AS (SELECT 1) SELECT * FROM delete", true),
            ("SELECT * FROM (DELETE FROM t RETURNING *) x", false),
            ("WITH a(x) AS (SELECT 1) DELETE FROM t", false),
            ("WITH d AS (UPDATE t SET a = 1 RETURNING *) SELECT 1", false),
            ("EXPLAIN ANALYZE DELETE FROM t", false),
            ("EXPLAIN (ANALYZE) INSERT INTO t VALUES (1)", false),
            ("DESC delete", true),
            ("SELECT 1 END DROP TABLE t", true),
        ] {
            assert_eq!(
                super::reference_read_only(text, "generic"),
                read_only,
                "{text}"
            );
        }
        let nested = "SELECT 1 /* /* */ AS \"x */; DROP TABLE t; -- \"";
        let dashes = "SELECT 1 --1 /*\n; DROP TABLE t */";
        let dollars = "SELECT $$x; DROP TABLE t; --$$";
        let backticks = "SELECT a &` b; DROP TABLE t; --`";
        let raw = "SELECT R\"\"\"a\"; DROP TABLE t; --\"\"\"";
        for (dialect, text, read_only) in [
            ("mysql", "SELECT 1 /*! ; DROP TABLE t */", false),
            ("postgresql", "SELECT a[b[1]]; DROP TABLE t", false),
            ("mysql", "SELECT a$merge$b", true),
            // `$`: a dollar quote in PostgreSQL, a parameter in SQLite, a
            // name's character after its first in T-SQL and MySQL.
            ("postgresql", dollars, true),
            ("sqlite", dollars, false),
            ("sqlite", "SELECT $a(;DROP)", true),
            ("mssql", "SELECT a$$b, $$; DROP TABLE t; $$", true),
            ("mysql", "SELECT a.$* INTO x", true),
            // A backtick quotes in MySQL and is an operator's in PostgreSQL.
            ("mysql", backticks, true),
            ("postgresql", backticks, false),
            ("generic", raw, true),
            ("postgresql", raw, false),
            // `#` and `@` are a name's in T-SQL, an operator in PostgreSQL.
            ("mssql", "SELECT D#nextval('s'), @x", true),
            ("postgresql", "SELECT D#nextval('s')", false),
            ("mysql", "SELECT * FROM t INTO OUTFILE '/tmp/x'", false),
            // Unicode's white space separates words in generic only.
            ("generic", "\u{85}\n\u{85}\nSELECT\u{85}1", true),
            ("postgresql", "SELECT\u{85}1", false),
            // Comments nest in PostgreSQL, not in MySQL; MySQL's `--` needs
            // a space after it.
            ("postgresql", nested, false),
            ("mysql", nested, true),
            ("mysql", dashes, true),
            ("postgresql", dashes, false),
            // Backslash escapes: in PostgreSQL's `E'...'`; in MySQL's
            // strings but for the modes that turn them off (so neither
            // reading may write), not in its quoted names.
            ("postgresql", "SELECT E'\\'; DROP TABLE t; --'", true),
            ("postgresql", "SELECT '\\'; DROP TABLE t; --'", false),
            ("mysql", "SELECT '\\'; DROP TABLE t; --'", false),
            ("mysql", "SELECT `\\`; DROP TABLE t; -- `", false),
            ("mysql", "SELECT 'a\\'' FROM t", true),
            // PostgreSQL's `VACUUM` is an alias here; T-SQL's reserved
            // verbs start a statement without a `;`.
            ("postgresql", "SELECT!!!!I\nVACUUM WHERE CK", true),
            ("mssql", "SELECT 1 DROP TABLE t", false),
            ("mssql", "BEGIN DROP TABLE t", false),
            ("mssql", "SELECT a FROM t DELETE FROM t", false),
            ("mssql", "SELECT CAST(drop AS int) FROM t FOR UPDATE", true),
        ] {
            assert_eq!(
                super::reference_read_only(text, dialect),
                read_only,
                "{dialect}: {text}"
            );
        }
    }

    #[test]
    fn the_committed_paths_pass() {
        nexo_testkit::replay("path", super::path_matcher);
    }
}
