//! `nexo trace summary` and `nexo trace flow`: read a trace file and print
//! what nexo-trace makes of it. What reading skipped (a cut last line,
//! lines of a newer format, lines that are no record) goes to stderr as
//! warnings; the result alone goes to stdout.

use nexo_trace::read::{self, ReadWarnings};
use nexo_trace::{Flow, FlowFormat, Summary};

use crate::args::{FlowFormatArg, TraceCommand, TraceFlowArgs, TraceSummaryArgs};
use crate::failure::Failure;
use crate::output;

pub fn run(command: TraceCommand) -> Result<(), Failure> {
    match command {
        TraceCommand::Summary(args) => summary(&args),
        TraceCommand::Flow(args) => flow(&args),
    }
}

fn summary(args: &TraceSummaryArgs) -> Result<(), Failure> {
    let reader = read::open(&args.file)?;
    let summary = Summary::read(reader)?;
    warn(&summary.warnings);
    if args.json {
        output::json(&summary);
    } else {
        output::data(&summary.to_text());
    }
    Ok(())
}

fn flow(args: &TraceFlowArgs) -> Result<(), Failure> {
    let reader = read::open(&args.file)?;
    let limit = (args.limit > 0).then_some(args.limit);
    let flow = Flow::read(reader, limit)?;
    warn(&flow.warnings);
    let format = match args.format {
        FlowFormatArg::Text => FlowFormat::Text,
        FlowFormatArg::Mermaid => FlowFormat::Mermaid,
        FlowFormatArg::Plantuml => FlowFormat::PlantUml,
    };
    output::data(&flow.render(format));
    if flow.left_out > 0 {
        output::status(&format!(
            "hint: {} messages past the first {} were left out; `--limit 0` draws them all",
            flow.left_out, args.limit
        ));
    }
    Ok(())
}

fn warn(warnings: &ReadWarnings) {
    for sentence in warnings.sentences() {
        output::status(&format!("warning: {sentence}"));
    }
}
