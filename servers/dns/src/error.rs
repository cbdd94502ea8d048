//! The errors a tool reports as a tool error (`isError: true`): a
//! `dominio` that is not a domain name ([`DomainError`]) or a resolver list
//! that cannot be used ([`ResolverError`]). Everything a DNS server says or
//! fails to say is a finding in the result instead, never an error.

use thiserror::Error;

/// Why `dominio` is not a usable domain name.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DomainError {
    #[error("the domain name is empty; give one such as `example.com`")]
    Empty,
    #[error("`{0}` is an IP address, not a domain name; give a name such as `example.com`")]
    IpAddress(String),
    #[error("`{0}` contains the character {1:?}, which no domain name may hold")]
    BadCharacter(String, char),
    #[error("`{0}` has an empty label (two dots in a row, or a leading dot)")]
    EmptyLabel(String),
    #[error("`{0}` is not a valid domain name: {1}")]
    Invalid(String, String),
    #[error("the domain name is {0} characters long in A-labels; the limit is 253")]
    TooLong(usize),
    #[error("the label `{0}` is longer than 63 characters")]
    LabelTooLong(String),
    #[error(
        "the label `{0}` is not valid: use letters, digits and hyphens (not at either end), \
         or `_` for service labels"
    )]
    BadLabel(String),
}

/// Why the `resolutores` argument cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ResolverError {
    #[error(
        "`{0}` is not a resolver address: give an IP address, optionally with a port (`192.0.2.1`, `192.0.2.1:5353`, `[2001:db8::1]:53`)"
    )]
    BadAddress(String),
    #[error("{0} resolvers given; the limit is {1}")]
    TooMany(usize, usize),
}
