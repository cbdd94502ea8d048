//! How the analysis writes times, durations and ids for people.

/// A duration: `850 us`, `1.25 ms`, `2.50 s`.
pub fn duration(us: u64) -> String {
    #[expect(
        clippy::cast_precision_loss,
        reason = "a duration shown with three significant digits"
    )]
    let us_f = us as f64;
    if us < 1000 {
        format!("{us} us")
    } else if us < 1_000_000 {
        format!("{:.2} ms", us_f / 1000.0)
    } else {
        format!("{:.2} s", us_f / 1_000_000.0)
    }
}

/// A time as an offset from the start of the trace: `+12.345 ms`.
pub fn offset(us: u64) -> String {
    format!("+{}.{:03} ms", us / 1000, us % 1000)
}

/// A time as RFC 3339 in UTC, with microseconds.
pub fn timestamp(us: u64) -> String {
    i64::try_from(us)
        .ok()
        .and_then(|us| jiff::Timestamp::from_microsecond(us).ok())
        .map_or_else(
            || format!("{us} us after the epoch"),
            |time| time.to_string(),
        )
}

/// A JSON-RPC id as its JSON text (`3`, `"a-1"`).
pub fn id(id: Option<&serde_json::Value>) -> String {
    id.map_or_else(|| "-".to_owned(), ToString::to_string)
}

/// The first `limit` characters of `text` on one line, with `…` when cut.
pub fn short(text: &str, limit: usize) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if one_line.chars().count() <= limit {
        return one_line;
    }
    let mut cut: String = one_line.chars().take(limit.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_offsets_read_well() {
        assert_eq!(duration(850), "850 us");
        assert_eq!(duration(1250), "1.25 ms");
        assert_eq!(duration(2_500_000), "2.50 s");
        assert_eq!(offset(0), "+0.000 ms");
        assert_eq!(offset(12_345_678), "+12345.678 ms");
        assert_eq!(
            timestamp(1_700_000_000_000_001),
            "2023-11-14T22:13:20.000001Z"
        );
        assert_eq!(short("a\nb", 10), "a b");
        assert_eq!(short("abcdef", 4), "abc…");
    }
}
