//! `nexo trace flow`: the sequence diagram of a traced exchange, as aligned
//! text, Mermaid or PlantUML.
//!
//! Participants are the client side (`client` in a server's trace, `nexo`
//! in a client's) and each server, in the order they appear. Each message
//! is an arrow in time order, styled by kind (the same in all three
//! formats): a request a solid arrow, a response a dotted one, a
//! notification an open (asynchronous) arrow, an error a dotted arrow
//! ending in a cross (red in PlantUML); runs of lifecycle messages (the
//! handshake, `ping`) are boxed and labelled `lifecycle`. Labels give the
//! method and id, the tool of a `tools/call` when the message was kept,
//! and on answers the method answered and the latency.
//!
//! Long traces stay readable: only the first [`DEFAULT_LIMIT`] messages
//! are drawn unless asked otherwise, and the diagram says how many were
//! left out.

use std::collections::BTreeMap;
use std::io::BufRead;

use crate::error::ReadError;
use crate::pairing::{Paired, Pairing};
use crate::read::{ReadWarnings, TraceReader};
use crate::record::{Kind, Side, TraceRecord};
use crate::show;

/// How many messages a diagram shows unless asked otherwise.
pub const DEFAULT_LIMIT: usize = 200;
/// The longest error message shown on an arrow.
const ERROR_TEXT: usize = 60;

/// The formats a flow is drawn in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowFormat {
    Text,
    Mermaid,
    PlantUml,
}

/// One arrow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// Microseconds since the first message.
    pub offset_us: u64,
    /// Indexes into [`Flow::participants`].
    pub from: usize,
    pub to: usize,
    pub kind: Kind,
    pub lifecycle: bool,
    pub label: String,
}

/// A trace as a sequence of arrows between participants.
#[derive(Debug, Clone, Default)]
pub struct Flow {
    /// The client side first, then each server.
    pub participants: Vec<String>,
    pub steps: Vec<Step>,
    /// Messages past the limit, not drawn.
    pub left_out: u64,
    pub warnings: ReadWarnings,
}

impl Flow {
    /// Reads a trace, keeping the first `limit` messages (all when `None`).
    pub fn read<R: BufRead>(
        mut reader: TraceReader<R>,
        limit: Option<usize>,
    ) -> Result<Flow, ReadError> {
        let mut builder = Builder::new(limit);
        while let Some(record) = reader.next_record()? {
            builder.add(&record);
        }
        let mut flow = builder.finish();
        flow.warnings = reader.into_warnings();
        Ok(flow)
    }

    /// The flow of records already read.
    pub fn of(records: &[TraceRecord], limit: Option<usize>) -> Flow {
        let mut builder = Builder::new(limit);
        for record in records {
            builder.add(record);
        }
        builder.finish()
    }

    pub fn render(&self, format: FlowFormat) -> String {
        match format {
            FlowFormat::Text => self.text(),
            FlowFormat::Mermaid => self.mermaid(),
            FlowFormat::PlantUml => self.plantuml(),
        }
    }

    fn left_out_note(&self) -> Option<String> {
        (self.left_out > 0).then(|| format!("{} more messages left out", self.left_out))
    }

    /// Runs of steps: each run either all lifecycle or none.
    fn runs(&self) -> Vec<(bool, &[Step])> {
        let mut runs = Vec::new();
        let mut start = 0;
        for index in 1..=self.steps.len() {
            let ends = index == self.steps.len()
                || self.steps[index].lifecycle != self.steps[start].lifecycle;
            if ends {
                runs.push((self.steps[start].lifecycle, &self.steps[start..index]));
                start = index;
            }
        }
        runs
    }

    /// The participants a run's note spans: the client and the highest
    /// server it involves.
    fn span(steps: &[Step]) -> (usize, usize) {
        let last = steps
            .iter()
            .map(|step| step.from.max(step.to))
            .max()
            .unwrap_or(0);
        (0, last)
    }

    fn text(&self) -> String {
        let width = self
            .participants
            .iter()
            .map(|name| name.chars().count())
            .max()
            .unwrap_or(0);
        let mut out = String::from(
            "->> request   -->> response   -) notification   --x error   lifecycle: handshake and ping\n\n",
        );
        for step in &self.steps {
            let arrow = match step.kind {
                Kind::Request => "->>",
                Kind::Response => "-->>",
                Kind::Notification | Kind::Invalid => "-)",
                Kind::Error => "--x",
            };
            let line = format!(
                "{:>14}  {:<width$}  {arrow:<4}  {:<width$}  {:<9}  {}",
                show::offset(step.offset_us),
                self.participants[step.from],
                self.participants[step.to],
                if step.lifecycle { "lifecycle" } else { "" },
                step.label,
            );
            out.push_str(line.trim_end());
            out.push('\n');
        }
        if let Some(note) = self.left_out_note() {
            out.push_str(&format!("… {note}\n"));
        }
        out
    }

    fn mermaid(&self) -> String {
        let id = |index: usize| participant_id(index);
        let mut out = String::from("sequenceDiagram\n");
        for (index, name) in self.participants.iter().enumerate() {
            out.push_str(&format!(
                "    participant {} as {}\n",
                id(index),
                mermaid_text(name)
            ));
        }
        for (lifecycle, steps) in self.runs() {
            let indent = if lifecycle { "        " } else { "    " };
            if lifecycle {
                let (first, last) = Self::span(steps);
                out.push_str("    rect rgb(236, 240, 248)\n");
                out.push_str(&format!(
                    "        Note over {},{}: lifecycle\n",
                    id(first),
                    id(last)
                ));
            }
            for step in steps {
                let arrow = match step.kind {
                    Kind::Request => "->>",
                    Kind::Response => "-->>",
                    Kind::Notification | Kind::Invalid => "-)",
                    Kind::Error => "--x",
                };
                out.push_str(&format!(
                    "{indent}{}{arrow}{}: {}\n",
                    id(step.from),
                    id(step.to),
                    mermaid_text(&step.label)
                ));
            }
            if lifecycle {
                out.push_str("    end\n");
            }
        }
        if let Some(note) = self.left_out_note() {
            let last = self.participants.len().saturating_sub(1);
            out.push_str(&format!("    Note over {},{}: {note}\n", id(0), id(last)));
        }
        out
    }

    fn plantuml(&self) -> String {
        let id = |index: usize| participant_id(index);
        let mut out = String::from("@startuml\n");
        for (index, name) in self.participants.iter().enumerate() {
            out.push_str(&format!(
                "participant \"{}\" as {}\n",
                plantuml_text(name).replace('"', "'"),
                id(index)
            ));
        }
        for (lifecycle, steps) in self.runs() {
            if lifecycle {
                out.push_str("group lifecycle\n");
            }
            for step in steps {
                let arrow = match step.kind {
                    Kind::Request => "->",
                    Kind::Response => "-->",
                    Kind::Notification | Kind::Invalid => "->>",
                    Kind::Error => "-[#red]->x",
                };
                out.push_str(&format!(
                    "{} {arrow} {} : {}\n",
                    id(step.from),
                    id(step.to),
                    plantuml_text(&step.label)
                ));
            }
            if lifecycle {
                out.push_str("end\n");
            }
        }
        if let Some(note) = self.left_out_note() {
            let last = self.participants.len().saturating_sub(1);
            out.push_str(&format!("note over {}, {} : {note}\n", id(0), id(last)));
        }
        out.push_str("@enduml\n");
        out
    }
}

/// `C` for the client side, `S1`, `S2`, ... for the servers.
fn participant_id(index: usize) -> String {
    if index == 0 {
        "C".to_owned()
    } else {
        format!("S{index}")
    }
}

/// Text safe in a Mermaid message or name: `;` ends a statement and `#`
/// starts an entity code there, `<`/`>` would be read as HTML, and quotes
/// as the start of a quoted name.
fn mermaid_text(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            ';' => ',',
            '"' => '\'',
            '#' => '№',
            '<' => '‹',
            '>' => '›',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect()
}

/// Text safe in a PlantUML message: `\n` there is a line break.
fn plantuml_text(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\\' => '/',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect()
}

struct Builder {
    limit: Option<usize>,
    pairing: Pairing,
    index: usize,
    start: Option<u64>,
    client: Option<&'static str>,
    servers: BTreeMap<String, usize>,
    order: Vec<String>,
    steps: Vec<Step>,
    left_out: u64,
}

impl Builder {
    fn new(limit: Option<usize>) -> Self {
        Self {
            limit,
            pairing: Pairing::default(),
            index: 0,
            start: None,
            client: None,
            servers: BTreeMap::new(),
            order: Vec::new(),
            steps: Vec::new(),
            left_out: 0,
        }
    }

    fn add(&mut self, record: &TraceRecord) {
        let paired = self.pairing.observe(self.index, record);
        self.index += 1;
        if self.limit.is_some_and(|limit| self.steps.len() >= limit) {
            self.left_out += 1;
            return;
        }
        let start = *self.start.get_or_insert(record.time_us);
        let client = match record.side {
            Side::Server => "client",
            Side::Client => "nexo",
        };
        if self.client.is_some_and(|seen| seen != client) {
            self.client = Some("client");
        } else if self.client.is_none() {
            self.client = Some(client);
        }
        let next = self.order.len() + 1;
        let server = *self.servers.entry(record.server.clone()).or_insert(next);
        if server == next {
            self.order.push(record.server.clone());
        }
        let (from, to) = if record.from_client() {
            (0, server)
        } else {
            (server, 0)
        };
        self.steps.push(Step {
            offset_us: record.time_us.saturating_sub(start),
            from,
            to,
            kind: record.kind,
            lifecycle: record.lifecycle,
            label: label(record, &paired),
        });
    }

    fn finish(self) -> Flow {
        let mut participants = vec![self.client.unwrap_or("client").to_owned()];
        participants.extend(self.order);
        Flow {
            participants,
            steps: self.steps,
            left_out: self.left_out,
            warnings: ReadWarnings::default(),
        }
    }
}

/// What an arrow says.
fn label(record: &TraceRecord, paired: &Paired) -> String {
    let id = show::id(record.id.as_ref());
    let (answered, latency) = match paired {
        Paired::Answer {
            request,
            latency_us,
        } => (request.method.clone(), Some(*latency_us)),
        _ => (None, None),
    };
    let method = answered.or_else(|| record.method.clone());
    let answering = match &method {
        Some(method) => format!("{method} (id {id})"),
        None => format!("{} (id {id})", record.kind.as_str()),
    };
    let took = latency.map_or_else(String::new, |us| format!(" {}", show::duration(us)));
    let orphan = match paired {
        Paired::Orphan => ", answers no request".to_owned(),
        Paired::Answer { request, .. } => request
            .given_up
            .map_or_else(String::new, |why| format!(", late: {}", why.as_str())),
        _ => String::new(),
    };
    match record.kind {
        Kind::Request => match record.tool_name() {
            Some(tool) => format!("{} {tool} (id {id})", method.unwrap_or_default()),
            None => answering,
        },
        Kind::Notification => method.unwrap_or_default(),
        Kind::Response => {
            let failed = if record.tool_error { " isError" } else { "" };
            format!("{answering}{failed}{took}{orphan}")
        }
        Kind::Error => {
            let code = record
                .error_code
                .map_or_else(String::new, |code| format!(" {code}"));
            let text = record
                .error_message
                .as_deref()
                .map_or_else(String::new, |text| {
                    format!(" {}", show::short(text, ERROR_TEXT))
                });
            let answering = match (&method, &record.id) {
                (Some(method), Some(_)) => format!(" to {method} (id {id})"),
                (None, Some(_)) => format!(" (id {id})"),
                (_, None) => String::new(),
            };
            format!("error{code}{text}{answering}{took}{orphan}")
        }
        Kind::Invalid => format!("invalid message ({} bytes)", record.bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata;

    fn flow(limit: Option<usize>) -> Flow {
        Flow::of(&testdata::records(&testdata::two_servers()), limit)
    }

    #[test]
    fn text_lines_up_arrows_by_kind() {
        let expected = r#"->> request   -->> response   -) notification   --x error   lifecycle: handshake and ping

     +0.000 ms  nexo   ->>   morse  lifecycle  initialize (id 0)
     +1.200 ms  morse  -->>  nexo   lifecycle  initialize (id 0) 1.20 ms
     +1.300 ms  nexo   -)    morse  lifecycle  notifications/initialized
     +2.000 ms  nexo   ->>   utils  lifecycle  initialize (id 0)
     +4.000 ms  utils  -->>  nexo   lifecycle  initialize (id 0) 2.00 ms
    +10.000 ms  nexo   ->>   morse             tools/call morse (id 1)
    +10.500 ms  nexo   ->>   utils             tools/call (id 1)
    +10.800 ms  morse  -->>  nexo              tools/call (id 1) 800 us
    +11.000 ms  nexo   ->>   utils             tools/list (id 1)
    +13.500 ms  utils  -->>  nexo              tools/call (id 1) isError 3.00 ms
    +14.000 ms  utils  -->>  nexo              tools/list (id 1) 3.00 ms
    +20.000 ms  nexo   ->>   morse             tools/call (id 2)
    +20.400 ms  morse  --x   nexo              error -32602 unknown tool: nosuch to tools/call (id 2) 400 us
    +30.000 ms  nexo   ->>   morse             tools/call (id 3)
    +31.000 ms  utils  -->>  nexo              response (id 9), answers no request
    +32.000 ms  morse  ->>   nexo   lifecycle  ping (id "s-1")
    +32.100 ms  nexo   -->>  morse  lifecycle  ping (id "s-1") 100 us
    +40.000 ms  morse  -)    nexo              invalid message (7 bytes)
"#;
        assert_eq!(flow(None).render(FlowFormat::Text), expected);
    }

    #[test]
    fn mermaid_boxes_the_lifecycle() {
        let expected = r#"sequenceDiagram
    participant C as nexo
    participant S1 as morse
    participant S2 as utils
    rect rgb(236, 240, 248)
        Note over C,S2: lifecycle
        C->>S1: initialize (id 0)
        S1-->>C: initialize (id 0) 1.20 ms
        C-)S1: notifications/initialized
        C->>S2: initialize (id 0)
        S2-->>C: initialize (id 0) 2.00 ms
    end
    C->>S1: tools/call morse (id 1)
    C->>S2: tools/call (id 1)
    S1-->>C: tools/call (id 1) 800 us
    C->>S2: tools/list (id 1)
    S2-->>C: tools/call (id 1) isError 3.00 ms
    S2-->>C: tools/list (id 1) 3.00 ms
    C->>S1: tools/call (id 2)
    S1--xC: error -32602 unknown tool: nosuch to tools/call (id 2) 400 us
    C->>S1: tools/call (id 3)
    S2-->>C: response (id 9), answers no request
    rect rgb(236, 240, 248)
        Note over C,S1: lifecycle
        S1->>C: ping (id 's-1')
        C-->>S1: ping (id 's-1') 100 us
    end
    S1-)C: invalid message (7 bytes)
"#;
        assert_eq!(flow(None).render(FlowFormat::Mermaid), expected);
    }

    #[test]
    fn plantuml_groups_the_lifecycle() {
        let expected = r#"@startuml
participant "nexo" as C
participant "morse" as S1
participant "utils" as S2
group lifecycle
C -> S1 : initialize (id 0)
S1 --> C : initialize (id 0) 1.20 ms
C ->> S1 : notifications/initialized
C -> S2 : initialize (id 0)
S2 --> C : initialize (id 0) 2.00 ms
end
C -> S1 : tools/call morse (id 1)
C -> S2 : tools/call (id 1)
S1 --> C : tools/call (id 1) 800 us
C -> S2 : tools/list (id 1)
S2 --> C : tools/call (id 1) isError 3.00 ms
S2 --> C : tools/list (id 1) 3.00 ms
C -> S1 : tools/call (id 2)
S1 -[#red]->x C : error -32602 unknown tool: nosuch to tools/call (id 2) 400 us
C -> S1 : tools/call (id 3)
S2 --> C : response (id 9), answers no request
group lifecycle
S1 -> C : ping (id "s-1")
C --> S1 : ping (id "s-1") 100 us
end
S1 ->> C : invalid message (7 bytes)
@enduml
"#;
        assert_eq!(flow(None).render(FlowFormat::PlantUml), expected);
    }

    /// A long trace is cut at the limit and says what it left out; the
    /// answers drawn still find requests made before the cut.
    #[test]
    fn long_traces_are_cut_and_say_so() {
        let flow = flow(Some(4));
        assert_eq!(flow.steps.len(), 4);
        assert_eq!(flow.left_out, 14);
        assert_eq!(flow.participants, ["nexo", "morse", "utils"]);
        let text = flow.render(FlowFormat::Text);
        assert!(text.ends_with("… 14 more messages left out\n"), "{text}");
        let mermaid = flow.render(FlowFormat::Mermaid);
        assert!(
            mermaid.ends_with("    Note over C,S2: 14 more messages left out\n"),
            "{mermaid}"
        );
        let plantuml = flow.render(FlowFormat::PlantUml);
        assert!(
            plantuml.ends_with("note over C, S2 : 14 more messages left out\n@enduml\n"),
            "{plantuml}"
        );
    }

    /// In a server's trace the other end is `client`, and names that would
    /// break a diagram are made safe.
    #[test]
    fn a_servers_trace_and_awkward_names() {
        let records = testdata::records(&format!(
            "{}\n{}\n",
            testdata::line(
                5,
                "a;b#c<d>",
                "in",
                "request",
                serde_json::json!({"side": "server", "id": 1, "method": "tools/call"})
            ),
            testdata::line(
                9,
                "a;b#c<d>",
                "out",
                "error",
                serde_json::json!({"side": "server", "error_code": -32700, "error_message": "parse; error\nhere"})
            ),
        ));
        let flow = Flow::of(&records, None);
        let mermaid = flow.render(FlowFormat::Mermaid);
        assert!(mermaid.contains("participant C as client\n"), "{mermaid}");
        assert!(
            mermaid.contains("participant S1 as a,b№c‹d›\n"),
            "{mermaid}"
        );
        assert!(
            mermaid.contains("S1--xC: error -32700 parse, error here\n"),
            "{mermaid}"
        );
        let plantuml = flow.render(FlowFormat::PlantUml);
        assert!(
            plantuml.contains("C -> S1 : tools/call (id 1)\n"),
            "{plantuml}"
        );
    }
}
