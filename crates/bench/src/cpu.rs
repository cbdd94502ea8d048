//! The server's cost, read from /proc: CPU time, resident memory, threads
//! and open files of a process and all its descendants, sampled before and
//! after a measured run. CPU microseconds per call is the figure that stays
//! steady when the machine is busy, where requests per second do not.
//! CPU time comes in 10 ms ticks: over a short run the figure is coarse
//! (run for seconds, not milliseconds, to read CPU per call). Linux only;
//! elsewhere nothing is sampled.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// `/proc/PID/stat` counts CPU time in clock ticks of `USER_HZ`, which the
/// kernel fixes at 100 per second for user space on every architecture
/// Linux supports.
const TICK_MICROS: u64 = 10_000;

/// One reading of a process tree.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// User and system CPU, its waited-for children's included.
    pub cpu_micros: u64,
    pub rss_kib: u64,
    pub threads: u64,
    pub fds: u64,
    pub processes: u64,
}

struct Stat {
    ppid: u32,
    ticks: u64,
    threads: u64,
    rss_pages: u64,
}

fn stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields start after
    // the last `)`.
    let rest = &text[text.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state): field N is fields[N - 3].
    let number = |n: usize| {
        fields
            .get(n - 3)
            .and_then(|field| field.parse::<u64>().ok())
    };
    Some(Stat {
        ppid: u32::try_from(number(4)?).ok()?,
        ticks: number(14)? + number(15)? + number(16)? + number(17)?,
        threads: number(20)?,
        rss_pages: number(24)?,
    })
}

/// Reads the tree rooted at `root`; `None` when it is gone.
pub fn sample(root: u32) -> Option<Usage> {
    let mut stats: HashMap<u32, Stat> = HashMap::new();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<u32>().ok())
        else {
            continue;
        };
        if let Some(stat) = stat(pid) {
            stats.insert(pid, stat);
        }
    }
    stats.get(&root)?;
    let mut usage = Usage::default();
    let mut queue = vec![root];
    while let Some(pid) = queue.pop() {
        let Some(stat) = stats.get(&pid) else {
            continue;
        };
        usage.processes += 1;
        usage.cpu_micros += stat.ticks * TICK_MICROS;
        usage.threads += stat.threads;
        usage.rss_kib += stat.rss_pages * 4;
        usage.fds += std::fs::read_dir(format!("/proc/{pid}/fd"))
            .map(|entries| entries.count() as u64)
            .unwrap_or_default();
        queue.extend(
            stats
                .iter()
                .filter(|(_, child)| child.ppid == pid)
                .map(|(child, _)| *child),
        );
    }
    Some(usage)
}

/// The machine's load and CPUs, to tell a disturbed run.
pub fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// CPU time spent by the whole machine (all CPUs), in microseconds, and
/// its idle part: another process's load shows as less idle than ours.
pub fn machine_cpu() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let line = text.lines().next()?.strip_prefix("cpu ")?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .filter_map(|field| field.parse().ok())
        .collect();
    let total: u64 = fields.iter().take(8).sum();
    let idle = fields.get(3)? + fields.get(4).copied().unwrap_or_default();
    Some((total * TICK_MICROS, idle * TICK_MICROS))
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_sampled() {
        let usage = sample(std::process::id()).unwrap();
        assert!(usage.processes >= 1);
        assert!(usage.threads >= 1);
        assert!(usage.rss_kib > 0);
        assert!(machine_cpu().is_some());
    }
}
