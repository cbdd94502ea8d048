//! The standard catalogue: the child zones of `test.` that the tests, the
//! benchmark and the end-to-end tests share. `ok` and `signed` are healthy
//! (unsigned and signed); every other zone breaks one thing, named in its
//! comment. Zones that differ only in their records share a pair of name
//! servers (`CONTENT` for unsigned zones, [`SIGNED`] for signed ones);
//! zones whose defect is in their servers get servers of their own.

use std::net::Ipv4Addr;

use crate::spec::{DsKind, Ns, Serves, SigDefect, Signing, Zone};

/// The third octet of the server pair that unsigned zones share.
const CONTENT: u8 = 1;
/// The third octet of the server pair that signed zones share.
pub const SIGNED: u8 = 2;

/// A healthy zone: addresses, `www`, a mail host, a strict SPF and DMARC.
const HEALTHY: &str = "\
@ 3600 IN A 192.0.2.10
@ 3600 IN AAAA 2001:db8::10
www 3600 IN A 192.0.2.10
@ 3600 IN MX 10 mail
mail 3600 IN A 192.0.2.25
@ 3600 IN TXT \"v=spf1 ip4:192.0.2.0/24 mx -all\"
_dmarc 3600 IN TXT \"v=DMARC1; p=reject; rua=mailto:dmarc@example.net\"
";

const APEX: &str = "@ 3600 IN A 192.0.2.1\n";
const MX: &str = "@ 3600 IN MX 10 mail\nmail 3600 IN A 192.0.2.25\n";
const SPF: &str = "@ 3600 IN TXT \"v=spf1 ip4:192.0.2.0/24 -all\"\n";
const DMARC: &str = "_dmarc 3600 IN TXT \"v=DMARC1; p=reject; rua=mailto:dmarc@example.net\"\n";

/// `127.<b>.<c>.<d>`.
pub fn ip(b: u8, c: u8, d: u8) -> Ipv4Addr {
    Ipv4Addr::new(127, b, c, d)
}

/// `ns1` at 127.54.k.1 and `ns2` at 127.55.k.1: two networks.
fn pair(k: u8) -> Vec<Ns> {
    vec![
        Ns::serving("ns1", ip(54, k, 1)),
        Ns::serving("ns2", ip(55, k, 1)),
    ]
}

/// `pair(k)` and a third server.
fn pair_and(k: u8, third: Ns) -> Vec<Ns> {
    let mut servers = pair(k);
    servers.push(third);
    servers
}

/// `pair(k)`, `ns2` serving `records` instead of the zone's (same serial).
fn differing(k: u8, records: &str) -> Vec<Ns> {
    vec![
        Ns::serving("ns1", ip(54, k, 1)),
        Ns::doing("ns2", ip(55, k, 1), zone(1, Some(records))),
    ]
}

/// An unsigned zone on the shared servers.
fn content(label: &'static str, records: impl Into<String>) -> Zone {
    Zone::new(label, records, pair(CONTENT))
}

/// A zone that sends mail: `mx`, `spf` and `dmarc` replaced where given,
/// the healthy ones otherwise, and `extra` records.
fn mail(
    label: &'static str,
    mx: Option<&str>,
    spf: Option<&str>,
    dmarc: Option<&str>,
    extra: &str,
) -> Zone {
    let records = format!(
        "{APEX}{}{}{}{extra}",
        mx.unwrap_or(MX),
        spf.unwrap_or(SPF),
        dmarc.unwrap_or(DMARC)
    );
    content(label, records)
}

/// A signed zone on the shared signed servers.
fn signed(label: &'static str, signing: Signing) -> Zone {
    Zone::new(label, HEALTHY, pair(SIGNED)).signed(signing)
}

/// Serves the zone with `serial`, other records when given.
fn zone(serial: u32, records: Option<&str>) -> Serves {
    Serves::Zone {
        serial,
        records: records.map(str::to_owned),
    }
}

/// Every zone of the standard bed.
pub fn standard() -> Vec<Zone> {
    let mut zones = vec![
        // Healthy.
        content("ok", HEALTHY),
        signed("signed", Signing::good()),
        // Delegation and servers.
        Zone::new(
            "lame",
            APEX,
            pair_and(3, Ns::doing("ns3", ip(56, 3, 1), Serves::Nothing)),
        ),
        Zone::new(
            "slow",
            APEX,
            pair_and(4, Ns::doing("ns3", ip(56, 4, 1), Serves::Silent)),
        ),
        Zone::new(
            "refusing",
            APEX,
            pair_and(5, Ns::doing("ns3", ip(56, 5, 1), Serves::Refuses)),
        ),
        Zone::new(
            "dead",
            APEX,
            vec![
                Ns::doing("ns1", ip(54, 6, 1), Serves::Nothing),
                Ns::doing("ns2", ip(55, 6, 1), Serves::Nothing),
            ],
        ),
        Zone::new(
            "serial",
            APEX,
            vec![
                Ns::doing("ns1", ip(54, 7, 1), zone(2024010101, None)),
                Ns::doing("ns2", ip(55, 7, 1), zone(2024010102, None)),
            ],
        ),
        Zone::new("single", APEX, vec![Ns::serving("ns1", ip(54, 8, 1))]),
        Zone::new(
            "samenet",
            APEX,
            vec![
                Ns::serving("ns1", ip(54, 9, 1)),
                Ns::serving("ns2", ip(54, 9, 2)),
            ],
        ),
        Zone::new("noaddr", APEX, pair_and(10, Ns::without_address("ns3"))),
        Zone::new(
            "parentns",
            APEX,
            pair_and(11, Ns::serving("ns3", ip(56, 11, 1)).undelegated()),
        ),
        // No NS at all: the zone exists only at the resolvers.
        Zone::new("nons", APEX, Vec::new()),
        // One RRset, two TTLs on two servers.
        Zone::new("ttlmix", APEX, differing(12, "@ 1800 IN A 192.0.2.1\n")),
        // Two servers, two addresses for the apex, one serial.
        Zone::new("split", APEX, differing(13, "@ 3600 IN A 192.0.2.2\n")),
        // Records.
        content("wild", "@ 3600 IN A 192.0.2.1\n* 3600 IN A 192.0.2.99\n"),
        content(
            "dangling",
            "@ 3600 IN A 192.0.2.1\nwww 3600 IN CNAME gone.dangling.test.\n",
        ),
        // Aliases that lead nowhere: two steps to a missing name, a loop,
        // and one into a zone whose servers never answer.
        content(
            "chain",
            "@ 3600 IN A 192.0.2.1\nwww 3600 IN CNAME step.chain.test.\n\
             step 3600 IN CNAME gone.chain.test.\n",
        ),
        content(
            "loop",
            "@ 3600 IN A 192.0.2.1\nwww 3600 IN CNAME l1.loop.test.\n\
             l1 3600 IN CNAME l2.loop.test.\nl2 3600 IN CNAME l1.loop.test.\n",
        ),
        // A wildcard alias of nothing: every name under it dangles.
        content(
            "wildalias",
            "@ 3600 IN A 192.0.2.1\n* 3600 IN CNAME gone.dangling.test.\n",
        ),
        content(
            "intodead",
            "@ 3600 IN A 192.0.2.1\nwww 3600 IN CNAME host.dead.test.\n",
        ),
        content("ttl", "@ 60 IN A 192.0.2.1\n"),
        // The resolver still caches an old address.
        content("stale", APEX).resolver_sees("@ 3600 IN A 192.0.2.9\n"),
        // The second resolver has not seen the new address yet.
        content("moved", APEX).resolver2_sees("@ 3600 IN A 192.0.2.2\n"),
    ];
    zones.extend(mail_zones());
    zones.extend(dnssec_zones());
    zones
}

fn mail_zones() -> Vec<Zone> {
    vec![
        mail("nomx", Some(""), None, None, ""),
        mail(
            "nullmx",
            Some("@ 3600 IN MX 0 .\n"),
            Some("@ 3600 IN TXT \"v=spf1 -all\"\n"),
            None,
            "",
        ),
        mail(
            "nullmxplus",
            Some(&format!("@ 3600 IN MX 0 .\n{MX}")),
            None,
            None,
            "",
        ),
        mail(
            "mxcname",
            Some("@ 3600 IN MX 10 mx\nmx 3600 IN CNAME mail\nmail 3600 IN A 192.0.2.25\n"),
            None,
            None,
            "",
        ),
        mail("mxnoaddr", Some("@ 3600 IN MX 10 mail\n"), None, None, ""),
        mail("nospf", None, Some(""), None, ""),
        mail(
            "twospf",
            None,
            Some(&format!("{SPF}@ 3600 IN TXT \"v=spf1 mx -all\"\n")),
            None,
            "",
        ),
        mail(
            "badspf",
            None,
            Some("@ 3600 IN TXT \"v=spf1 foo:bar -all\"\n"),
            None,
            "",
        ),
        // 4 includes, each with an a and an mx: 12 lookups.
        mail(
            "spflimit",
            None,
            Some(
                "@ 3600 IN TXT \"v=spf1 include:s1.spflimit.test include:s2.spflimit.test include:s3.spflimit.test include:s4.spflimit.test -all\"\n",
            ),
            None,
            "s1 3600 IN TXT \"v=spf1 a:mail.spflimit.test mx:spflimit.test -all\"\n\
             s2 3600 IN TXT \"v=spf1 a:mail.spflimit.test mx:spflimit.test -all\"\n\
             s3 3600 IN TXT \"v=spf1 a:mail.spflimit.test mx:spflimit.test -all\"\n\
             s4 3600 IN TXT \"v=spf1 a:mail.spflimit.test mx:spflimit.test -all\"\n",
        ),
        // Three names that do not exist.
        mail(
            "spfvoid",
            None,
            Some(
                "@ 3600 IN TXT \"v=spf1 a:v1.spfvoid.test a:v2.spfvoid.test a:v3.spfvoid.test -all\"\n",
            ),
            None,
            "",
        ),
        // The included name has a TXT record, not an SPF one.
        mail(
            "spfinclude",
            None,
            Some("@ 3600 IN TXT \"v=spf1 include:other.spfinclude.test -all\"\n"),
            None,
            "other 3600 IN TXT \"not an spf record\"\n",
        ),
        mail(
            "spfall",
            None,
            Some("@ 3600 IN TXT \"v=spf1 mx +all\"\n"),
            None,
            "",
        ),
        mail(
            "spfneutral",
            None,
            Some("@ 3600 IN TXT \"v=spf1 mx ?all\"\n"),
            None,
            "",
        ),
        mail(
            "spfptr",
            None,
            Some("@ 3600 IN TXT \"v=spf1 ptr -all\"\n"),
            None,
            "",
        ),
        mail("nodmarc", None, None, Some(""), ""),
        mail(
            "twodmarc",
            None,
            None,
            Some(&format!(
                "{DMARC}_dmarc 3600 IN TXT \"v=DMARC1; p=quarantine; rua=mailto:d@example.net\"\n"
            )),
            "",
        ),
        mail(
            "baddmarc",
            None,
            None,
            Some("_dmarc 3600 IN TXT \"v=DMARC1; p=maybe; pct=150\"\n"),
            "",
        ),
        mail(
            "dmarcnone",
            None,
            None,
            Some("_dmarc 3600 IN TXT \"v=DMARC1; p=none; rua=mailto:dmarc@example.net\"\n"),
            "",
        ),
        mail(
            "dmarcpct",
            None,
            None,
            Some(
                "_dmarc 3600 IN TXT \"v=DMARC1; p=reject; pct=50; rua=mailto:dmarc@example.net\"\n",
            ),
            "",
        ),
        mail(
            "dmarcnorua",
            None,
            None,
            Some("_dmarc 3600 IN TXT \"v=DMARC1; p=reject\"\n"),
            "",
        ),
        mail(
            "mtasts",
            None,
            None,
            None,
            "_mta-sts 3600 IN TXT \"v=STSv1; id=20240101\"\n",
        ),
        mail(
            "tlsrpt",
            None,
            None,
            None,
            "_smtp._tls 3600 IN TXT \"v=TLSRPTv1; rua=mailto:tls@example.net\"\n",
        ),
        // RFC 7208 6: each modifier at most once.
        mail(
            "tworedirect",
            None,
            Some("@ 3600 IN TXT \"v=spf1 redirect=ok.test redirect=signed.test\"\n"),
            None,
            "",
        ),
        mail(
            "twoexp",
            None,
            Some("@ 3600 IN TXT \"v=spf1 mx -all exp=e1.twoexp.test exp=e2.twoexp.test\"\n"),
            None,
            "",
        ),
        // Aliases the policies are read through: a DMARC record kept by
        // another domain, an SPF include that is an alias of the record.
        mail(
            "dmarccname",
            None,
            None,
            Some("_dmarc 3600 IN CNAME _dmarc.ok.test.\n"),
            "",
        ),
        mail(
            "spfcname",
            None,
            Some("@ 3600 IN TXT \"v=spf1 include:spf.spfcname.test -all\"\n"),
            None,
            "spf 3600 IN CNAME real.spfcname.test.\n\
             real 3600 IN TXT \"v=spf1 ip4:192.0.2.0/24 -all\"\n",
        ),
        // Aliases of nothing where mail looks: an include, an MX host.
        mail(
            "spfdangling",
            None,
            Some("@ 3600 IN TXT \"v=spf1 include:spf.spfdangling.test -all\"\n"),
            None,
            "spf 3600 IN CNAME gone.spfdangling.test.\n",
        ),
        mail(
            "mxdangling",
            Some("@ 3600 IN MX 10 mx\nmx 3600 IN CNAME gone.mxdangling.test.\n"),
            None,
            None,
            "",
        ),
    ]
}

fn dnssec_zones() -> Vec<Zone> {
    let good = Signing::good;
    vec![
        signed("expired", good().days(-30, -1)),
        signed("future", good().days(1, 30)),
        signed("expiring", good().days(-29, 1)),
        signed("badsig", good().defect(SigDefect::SoaSignatureCorrupt)),
        signed("unsignedsoa", good().defect(SigDefect::SoaUnsigned)),
        signed("dsonly", good().defect(SigDefect::KeysUnpublished)),
        signed("wrongds", good().ds(vec![DsKind::OtherKey])),
        // A DS for the key and one for a key withdrawn since.
        signed("staleds", good().ds(vec![DsKind::Sha256, DsKind::OtherKey])),
        // Two keys; the DS names the first, which signs everything but the
        // DNSKEY set, signed by the second alone.
        signed(
            "zskonly",
            good().keys(2).defect(SigDefect::DnskeyNotSignedByDsKey),
        ),
        signed("island", good().ds(Vec::new())),
        signed("sha1ds", good().ds(vec![DsKind::Sha1])),
        signed("gostds", good().ds(vec![DsKind::Sha256, DsKind::Gost])),
        // Keys of algorithms 5 (RSASHA1) and 3 (DSA) left in the DNSKEY set.
        signed("rsasha1", good().unused_key(5)),
        signed("dsa", good().unused_key(3)),
        // 14 keys, each signing the SOA and the DNSKEY set: both answers
        // are larger than 1232 bytes, so they come truncated over UDP.
        signed("bigkeys", good().keys(14)),
    ]
}
