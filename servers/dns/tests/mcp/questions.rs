//! How many DNS questions each tool sends for one call, counted by a bed of
//! its own (the shared one serves other tests at the same time, so its
//! count would mix their questions with ours). The figures are exact: a
//! change that asks something twice, or stops asking something, shows here.

use std::time::Duration;

use nexo_dns::Dns;
use nexo_dns_testbed::{Bed, zones};
use nexo_testkit::{Client, connect};
use serde_json::json;

use crate::support::{Error, options, structured};

/// The zones the counted calls ask about.
const ZONES: [&str; 3] = ["ok", "mxcname", "dangling"];

/// How long the count must stay still before a call's questions are taken
/// as all received: a question sent to the server that lost a race (the
/// parent's second server, say) may reach it after the call returned.
const SETTLE: Duration = Duration::from_millis(50);

/// The questions `bed` has received, once no more are arriving.
async fn settled(bed: &Bed) -> u64 {
    let mut seen = bed.queries();
    loop {
        tokio::time::sleep(SETTLE).await;
        let now = bed.queries();
        if now == seen {
            return now;
        }
        seen = now;
    }
}

/// The questions one call of `tool` on `dominio` sends.
async fn questions(bed: &Bed, client: &Client, tool: &str, dominio: &str) -> Result<u64, Error> {
    let before = settled(bed).await;
    structured(client, tool, json!({ "dominio": dominio })).await?;
    Ok(settled(bed).await - before)
}

#[tokio::test]
async fn each_tool_asks_each_question_once_and_none_an_answer_already_holds() -> Result<(), Error> {
    let bed = Bed::start(
        zones::standard()
            .into_iter()
            .filter(|zone| ZONES.contains(&zone.label))
            .collect(),
    )?;
    let client = connect(Dns::new(options(
        &bed,
        bed.resolver(),
        Duration::from_secs(2),
    ))?)
    .await?;
    // ok.test: the four types, the wildcard probe and the CNAME of www
    // (6; the apex's would be in the A and AAAA answers); ns1 and ns2
    // resolved (4) and each asked the four types (8); the parent `test.`'s
    // NS (1), its two servers resolved (4) and both asked for the
    // delegation at once (2).
    assert_eq!(questions(&bed, &client, "salud_dns", "ok.test").await?, 25);
    // dangling.test: the same, and the A and AAAA of the CNAME target of www.
    assert_eq!(
        questions(&bed, &client, "salud_dns", "dangling.test").await?,
        27
    );
    // A name that is an alias, of a target with an address: its A answer
    // holds the CNAME and the address, so the target is not asked about.
    // The SOA answer holds only the CNAME: the zone's SOA is asked (1),
    // then its NS (1); the rest as for ok.test (6 + 4 + 8 + 7).
    assert_eq!(
        questions(&bed, &client, "salud_dns", "mx.mxcname.test").await?,
        27
    );
    // A name that is an alias of nothing: as above, and its target's A and
    // AAAA (2).
    assert_eq!(
        questions(&bed, &client, "salud_dns", "www.dangling.test").await?,
        29
    );
    // MX and four TXT names (5); the mail host's A and AAAA (2), which
    // would carry its CNAME; the SPF `mx` term (1).
    assert_eq!(
        questions(&bed, &client, "correo_politicas", "ok.test").await?,
        8
    );
    // MX and four TXT names (5); the host `mx`'s A and AAAA (2), which
    // carry its CNAME; an SPF without DNS terms.
    assert_eq!(
        questions(&bed, &client, "correo_politicas", "mxcname.test").await?,
        7
    );
    // The zone's NS (1); the parent's NS (1), its servers resolved (4) and
    // asked for the DS (2); the zone's servers resolved (4) and asked for
    // DNSKEY (2) and SOA (2).
    assert_eq!(
        questions(&bed, &client, "estado_dnssec", "ok.test").await?,
        16
    );
    Ok(())
}
