//! Findings: what a tool noticed about a domain, as `{tipo, severidad,
//! detalle}`. [`Tipo`] is the closed list of codes, each with its fixed
//! severity and meaning; the table in `servers/dns/README.md` is written from
//! the same list, and a test checks that the two agree.

use schemars::JsonSchema;
use serde::Serialize;

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Severidad {
    Info,
    Baja,
    Media,
    Alta,
    Critica,
}

impl Severidad {
    pub fn as_str(self) -> &'static str {
        match self {
            Severidad::Info => "info",
            Severidad::Baja => "baja",
            Severidad::Media => "media",
            Severidad::Alta => "alta",
            Severidad::Critica => "critica",
        }
    }
}

/// One finding, as the tools return it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Hallazgo {
    /// A stable snake_case code (see the README's table).
    pub tipo: String,
    /// info, baja, media, alta or critica.
    pub severidad: Severidad,
    pub detalle: String,
}

macro_rules! tipos {
    ($($variant:ident => $code:literal, $tools:literal, $severity:ident, $meaning:literal;)*) => {
        /// Every finding code.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Tipo { $($variant),* }

        impl Tipo {
            /// Every code, in the order the README lists them.
            pub const ALL: &[Tipo] = &[$(Tipo::$variant),*];

            /// The stable snake_case code.
            pub fn code(self) -> &'static str {
                match self { $(Tipo::$variant => $code),* }
            }

            /// The tools that report it, separated by `, `.
            pub fn tools(self) -> &'static str {
                match self { $(Tipo::$variant => $tools),* }
            }

            /// The severity every finding of this code carries.
            pub fn severidad(self) -> Severidad {
                match self { $(Tipo::$variant => Severidad::$severity),* }
            }

            /// What the code means, for the README.
            pub fn meaning(self) -> &'static str {
                match self { $(Tipo::$variant => $meaning),* }
            }
        }
    };
}

tipos! {
    DominioInexistente => "dominio_inexistente", "salud_dns, correo_politicas, estado_dnssec", Critica, "The domain does not exist: the resolver answers NXDOMAIN for it with no CNAME of it in the answer (or, when the resolver gives no answer, the zone's own servers do). Nothing else is concluded. An NXDOMAIN after a CNAME is about the alias's target: `cname_colgante`.";
    DnssecBogus => "dnssec_bogus", "salud_dns, correo_politicas, estado_dnssec, propagacion", Critica, "A validating resolver answers SERVFAIL, and answers the same question with checking disabled (CD): it judges the domain's DNSSEC data bogus, so the domain is unreachable through every validating resolver. `estado_dnssec` names the cause; the other tools read the data from the authoritative servers.";
    ResolutorServfail => "resolutor_servfail", "salud_dns, correo_politicas, estado_dnssec", Alta, "The resolver answers SERVFAIL with checking disabled as well: not a DNSSEC failure; it gets no usable answer from the zone's servers (the servers' own findings say why). The data is read from the authoritative servers.";
    ResolutorRechaza => "resolutor_rechaza", "salud_dns, correo_politicas, estado_dnssec", Alta, "The resolver answers REFUSED (or another error code, such as NOTIMP): it does not resolve for this client. The data is read from the authoritative servers.";
    ResolutorSinRespuesta => "resolutor_sin_respuesta", "salud_dns, correo_politicas, estado_dnssec", Alta, "The resolver does not answer (timeout, or the connection is refused). The data is read from the authoritative servers, found from the root hints when the resolver names no zone above the domain.";
    SinNs => "sin_ns", "salud_dns", Critica, "The resolver answers, and gives no NS records for the zone, so no authoritative server can be asked.";
    NsSinDireccion => "ns_sin_direccion", "salud_dns", Alta, "An NS host name has no A or AAAA record, so that server cannot be reached.";
    DelegacionCojaSinRespuesta => "delegacion_coja_sin_respuesta", "salud_dns", Alta, "Lame delegation: a listed name server does not answer (timeout, refused, network error).";
    DelegacionCojaNoAutoritativa => "delegacion_coja_no_autoritativa", "salud_dns", Alta, "Lame delegation: a listed name server answers, but not authoritatively (no AA flag, or REFUSED/SERVFAIL).";
    NsPadreHijoDistintos => "ns_padre_hijo_distintos", "salud_dns", Media, "The NS set delegated by the parent zone differs from the NS set in the zone itself.";
    SerialSoaDistinto => "serial_soa_distinto", "salud_dns", Media, "The authoritative servers give different SOA serials: a secondary is not up to date.";
    NsUnico => "ns_unico", "salud_dns", Alta, "Only one name server: no redundancy (RFC 1034 asks for at least two).";
    NsMismaRed => "ns_misma_red", "salud_dns", Media, "Every name server address is in one IPv4 /24 (or IPv6 /48): one network failure takes the zone down.";
    Wildcard => "wildcard", "salud_dns", Media, "A random label under the domain resolves: the zone has a wildcard, which hides typos and dangling names.";
    CnameColgante => "cname_colgante", "salud_dns, correo_politicas", Alta, "A CNAME (checked: the domain itself and its www) leads, directly or through more CNAMEs, to a name that does not exist or has no address: the name is broken, and whoever can register or claim the missing name can take it over. The resolver's NXDOMAIN after a CNAME is about the chain's last name (RFC 6604), so the domain is not reported as nonexistent.";
    CnameBucle => "cname_bucle", "salud_dns, correo_politicas", Alta, "A CNAME chain (from the domain itself or its www) comes back to a name it has passed, or runs past 16 links: the name never resolves.";
    CnameDestinoSinRespuesta => "cname_destino_sin_respuesta", "salud_dns, correo_politicas", Alta, "A CNAME (from the domain itself or its www) leads to a name that neither the resolver nor the servers of that name's zone answer for (the resolver's SERVFAIL is about the chain's last name): the name does not resolve while they fail. The domain's own zone is diagnosed from its servers as usual.";
    TtlDesbalanceado => "ttl_desbalanceado", "salud_dns", Baja, "The TTLs of the zone's A/AAAA/NS/SOA records differ by more than a factor of 10.";
    TtlInconsistente => "ttl_inconsistente", "salud_dns", Baja, "The same RRset has different TTLs on different authoritative servers.";
    RecursivoDifiere => "recursivo_difiere", "salud_dns", Baja, "The recursive resolver's answer matches no authoritative server's (stale cache, split horizon, or a change still propagating).";
    AutoritativosDifieren => "autoritativos_difieren", "salud_dns", Media, "The authoritative servers give different records for the same name and type.";
    MxAusente => "mx_ausente", "correo_politicas", Baja, "No MX records: senders fall back to the domain's A/AAAA (RFC 5321 5.1); publish a null MX if the domain sends no mail.";
    MxNulo => "mx_nulo", "correo_politicas", Info, "Null MX (RFC 7505): the domain declares it accepts no mail.";
    MxNuloConOtros => "mx_nulo_con_otros", "correo_politicas", Media, "A null MX is published together with other MX records, which RFC 7505 forbids.";
    MxCname => "mx_cname", "correo_politicas", Media, "An MX host is a CNAME, which RFC 2181 10.3 forbids.";
    MxSinDireccion => "mx_sin_direccion", "correo_politicas", Alta, "An MX host has no A or AAAA record: mail to it cannot be delivered.";
    SpfAusente => "spf_ausente", "correo_politicas", Media, "No SPF record (TXT `v=spf1` at the apex).";
    SpfMultiple => "spf_multiple", "correo_politicas", Alta, "More than one SPF record: a permanent error (RFC 7208 4.5).";
    SpfSintaxis => "spf_sintaxis", "correo_politicas", Alta, "An SPF record (or one it includes) does not parse, or gives the `redirect` or `exp` modifier more than once (RFC 7208 6): a permanent error, and the record is not followed.";
    SpfDemasiadasConsultas => "spf_demasiadas_consultas", "correo_politicas", Alta, "Evaluating SPF needs more than 10 DNS-querying mechanisms (include, a, mx, ptr, exists, redirect) counted recursively: a permanent error (RFC 7208 4.6.4).";
    SpfConsultasVacias => "spf_consultas_vacias", "correo_politicas", Media, "More than 2 of SPF's DNS lookups return no records (void lookups, RFC 7208 4.6.4).";
    SpfIncludeFallido => "spf_include_fallido", "correo_politicas", Alta, "An SPF include or redirect names a domain without an SPF record: a permanent error.";
    SpfAllPermisivo => "spf_all_permisivo", "correo_politicas", Alta, "SPF ends in `+all` (or `all`): any host may send mail as the domain.";
    SpfAllNeutral => "spf_all_neutral", "correo_politicas", Media, "SPF ends in `?all`: it says nothing about unlisted hosts.";
    SpfPtr => "spf_ptr", "correo_politicas", Baja, "SPF uses the `ptr` mechanism, which RFC 7208 5.5 says not to use.";
    DmarcAusente => "dmarc_ausente", "correo_politicas", Media, "No DMARC record at `_dmarc.<domain>`.";
    DmarcMultiple => "dmarc_multiple", "correo_politicas", Alta, "More than one DMARC record: receivers ignore DMARC (RFC 7489 6.6.3).";
    DmarcMalFormado => "dmarc_mal_formado", "correo_politicas", Alta, "The DMARC record does not parse: not starting with `v=DMARC1`, missing or bad `p`, or a bad tag value (RFC 7489 6.3).";
    DmarcPNone => "dmarc_p_none", "correo_politicas", Baja, "DMARC policy `p=none`: failures are only reported, never acted on.";
    DmarcPctParcial => "dmarc_pct_parcial", "correo_politicas", Baja, "DMARC `pct` below 100: the policy applies to part of the mail only.";
    DmarcSinRua => "dmarc_sin_rua", "correo_politicas", Info, "DMARC has no `rua`: nobody receives aggregate reports.";
    MtaSts => "mta_sts", "correo_politicas", Info, "An MTA-STS record (`_mta-sts`, RFC 8461) is published.";
    TlsRpt => "tls_rpt", "correo_politicas", Info, "A TLS-RPT record (`_smtp._tls`, RFC 8460) is published.";
    DnssecNoFirmado => "dnssec_no_firmado", "estado_dnssec", Info, "The zone has no DNSKEY and the parent no DS: it is not signed, so validating resolvers cannot authenticate its answers (a fact, as for most zones, not a fault).";
    DnssecSinRespuesta => "dnssec_sin_respuesta", "estado_dnssec", Alta, "No authoritative server of the zone answered the DNSSEC questions.";
    DsSinDnskey => "ds_sin_dnskey", "estado_dnssec", Critica, "The parent publishes DS records but the zone has no DNSKEY: validating resolvers fail the zone (SERVFAIL).";
    DsNoCoincide => "ds_no_coincide", "estado_dnssec", Critica, "No DS record at the parent matches a DNSKEY of the zone (key tag, algorithm and digest): validation fails.";
    DsHuerfano => "ds_huerfano", "estado_dnssec", Alta, "A DS record at the parent matches no DNSKEY of the zone while another DS does (a key withdrawn before its DS): validation holds on the other DS alone.";
    DnskeySinFirmaDs => "dnskey_sin_firma_ds", "estado_dnssec", Critica, "No key that a DS names signs the DNSKEY set: the chain of trust from the parent breaks there, and validating resolvers fail the zone.";
    DnskeySinDs => "dnskey_sin_ds", "estado_dnssec", Media, "The zone is signed but the parent has no DS: an island of security, validated by no one.";
    RrsigAusente => "rrsig_ausente", "estado_dnssec", Alta, "The zone has DNSKEYs but its SOA carries no RRSIG.";
    RrsigInvalida => "rrsig_invalida", "estado_dnssec", Critica, "An RRSIG over the SOA or the DNSKEY set does not verify against the key it names.";
    RrsigExpirada => "rrsig_expirada", "estado_dnssec", Critica, "An RRSIG over the SOA or the DNSKEY set has expired (it may still verify; validating resolvers reject it all the same). The detail gives the date.";
    RrsigFutura => "rrsig_futura", "estado_dnssec", Alta, "An RRSIG over the SOA or the DNSKEY set is not valid yet (its inception is in the future).";
    RrsigExpiraPronto => "rrsig_expira_pronto", "estado_dnssec", Media, "An RRSIG over the SOA or the DNSKEY set expires within 3 days: re-signing may have stopped.";
    AlgoritmoProhibido => "algoritmo_prohibido", "estado_dnssec", Alta, "A DNSKEY or DS uses an algorithm RFC 8624 says MUST NOT be used (RSAMD5, DSA, DSA-NSEC3-SHA1, ECC-GOST) or a digest it forbids (GOST).";
    AlgoritmoObsoleto => "algoritmo_obsoleto", "estado_dnssec", Media, "A DNSKEY or DS uses an algorithm or digest RFC 8624 says NOT RECOMMENDED (RSASHA1, RSASHA1-NSEC3-SHA1, SHA-1 digests).";
    TcpNecesario => "tcp_necesario", "estado_dnssec", Info, "A signed answer (DS, DNSKEY, or the SOA with its RRSIGs) was truncated over UDP and had to be fetched over TCP: resolvers behind networks that block DNS over TCP cannot validate the zone.";
    ResolutorInalcanzable => "resolutor_inalcanzable", "propagacion", Media, "A resolver did not answer in time or refused the connection; its answers are missing from the comparison.";
    RespuestasDistintas => "respuestas_distintas", "propagacion", Media, "Resolvers give different answers for a record type (a change still propagating, or split horizon).";
}

impl Tipo {
    /// A finding of this code.
    pub fn hallazgo(self, detalle: impl Into<String>) -> Hallazgo {
        Hallazgo {
            tipo: self.code().to_owned(),
            severidad: self.severidad(),
            detalle: detalle.into(),
        }
    }
}

/// The markdown table of every code, as the README carries it (a test
/// keeps the README's copy true).
#[cfg(test)]
fn table() -> String {
    let mut table = String::from("| tipo | tools | severidad | meaning |\n|---|---|---|---|\n");
    for tipo in Tipo::ALL {
        let tools: Vec<String> = tipo
            .tools()
            .split(", ")
            .map(|tool| format!("`{tool}`"))
            .collect();
        table.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            tipo.code(),
            tools.join(", "),
            tipo.severidad().as_str(),
            tipo.meaning()
        ));
    }
    table
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_snake_case() {
        let mut seen = std::collections::BTreeSet::new();
        for tipo in Tipo::ALL {
            let code = tipo.code();
            assert!(seen.insert(code), "{code} twice");
            assert!(
                code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{code}"
            );
        }
    }

    #[test]
    fn the_readme_documents_every_code() {
        let readme =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
        assert!(
            readme.contains(&table()),
            "servers/dns/README.md must carry this table exactly:\n{}",
            table()
        );
    }
}
