//! The current time in an IANA time zone, as `time` reports it: an RFC 3339
//! timestamp to the second with the zone's offset at that instant
//! (`2025-06-01T14:03:07+02:00`), the zone's canonical name and the offset
//! alone. Knows nothing of MCP.
//!
//! Zones come from jiff's time zone database: the system's
//! `/usr/share/zoneinfo` first (the operating system keeps it up to date),
//! then the copy bundled into the binary (jiff's `tzdb-bundle-always`
//! feature) for any name the system does not know, so the tool works the
//! same in a bare container without zoneinfo, or with only part of it.
//! Names are matched without regard to ASCII case.

use jiff::Timestamp;
use jiff::tz::{self, Offset, TimeZone, TimeZoneDatabase};

use crate::error::TimeError;

/// The zone used when none is given.
pub const DEFAULT_ZONE: &str = "UTC";

/// The longest zone name echoed back in an error; longer ones are cut.
const MAX_ECHOED_NAME: usize = 64;

/// A moment as seen in one time zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Now {
    /// RFC 3339 date and time to the second, with the offset, e.g.
    /// `2025-06-01T14:03:07+02:00`; UTC is written `+00:00`.
    pub time: String,
    /// The zone's IANA name as the database spells it, e.g. `Europe/Madrid`.
    pub timezone: String,
    /// The zone's offset from UTC at that moment, e.g. `+02:00`.
    pub offset: String,
}

/// The current time in `zone` (an IANA name such as `Europe/Madrid`; `None`,
/// empty or blank means UTC).
///
/// # Errors
///
/// [`TimeError::UnknownZone`] if the database has no zone of that name.
pub fn now(zone: Option<&str>) -> Result<Now, TimeError> {
    at(Timestamp::now(), zone)
}

/// Like [`now`], at a given moment.
pub(crate) fn at(moment: Timestamp, zone: Option<&str>) -> Result<Now, TimeError> {
    let name = zone.map(str::trim).filter(|name| !name.is_empty());
    let zone = find(tz::db(), name.unwrap_or(DEFAULT_ZONE))?;
    let offset = zone.to_offset(moment);
    let civil = offset.to_datetime(moment);
    let offset_text = format_offset(offset);
    let time = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}{offset_text}",
        civil.year(),
        civil.month(),
        civil.day(),
        civil.hour(),
        civil.minute(),
        civil.second(),
    );
    Ok(Now {
        time,
        timezone: zone.iana_name().unwrap_or(DEFAULT_ZONE).to_owned(),
        offset: offset_text,
    })
}

/// The zone called `name` in the `system` database, else in the bundled
/// one. It must have an IANA name (`Etc/Unknown`, jiff's stand-in for "no
/// zone", is refused too).
fn find(system: &TimeZoneDatabase, name: &str) -> Result<TimeZone, TimeError> {
    let usable =
        |zone: TimeZone| (!zone.is_unknown() && zone.iana_name().is_some()).then_some(zone);
    system
        .get(name)
        .ok()
        .and_then(usable)
        .or_else(|| TimeZoneDatabase::bundled().get(name).ok().and_then(usable))
        .ok_or_else(|| TimeError::UnknownZone { name: echoed(name) })
}

/// `name` cut to [`MAX_ECHOED_NAME`] characters, so an error stays short.
fn echoed(name: &str) -> String {
    match name.char_indices().nth(MAX_ECHOED_NAME) {
        Some((cut, _)) => format!("{}...", &name[..cut]),
        None => name.to_owned(),
    }
}

/// `+HH:MM` or `-HH:MM`, as RFC 3339 writes an offset. Offsets with seconds
/// (local mean time before 1900) lose them; no zone uses one today.
fn format_offset(offset: Offset) -> String {
    let seconds = offset.seconds();
    let sign = if seconds < 0 { '-' } else { '+' };
    let minutes = seconds.unsigned_abs() / 60;
    format!("{sign}{:02}:{:02}", minutes / 60, minutes % 60)
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly on a missing value")]
mod tests {
    use super::*;

    /// 2025-06-01T12:03:07Z, in summer time in Europe.
    fn summer() -> Timestamp {
        Timestamp::from_second(1_748_779_387).unwrap()
    }

    #[test]
    fn utc_by_default() {
        let expected = Now {
            time: "2025-06-01T12:03:07+00:00".to_owned(),
            timezone: "UTC".to_owned(),
            offset: "+00:00".to_owned(),
        };
        for zone in [None, Some(""), Some("  "), Some("UTC"), Some("utc")] {
            assert_eq!(at(summer(), zone).unwrap(), expected, "{zone:?}");
        }
    }

    #[test]
    fn named_zones_carry_their_offset() {
        let madrid = at(summer(), Some("Europe/Madrid")).unwrap();
        assert_eq!(madrid.time, "2025-06-01T14:03:07+02:00");
        assert_eq!(madrid.offset, "+02:00");
        assert_eq!(madrid.timezone, "Europe/Madrid");

        let new_york = at(summer(), Some(" america/new_york ")).unwrap();
        assert_eq!(new_york.time, "2025-06-01T08:03:07-04:00");
        assert_eq!(new_york.timezone, "America/New_York", "canonical spelling");

        let kolkata = at(summer(), Some("Asia/Kolkata")).unwrap();
        assert_eq!(kolkata.time, "2025-06-01T17:33:07+05:30");
    }

    #[test]
    fn unknown_zones_are_named_and_a_form_suggested() {
        for zone in [
            "Mars/Olympus",
            "+02:00",
            "CEST",
            "../../etc/passwd",
            "Etc/Unknown",
        ] {
            let error = at(summer(), Some(zone)).unwrap_err();
            assert_eq!(
                error,
                TimeError::UnknownZone {
                    name: zone.to_owned()
                }
            );
            let message = error.to_string();
            assert!(message.contains(&format!("`{zone}`")), "{message}");
            assert!(message.contains("Europe/Madrid"), "{message}");
        }
    }

    #[test]
    fn long_unknown_names_are_cut_in_the_error() {
        let name = "x".repeat(10_000);
        let TimeError::UnknownZone { name: echoed } = at(summer(), Some(&name)).unwrap_err();
        assert_eq!(echoed, format!("{}...", "x".repeat(MAX_ECHOED_NAME)));
    }

    #[test]
    fn zones_are_found_without_a_system_database() {
        // What `time` does on a machine without /usr/share/zoneinfo.
        let madrid = find(&TimeZoneDatabase::none(), "europe/madrid").unwrap();
        assert_eq!(madrid.iana_name(), Some("Europe/Madrid"));
        assert_eq!(format_offset(madrid.to_offset(summer())), "+02:00");
        assert!(find(&TimeZoneDatabase::none(), "Mars/Olympus").is_err());
    }

    #[test]
    fn offsets_are_written_as_rfc_3339_wants() {
        let offset = |seconds| format_offset(Offset::from_seconds(seconds).unwrap());
        assert_eq!(offset(0), "+00:00");
        assert_eq!(offset(-3 * 3600 - 30 * 60), "-03:30");
        assert_eq!(offset(14 * 3600), "+14:00");
    }
}
