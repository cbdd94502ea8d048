//! What a certificate the person named holds, read from its DER: its dates
//! and the names it is for, enough to check it as OpenSSL checks a host
//! (`subjectAltName` DNS names with a left-most `*` label, IP addresses,
//! and the subject's common name only when there is no `subjectAltName`).
//! The bytes come from the server: every length is checked, nothing
//! panics, and what does not read is `None`.

use std::net::IpAddr;

use rustls::CertificateError;
use rustls::pki_types::{ServerName, UnixTime};

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const INTEGER: u8 = 0x02;
const OID: u8 = 0x06;
const BOOLEAN: u8 = 0x01;
const OCTET_STRING: u8 = 0x04;
const UTC_TIME: u8 = 0x17;
const GENERALIZED_TIME: u8 = 0x18;
/// `[0]` version, `[3]` extensions (explicit, constructed).
const VERSION: u8 = 0xa0;
const EXTENSIONS: u8 = 0xa3;
/// `dNSName [2]` and `iPAddress [7]` of a `GeneralName` (implicit).
const DNS_NAME: u8 = 0x82;
const IP_ADDRESS: u8 = 0x87;
/// 2.5.4.3, `commonName`.
const COMMON_NAME: &[u8] = &[0x55, 0x04, 0x03];
/// 2.5.29.17, `subjectAltName`.
const SUBJECT_ALT_NAME: &[u8] = &[0x55, 0x1d, 0x11];

/// A certificate's dates and names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Held {
    /// Seconds since the Unix epoch.
    pub(crate) not_before: i64,
    pub(crate) not_after: i64,
    pub(crate) dns_names: Vec<String>,
    pub(crate) ip_addresses: Vec<IpAddr>,
    /// Whether it has a `subjectAltName` at all (then the common name is
    /// no name it is for).
    pub(crate) has_alt_names: bool,
    pub(crate) common_name: Option<String>,
}

/// One DER element: its tag, its content, and what follows it.
fn element(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let tag = *input.first()?;
    if tag & 0x1f == 0x1f {
        return None; // a multi-byte tag, which no field read here has
    }
    let first = *input.get(1)?;
    let (length, header) = if first < 0x80 {
        (usize::from(first), 2)
    } else {
        let count = usize::from(first & 0x7f);
        if count == 0 || count > 4 {
            return None;
        }
        let bytes = input.get(2..2 + count)?;
        let length = bytes
            .iter()
            .fold(0usize, |length, byte| (length << 8) | usize::from(*byte));
        (length, 2 + count)
    };
    let end = header.checked_add(length)?;
    Some((tag, input.get(header..end)?, input.get(end..)?))
}

/// The content of an element that must be `tag`, and what follows it.
fn expect(input: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    let (found, content, rest) = element(input)?;
    (found == tag).then_some((content, rest))
}

/// Every element of a SEQUENCE's or SET's content.
fn elements(mut input: &[u8]) -> impl Iterator<Item = (u8, &[u8])> {
    std::iter::from_fn(move || {
        let (tag, content, rest) = element(input)?;
        input = rest;
        Some((tag, content))
    })
}

impl Held {
    /// Reads a DER certificate; `None` for anything that is not one.
    pub(crate) fn read(der: &[u8]) -> Option<Held> {
        let (certificate, _) = expect(der, SEQUENCE)?;
        let (tbs, _) = expect(certificate, SEQUENCE)?;
        let mut rest = tbs;
        if let Some((VERSION, _, after)) = element(rest) {
            rest = after;
        }
        let (_, rest) = expect(rest, INTEGER)?; // serial number
        let (_, rest) = expect(rest, SEQUENCE)?; // signature algorithm
        let (_, rest) = expect(rest, SEQUENCE)?; // issuer
        let (validity, rest) = expect(rest, SEQUENCE)?;
        let (subject, rest) = expect(rest, SEQUENCE)?;
        let (_, rest) = expect(rest, SEQUENCE)?; // public key
        let mut dates = elements(validity);
        let not_before = time(dates.next()?)?;
        let not_after = time(dates.next()?)?;
        let mut held = Held {
            not_before,
            not_after,
            dns_names: Vec::new(),
            ip_addresses: Vec::new(),
            has_alt_names: false,
            common_name: common_name(subject),
        };
        let extensions = elements(rest)
            .find(|(tag, _)| *tag == EXTENSIONS)
            .and_then(|(_, content)| expect(content, SEQUENCE))
            .map(|(list, _)| list);
        for (_, extension) in elements(extensions.unwrap_or_default()) {
            let Some((oid, after)) = expect(extension, OID) else {
                continue;
            };
            if oid != SUBJECT_ALT_NAME {
                continue;
            }
            let after = match element(after) {
                Some((BOOLEAN, _, after)) => after, // critical
                _ => after,
            };
            let (value, _) = expect(after, OCTET_STRING)?;
            let (names, _) = expect(value, SEQUENCE)?;
            held.has_alt_names = true;
            for (tag, name) in elements(names) {
                match tag {
                    DNS_NAME => held
                        .dns_names
                        .push(String::from_utf8_lossy(name).into_owned()),
                    IP_ADDRESS => {
                        if let Ok(octets) = <[u8; 4]>::try_from(name) {
                            held.ip_addresses.push(IpAddr::from(octets));
                        } else if let Ok(octets) = <[u8; 16]>::try_from(name) {
                            held.ip_addresses.push(IpAddr::from(octets));
                        }
                    }
                    _ => {}
                }
            }
        }
        Some(held)
    }

    /// The names it is for, as an error shows them.
    pub(crate) fn names(&self) -> Vec<String> {
        let mut names = self.dns_names.clone();
        names.extend(self.ip_addresses.iter().map(IpAddr::to_string));
        if !self.has_alt_names {
            names.extend(self.common_name.clone());
        }
        names
    }

    /// Whether it is for `name` and valid at `now`, as rustls's own errors
    /// say it when not.
    pub(crate) fn check(&self, name: &ServerName<'_>, now: UnixTime) -> Result<(), rustls::Error> {
        let seconds = i64::try_from(now.as_secs()).unwrap_or(i64::MAX);
        let unix = |seconds: i64| {
            UnixTime::since_unix_epoch(std::time::Duration::from_secs(
                u64::try_from(seconds).unwrap_or(0),
            ))
        };
        if seconds < self.not_before {
            return Err(CertificateError::NotValidYetContext {
                time: now,
                not_before: unix(self.not_before),
            }
            .into());
        }
        if seconds > self.not_after {
            return Err(CertificateError::ExpiredContext {
                time: now,
                not_after: unix(self.not_after),
            }
            .into());
        }
        if self.is_for(name) {
            return Ok(());
        }
        Err(CertificateError::NotValidForNameContext {
            expected: name.to_owned(),
            presented: self.names(),
        }
        .into())
    }

    fn is_for(&self, name: &ServerName<'_>) -> bool {
        match name {
            ServerName::DnsName(dns) => {
                let host = dns.as_ref();
                let matches = |pattern: &String| dns_matches(pattern, host);
                if self.has_alt_names {
                    self.dns_names.iter().any(matches)
                } else {
                    self.common_name.as_ref().is_some_and(matches)
                }
            }
            ServerName::IpAddress(ip) => {
                let ip = IpAddr::from(*ip);
                self.ip_addresses.contains(&ip)
            }
            _ => false,
        }
    }
}

/// Whether a certificate's DNS name (`*.example.com` standing for one
/// left-most label) is `host`'s, letter case aside.
fn dns_matches(pattern: &str, host: &str) -> bool {
    let pattern = pattern.trim_end_matches('.').to_ascii_lowercase();
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    match pattern.strip_prefix("*.") {
        Some(parent) => host.split_once('.').is_some_and(|(label, rest)| {
            !label.is_empty() && rest == parent && parent.contains('.')
        }),
        None => pattern == host,
    }
}

/// The subject's (last) common name.
fn common_name(subject: &[u8]) -> Option<String> {
    let mut found = None;
    for (tag, set) in elements(subject) {
        if tag != SET {
            continue;
        }
        for (_, attribute) in elements(set) {
            let Some((oid, value)) = expect(attribute, OID) else {
                continue;
            };
            if oid == COMMON_NAME
                && let Some((_, text, _)) = element(value)
            {
                found = Some(String::from_utf8_lossy(text).into_owned());
            }
        }
    }
    found
}

/// A `Time` (UTCTime or GeneralizedTime, in UTC) as Unix seconds.
fn time((tag, text): (u8, &[u8])) -> Option<i64> {
    let text = std::str::from_utf8(text).ok()?.strip_suffix('Z')?;
    let (year, rest) = match tag {
        UTC_TIME => {
            let year: i64 = text.get(..2)?.parse().ok()?;
            (
                if year >= 50 { 1900 + year } else { 2000 + year },
                text.get(2..)?,
            )
        }
        GENERALIZED_TIME => (text.get(..4)?.parse().ok()?, text.get(4..)?),
        _ => return None,
    };
    if rest.len() != 10 || !rest.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let field = |at: usize| rest.get(at..at + 2).and_then(|two| two.parse::<i64>().ok());
    let (month, day) = (field(0)?, field(2)?);
    let (hour, minute, second) = (field(4)?, field(6)?, field(8)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    Some(days_from_civil(year, month, day) * 86_400 + hour * 3_600 + minute * 60 + second)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_read_as_unix_seconds() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(time((UTC_TIME, b"700101000000Z")), Some(0));
        assert_eq!(time((UTC_TIME, b"491231235959Z")), Some(2_524_607_999));
        assert_eq!(
            time((GENERALIZED_TIME, b"20380119031408Z")),
            Some(2_147_483_648)
        );
        for bad in [
            &b"7001010000Z"[..],
            b"701301000000Z",
            b"70010100000aZ",
            b"700101000000",
        ] {
            assert_eq!(time((UTC_TIME, bad)), None, "{bad:?}");
        }
    }

    #[test]
    fn wildcards_stand_for_one_left_most_label() {
        assert!(dns_matches("*.example.com", "a.example.com"));
        assert!(dns_matches("*.Example.com", "A.example.COM."));
        assert!(!dns_matches("*.example.com", "example.com"));
        assert!(!dns_matches("*.example.com", "a.b.example.com"));
        assert!(!dns_matches("*.com", "example.com"));
        assert!(dns_matches("localhost", "LOCALHOST"));
    }

    #[test]
    fn anything_but_a_certificate_reads_as_none() {
        for bad in [
            &b""[..],
            b"\x30",
            b"\x30\x84\xff\xff\xff\xff",
            b"\x30\x03\x30\x01",
            b"not der",
        ] {
            assert_eq!(Held::read(bad), None, "{bad:?}");
        }
    }
}
