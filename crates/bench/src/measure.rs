//! A whole `nexo bench` run once the target is open: the one step a
//! command line names when no scenario does ([`Bench::step_for`]), then
//! the sample answer, the repetitions or the search for the ceiling, and
//! the result document ([`Bench::whole_run`]). What the person sees
//! meanwhile is the caller's to show: it is told of each [`Moment`].

use serde_json::{Value, json};

use crate::assert::Assertion;
use crate::ceiling::Search;
use crate::check::Expect;
use crate::plan::Step;
use crate::report::{Document, Environment, Setup};
use crate::{Bench, BenchError};

/// What to send when no scenario says: the method (none for
/// `tools/call`), its subject (a tool, a resource's URI, a prompt), the
/// argument words (`key=value`, or one JSON object) and, for another
/// method, its params as JSON text.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    pub method: Option<&'a str>,
    pub subject: Option<&'a str>,
    pub words: &'a [String],
    pub params: Option<&'a str>,
}

/// What every answer must hold: JSON-pointer expectations
/// (`/path=value`), a regular expression, the tool's output schema.
#[derive(Debug, Clone, Copy, Default)]
pub struct Expectations<'a> {
    pub pointers: &'a [String],
    pub regex: Option<&'a str>,
    pub output_schema: bool,
}

/// How a run is made and reported.
#[derive(Debug)]
pub struct Measure<'a> {
    /// The target, as the document names it.
    pub target: String,
    /// The command line, as the document repeats it.
    pub command_line: String,
    pub assertions: &'a [Assertion],
    /// `--find-ceiling`: the objectives and how to search; none for a
    /// run of repetitions.
    pub ceiling: Option<(Vec<Assertion>, Search)>,
}

/// What a run passes, for the person watching.
#[derive(Debug)]
pub enum Moment<'a> {
    /// The sample answer, before the run, and what the run will do.
    Sampled { answer: &'a Value, running: String },
    /// The repetitions begin.
    Running,
    /// A step of the ceiling search ended.
    CeilingStep(&'a crate::ceiling::Step),
}

impl Bench {
    /// The one step of a run without a scenario: a tool called with
    /// arguments read as `nexo call` reads them, a resource read, a prompt
    /// got, or another method with its params. Beside it, the argument
    /// names the tool's schema does not describe (sent anyway).
    pub async fn step_for(
        &self,
        call: Call<'_>,
        expectations: Expectations<'_>,
    ) -> Result<(Step, Vec<String>), BenchError> {
        let mut undescribed = Vec::new();
        let mut step = match (call.method, call.subject) {
            (None | Some("tools/call"), Some(tool)) => {
                let (arguments, unknown) = self.tool_arguments(tool, call.words).await?;
                undescribed = unknown;
                Step::new("tools/call", json!({"name": tool, "arguments": arguments}))
            }
            (None | Some("tools/call"), None) => {
                return Err(BenchError::usage(
                    "no tool given",
                    Some("name a TOOL, a `--method` or a `--scenario FILE`".to_owned()),
                ));
            }
            (Some("resources/read"), Some(uri)) => Step::new("resources/read", json!({"uri": uri})),
            (Some("prompts/get"), Some(name)) => {
                let arguments = nexo_client::arguments::prompt_arguments(call.words)?;
                Step::new("prompts/get", json!({"name": name, "arguments": arguments}))
            }
            (Some(method @ ("resources/read" | "prompts/get")), None) => {
                return Err(BenchError::usage(
                    format!("`{method}` needs a URI or name after the target"),
                    None,
                ));
            }
            (Some(method), _) => {
                let params = match call.params {
                    Some(text) => serde_json::from_str::<Value>(text).map_err(|error| {
                        BenchError::usage(format!("`--params` is not JSON: {error}"), None)
                    })?,
                    None => json!({}),
                };
                Step::new(method, params)
            }
        };
        for text in expectations.pointers {
            step.expect.push(Expect::pointer(text)?);
        }
        if let Some(regex) = expectations.regex {
            step.expect.push(Expect::regex(regex)?);
        }
        step.output_schema = expectations.output_schema;
        Ok((step, undescribed))
    }

    /// Sends the sample, runs the repetitions (or searches for the
    /// ceiling), and builds the document; `told` hears of each moment.
    pub async fn whole_run(
        &mut self,
        steps: Vec<Step>,
        how: Measure<'_>,
        mut told: impl FnMut(Moment<'_>),
    ) -> Result<Document, BenchError> {
        self.set_steps(steps).await?;
        self.plan().validate()?;
        let sample = self.sample().await?;
        told(Moment::Sampled {
            answer: &sample,
            running: crate::report::describe(self.plan()),
        });
        let environment = Environment::here();
        let (summary, runs, ceiling) = match &how.ceiling {
            Some((objectives, search)) => {
                let steps = crate::ceiling::search(self, objectives, search, |step| {
                    told(Moment::CeilingStep(step));
                })
                .await?;
                let ceiling = crate::ceiling::ceiling(&steps);
                let summary = crate::ceiling::summary(&steps);
                let runs = steps.into_iter().map(|step| step.figures).collect();
                (summary, runs, ceiling)
            }
            None => {
                told(Moment::Running);
                let (summary, runs) = self.run().await?;
                (summary, runs, None)
            }
        };
        let mut setup = Setup::of(self.plan());
        if how.ceiling.is_some() {
            setup.model = "find-ceiling".to_owned();
        }
        Ok(Document::new(
            self,
            how.target,
            how.command_line,
            environment,
            setup,
            summary,
            runs,
            how.assertions,
            ceiling,
        ))
    }
}
