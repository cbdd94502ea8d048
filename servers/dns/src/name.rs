//! The `dominio` argument: checked and turned into a fully qualified
//! [`Name`] in A-labels (an internationalized name such as `café.example`
//! becomes `xn--caf-dma.example`, UTS #46 via hickory-proto), or a
//! [`DomainError`] saying what is wrong with it.

use std::net::IpAddr;

use hickory_proto::rr::Name;

use crate::error::DomainError;

/// The longest domain name in presentation form, without the final dot
/// (RFC 1035's 255 octets on the wire).
const MAX_LENGTH: usize = 253;
/// The longest label (RFC 1035).
const MAX_LABEL: usize = 63;

/// `dominio` as a fully qualified name in A-labels.
pub fn parse(dominio: &str) -> Result<Name, DomainError> {
    let trimmed = dominio.trim();
    let text = trimmed.strip_suffix('.').unwrap_or(trimmed);
    if text.is_empty() {
        return Err(DomainError::Empty);
    }
    if text.parse::<IpAddr>().is_ok()
        || text
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok()
    {
        return Err(DomainError::IpAddress(text.to_owned()));
    }
    if let Some(bad) = text.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Err(DomainError::BadCharacter(text.to_owned(), bad));
    }
    if text.split('.').any(str::is_empty) {
        return Err(DomainError::EmptyLabel(text.to_owned()));
    }
    let mut name = Name::from_utf8(text)
        .map_err(|error| DomainError::Invalid(text.to_owned(), error.to_string()))?;
    name.set_fqdn(true);
    let ascii = name.to_ascii();
    let ascii = ascii.strip_suffix('.').unwrap_or(&ascii).to_owned();
    if ascii.len() > MAX_LENGTH {
        return Err(DomainError::TooLong(ascii.len()));
    }
    for label in ascii.split('.') {
        if label.len() > MAX_LABEL {
            return Err(DomainError::LabelTooLong(label.to_owned()));
        }
        let host_like = label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !host_like || label.starts_with('-') || label.ends_with('-') {
            return Err(DomainError::BadLabel(label.to_owned()));
        }
    }
    if name.num_labels() < 1 {
        return Err(DomainError::Empty);
    }
    Ok(name.to_lowercase())
}

/// A name for display: A-labels, no final dot.
pub fn show(name: &Name) -> String {
    let text = name.to_ascii();
    match text.strip_suffix('.') {
        Some(stripped) if !stripped.is_empty() => stripped.to_owned(),
        _ => text,
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;

    #[test]
    fn good_names_become_lower_case_a_labels() {
        assert_eq!(show(&parse("Example.COM").unwrap()), "example.com");
        assert_eq!(show(&parse("example.com.").unwrap()), "example.com");
        assert_eq!(show(&parse("café.example").unwrap()), "xn--caf-dma.example");
        assert_eq!(
            show(&parse("_dmarc.example.com").unwrap()),
            "_dmarc.example.com"
        );
        assert_eq!(show(&parse("münchen.de").unwrap()), "xn--mnchen-3ya.de");
    }

    #[test]
    fn bad_names_are_refused_with_a_reason() {
        assert!(matches!(parse(""), Err(DomainError::Empty)));
        assert!(matches!(parse("  . "), Err(DomainError::Empty)));
        assert!(matches!(parse("192.0.2.1"), Err(DomainError::IpAddress(_))));
        assert!(matches!(parse("::1"), Err(DomainError::IpAddress(_))));
        assert!(matches!(parse("a..b"), Err(DomainError::EmptyLabel(_))));
        assert!(matches!(
            parse("a b.com"),
            Err(DomainError::BadCharacter(..))
        ));
        assert!(parse("-a.com").is_err());
        assert!(parse("a!.com").is_err());
        assert!(matches!(
            parse("a_b!"),
            Err(DomainError::Invalid(..) | DomainError::BadLabel(_))
        ));
        let long_label = format!("{}.com", "a".repeat(64));
        assert!(parse(&long_label).is_err());
        let long = vec!["abcdefghi"; 26].join(".");
        assert!(parse(&long).is_err());
    }
}
