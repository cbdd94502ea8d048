//! `--scenario FILE`: a mix of requests in TOML. Each `[[step]]` is one
//! kind of request (tools/call, tools/list, resources/read, prompts/get,
//! ping, or any method with raw params) with a weight, templated
//! arguments (`{{seq}}`, `{{worker}}`, `{{random}}`, `{{random:N}}`,
//! `{{line}}` from the `values` file; random values drawn from `--seed`),
//! a think time, its own expectations (`expect = { output_schema = true }`
//! checks `structuredContent` against the tool's output schema) and
//! `[step.answers]`: what to answer, by method, when the server asks the
//! client for input while serving the step (see [`crate::answers`]). An
//! optional `[load]` picks the executor: constant-rate, ramping-rate,
//! constant-concurrency or ramping-concurrency; flags given on the command
//! line win over it.
//!
//! ```toml
//! values = "words.txt"
//! [load]
//! executor = "ramping-rate"
//! start_rate = 50
//! stages = [{ duration = "2s", target = 400 }, { duration = "3s", target = 400 }]
//! [[step]]
//! tool = "echo"
//! arguments = { texto = "hola {{seq}}" }
//! weight = 9
//! expect = { "/structuredContent/result" = "hola {{seq}}" }
//! [[step]]
//! method = "tools/list"
//! weight = 1
//! [[step]]
//! tool = "test_input_required_result_elicitation"
//! [step.answers]
//! "elicitation/create" = { action = "accept", content = { name = "bench" } }
//! ```
//!
//! A ramp of virtual users (closed loop): `executor =
//! "ramping-concurrency"`, `start_concurrency = 1`, `stages = [{ duration
//! = "2s", target = 8 }]`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::BenchError;
use crate::check::Expect;
use crate::plan::{Arrivals, Load, Rate, Stage, Step};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    /// A file of lines for `{{line}}`, relative to the scenario.
    values: Option<PathBuf>,
    load: Option<LoadTable>,
    #[serde(rename = "step", default)]
    steps: Vec<StepTable>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
struct LoadTable {
    executor: String,
    rate: Option<f64>,
    start_rate: Option<f64>,
    #[serde(default)]
    stages: Vec<StageTable>,
    concurrency: Option<usize>,
    start_concurrency: Option<usize>,
    duration: Option<String>,
    max_outstanding: Option<usize>,
    arrivals: Option<String>,
    seed: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StageTable {
    duration: String,
    target: f64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StepTable {
    method: Option<String>,
    tool: Option<String>,
    uri: Option<String>,
    prompt: Option<String>,
    arguments: Option<toml::Table>,
    params: Option<toml::Table>,
    #[serde(default = "one")]
    weight: u32,
    think: Option<String>,
    #[serde(default)]
    expect: BTreeMap<String, toml::Value>,
    expect_regex: Option<String>,
    answers: Option<toml::Table>,
}

fn one() -> u32 {
    1
}

/// A scenario read from a file.
#[derive(Debug)]
pub struct Scenario {
    pub steps: Vec<Step>,
    pub load: Option<Load>,
    pub duration: Option<Duration>,
    pub lines: Vec<String>,
}

impl Scenario {
    /// Puts the scenario into `plan`: its steps, its load where the
    /// command line named none (`load_given`; the links then follow it
    /// unless `connections` were given, `http` telling the transport), and
    /// its duration where the command line named no length. Gives the
    /// lines for `{{line}}`.
    pub fn apply(
        self,
        plan: &mut crate::plan::Plan,
        load_given: bool,
        length_given: bool,
        connections: Option<usize>,
        http: bool,
    ) -> Vec<String> {
        if let Some(load) = self.load
            && !load_given
        {
            plan.connections =
                connections.unwrap_or_else(|| crate::plan::default_connections(&load, http));
            plan.load = load;
        }
        if !length_given {
            plan.duration = self.duration;
        }
        plan.steps = self.steps;
        self.lines
    }
}

/// Reads a duration such as `500ms`, `2s` or `1.5m`.
pub fn duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    if let Some(minutes) = text.strip_suffix('m').and_then(|m| m.parse::<f64>().ok()) {
        return Duration::try_from_secs_f64(minutes * 60.0).ok();
    }
    let ms = crate::assert::duration_ms(text)
        .or_else(|| text.parse::<f64>().ok().map(|s| s * 1000.0))?;
    Duration::try_from_secs_f64(ms / 1000.0).ok()
}

fn bad(path: &Path, message: impl std::fmt::Display) -> BenchError {
    BenchError::usage(format!("`{}`: {message}", path.display()), None)
}

fn json_of(value: toml::Value) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

pub fn read(path: &Path) -> Result<Scenario, BenchError> {
    let text = std::fs::read_to_string(path).map_err(|source| BenchError::File {
        action: "read",
        path: path.to_owned(),
        source,
    })?;
    let file: File =
        toml::from_str(&text).map_err(|error| bad(path, error.to_string().trim_end()))?;
    if file.steps.is_empty() {
        return Err(bad(path, "no [[step]]"));
    }
    let mut steps = Vec::new();
    for (index, table) in file.steps.into_iter().enumerate() {
        steps.push(step(path, index + 1, table)?);
    }
    let lines = match &file.values {
        Some(values) => {
            let values = path.parent().unwrap_or(Path::new(".")).join(values);
            std::fs::read_to_string(&values)
                .map_err(|source| BenchError::File {
                    action: "read",
                    path: values.clone(),
                    source,
                })?
                .lines()
                .filter(|line| !line.is_empty())
                .map(str::to_owned)
                .collect()
        }
        None => Vec::new(),
    };
    let (load, duration) = match file.load {
        Some(table) => load(path, table)?,
        None => (None, None),
    };
    Ok(Scenario {
        steps,
        load,
        duration,
        lines,
    })
}

fn step(path: &Path, number: usize, table: StepTable) -> Result<Step, BenchError> {
    let method = match (&table.method, &table.tool, &table.uri, &table.prompt) {
        (Some(method), ..) => method.clone(),
        (None, Some(_), _, _) => "tools/call".to_owned(),
        (None, None, Some(_), _) => "resources/read".to_owned(),
        (None, None, None, Some(_)) => "prompts/get".to_owned(),
        (None, None, None, None) => {
            return Err(bad(
                path,
                format!("step {number} names no method, tool, uri or prompt"),
            ));
        }
    };
    let arguments = table
        .arguments
        .map(|arguments| json_of(toml::Value::Table(arguments)));
    let mut params = table
        .params
        .map(|params| json_of(toml::Value::Table(params)))
        .unwrap_or_else(|| json!({}));
    let name = table.tool.as_ref().or(table.prompt.as_ref());
    match method.as_str() {
        "tools/call" | "prompts/get" => {
            let Some(name) = name else {
                return Err(bad(
                    path,
                    format!("step {number} ({method}) needs `tool` or `prompt`"),
                ));
            };
            params["name"] = json!(name);
            params["arguments"] = arguments.unwrap_or_else(|| json!({}));
        }
        "resources/read" => {
            let Some(uri) = &table.uri else {
                return Err(bad(
                    path,
                    format!("step {number} (resources/read) needs `uri`"),
                ));
            };
            params["uri"] = json!(uri);
        }
        _ => {}
    }
    let mut step = Step::new(&method, params);
    step.weight = table.weight;
    if let Some(think) = &table.think {
        step.think = duration(think)
            .ok_or_else(|| bad(path, format!("step {number}: `{think}` is no duration")))?;
    }
    for (pointer, value) in table.expect {
        if pointer == "output_schema" {
            step.output_schema = value.as_bool() == Some(true);
            continue;
        }
        if !pointer.is_empty() && !pointer.starts_with('/') {
            return Err(bad(
                path,
                format!("step {number}: `{pointer}` is no JSON pointer (nor `output_schema`)"),
            ));
        }
        step.expect.push(Expect::Pointer {
            pointer,
            value: json_of(value),
        });
    }
    if let Some(answers) = table.answers
        && let Value::Object(answers) = json_of(toml::Value::Table(answers))
    {
        step.answers = answers;
    }
    if let Some(regex) = &table.expect_regex {
        step.expect.push(Expect::regex(regex)?);
    }
    Ok(step)
}

fn stages(path: &Path, tables: Vec<StageTable>) -> Result<Vec<Stage>, BenchError> {
    tables
        .into_iter()
        .map(|stage| {
            Ok(Stage {
                duration: duration(&stage.duration)
                    .ok_or_else(|| bad(path, format!("`{}` is no duration", stage.duration)))?,
                target: stage.target,
            })
        })
        .collect()
}

fn load(path: &Path, table: LoadTable) -> Result<(Option<Load>, Option<Duration>), BenchError> {
    let run_for = table
        .duration
        .as_deref()
        .map(|text| duration(text).ok_or_else(|| bad(path, format!("`{text}` is no duration"))))
        .transpose()?;
    let arrivals = match table.arrivals.as_deref() {
        None | Some("uniform") => Arrivals::Uniform,
        Some("poisson") => Arrivals::Poisson {
            seed: table.seed.unwrap_or(1),
        },
        Some(other) => return Err(bad(path, format!("arrivals `{other}`: uniform or poisson"))),
    };
    let max_outstanding = table
        .max_outstanding
        .unwrap_or(crate::plan::DEFAULT_MAX_OUTSTANDING);
    let load = match table.executor.as_str() {
        "constant-rate" => Load::Open {
            rate: Rate::Constant(
                table
                    .rate
                    .ok_or_else(|| bad(path, "constant-rate needs `rate`"))?,
            ),
            arrivals,
            max_outstanding,
        },
        "ramping-rate" => {
            let stages = stages(path, table.stages)?;
            if stages.is_empty() {
                return Err(bad(path, "ramping-rate needs `stages`"));
            }
            Load::Open {
                rate: Rate::Ramping {
                    start: table.start_rate.unwrap_or(0.0),
                    stages,
                },
                arrivals,
                max_outstanding,
            }
        }
        "constant-concurrency" => Load::Closed {
            concurrency: table.concurrency.unwrap_or(1),
        },
        "ramping-concurrency" => {
            let stages = stages(path, table.stages)?;
            if stages.is_empty() {
                return Err(bad(path, "ramping-concurrency needs `stages`"));
            }
            Load::Ramping {
                start: table.start_concurrency.unwrap_or(0),
                stages,
            }
        }
        other => {
            return Err(bad(
                path,
                format!(
                    "executor `{other}`: constant-rate, ramping-rate, constant-concurrency or ramping-concurrency"
                ),
            ));
        }
    };
    Ok((Some(load), run_for))
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;

    #[test]
    fn scenarios_read() {
        let dir = std::env::temp_dir().join(format!("nexo-bench-scenario-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("words.txt"), "uno\ndos\n").unwrap();
        let file = dir.join("s.toml");
        std::fs::write(
            &file,
            r#"
values = "words.txt"
[load]
executor = "ramping-rate"
start_rate = 10
stages = [{ duration = "1s", target = 100 }]
[[step]]
tool = "echo"
arguments = { texto = "{{line}}" }
weight = 3
think = "5ms"
expect = { "/structuredContent/result" = "x" }
[[step]]
method = "ping"
"#,
        )
        .unwrap();
        let scenario = read(&file).unwrap();
        assert_eq!(scenario.steps.len(), 2);
        assert_eq!(scenario.steps[0].label, "tools/call echo");
        assert_eq!(scenario.steps[0].weight, 3);
        assert_eq!(scenario.steps[0].think, Duration::from_millis(5));
        assert_eq!(scenario.lines, vec!["uno", "dos"]);
        assert!(matches!(scenario.load, Some(Load::Open { .. })));
        std::fs::write(&file, "[[step]]\nweight = 1\n").unwrap();
        assert!(read(&file).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
