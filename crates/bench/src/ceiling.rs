//! Find-ceiling: open-loop steps at rising rates until an objective
//! breaks (`p99<10ms`, `error_rate<1%`): the highest rate that kept every
//! objective is the server's ceiling. Each step runs at its rate for the
//! step's duration; the next is `factor` times faster.

use std::time::Duration;

use crate::assert::Assertion;
use crate::plan::{Arrivals, Load, Rate};
use crate::report::Figures;
use crate::{Bench, BenchError};

/// The most steps one search takes.
pub const MAX_STEPS: usize = 24;

/// One step of the search.
#[derive(Debug, Clone)]
pub struct Step {
    pub rate: f64,
    pub figures: Figures,
    /// Every objective held.
    pub held: bool,
}

/// How to search.
#[derive(Debug, Clone)]
pub struct Search {
    pub start: f64,
    pub factor: f64,
    pub step: Duration,
    pub arrivals: Arrivals,
    pub max_outstanding: usize,
}

/// Runs steps until an objective breaks (or [`MAX_STEPS`]); `seen` is
/// told of each step as it ends. Gives every step; the ceiling is the rate
/// of the last one that held.
pub async fn search(
    bench: &mut Bench,
    objectives: &[Assertion],
    search: &Search,
    mut seen: impl FnMut(&Step),
) -> Result<Vec<Step>, BenchError> {
    if search.factor.is_nan() || search.factor <= 1.0 {
        return Err(BenchError::usage(
            "the ceiling's step factor must be above 1",
            None,
        ));
    }
    let mut steps = Vec::new();
    let mut rate = search.start;
    for _ in 0..MAX_STEPS {
        bench.set_load(
            Load::Open {
                rate: Rate::Constant(rate),
                arrivals: search.arrivals,
                max_outstanding: search.max_outstanding,
            },
            Some(search.step),
        )?;
        let mut measured = bench.measure().await?;
        let recorder = std::mem::take(&mut measured.recorder);
        let mut figures = Figures::of(&recorder, &measured);
        figures.rps_target = rate;
        let held = objectives
            .iter()
            .all(|objective| objective.check(&figures).passed)
            && figures.dropped_starts == 0;
        let step = Step {
            rate,
            figures,
            held,
        };
        seen(&step);
        steps.push(step);
        if !held {
            break;
        }
        rate *= search.factor;
    }
    Ok(steps)
}

/// The rate of the last step that held, if any did.
pub fn ceiling(steps: &[Step]) -> Option<f64> {
    steps
        .iter()
        .take_while(|step| step.held)
        .last()
        .map(|step| step.rate)
}

/// The figures a search reports: the last step that held, else the last.
pub fn summary(steps: &[Step]) -> Figures {
    steps
        .iter()
        .rev()
        .find(|step| step.held)
        .or(steps.last())
        .map(|step| step.figures.clone())
        .unwrap_or_default()
}
