//! The machine description and the two files a run writes: the report — in BENCHMARKS.md, the block
//! between its markers (machine, results table, functional checks), the rest of the file kept as it is
//! — and the run's details (each run of every measurement, the days phase by phase) in a file of their
//! own beside it, `target/benchmarks-details.md`, which is not committed.

use std::path::Path;
use std::process::Command;

/// Start of the generated block.
pub(crate) const START_MARKER: &str = "<!-- harness:start -->";
/// End of the generated block.
pub(crate) const END_MARKER: &str = "<!-- harness:end -->";

/// One line of the results table.
pub(crate) struct Row {
    /// Which measurement (`a. cache-hit throughput`, …).
    pub name: String,
    /// What was measured.
    pub result: String,
    /// The target, or `report` for numbers without one.
    pub target: String,
    /// `Some(met)` for a speed target; `None` when there is none.
    pub met: Option<bool>,
}

/// Where the numbers come from.
pub(crate) struct Machine {
    /// `model name` from /proc/cpuinfo.
    pub cpu: String,
    /// Cores the harness may use.
    pub cores: usize,
    /// `MemTotal` from /proc/meminfo, in GiB.
    pub ram_gib: f64,
    /// `rustc -V`.
    pub rustc: String,
    /// `git rev-parse HEAD`, marked when the tree has uncommitted changes.
    pub commit: String,
    /// When the run started (HTTP date, UTC).
    pub date: String,
    /// `uname -r`.
    pub kernel: String,
}

fn command_output(program: &str, args: &[&str]) -> Option<String> {
    let output = Command::new(program).args(args).output().ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

impl Machine {
    /// Reads the machine, toolchain and checkout.
    pub(crate) fn describe(repo: &Path) -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find_map(|line| line.strip_prefix("model name"))
            .and_then(|rest| rest.split_once(':'))
            .map_or_else(
                || "unknown".to_owned(),
                |(_, model)| model.trim().to_owned(),
            );
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let ram_kib: f64 = meminfo
            .lines()
            .find_map(|line| line.strip_prefix("MemTotal:"))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kib| kib.parse().ok())
            .unwrap_or(0.0);
        let repo_arg = repo.to_string_lossy().into_owned();
        let head = command_output("git", &["-C", &repo_arg, "rev-parse", "--short=12", "HEAD"])
            .unwrap_or_else(|| "unknown".to_owned());
        let dirty = command_output("git", &["-C", &repo_arg, "status", "--porcelain"])
            .is_some_and(|changes| !changes.is_empty());
        Self {
            cpu,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            ram_gib: ram_kib / (1024.0 * 1024.0),
            rustc: command_output("rustc", &["-V"]).unwrap_or_else(|| "unknown".to_owned()),
            commit: if dirty {
                format!("{head} (with uncommitted changes)")
            } else {
                head
            },
            date: httpdate::fmt_http_date(std::time::SystemTime::now()),
            kernel: command_output("uname", &["-r"]).unwrap_or_else(|| "unknown".to_owned()),
        }
    }
}

/// The machine, the command and how long the run took, as a two-column table.
fn machine_table(machine: &Machine, command: &str, duration: std::time::Duration) -> String {
    format!(
        "| | |\n|---|---|\n| machine | {} — {} cores, {:.1} GiB RAM, Linux {} |\n| toolchain | {} |\n\
         | commit | `{}` |\n| date | {} |\n| reproduce | `{}` |\n| run time | {:.0} s |\n",
        machine.cpu,
        machine.cores,
        machine.ram_gib,
        machine.kernel,
        machine.rustc,
        machine.commit,
        machine.date,
        command,
        duration.as_secs_f64(),
    )
}

/// The generated block: machine, command, the results table, the functional checks, and where the
/// run's details went (`details_at`, relative to the repository).
pub(crate) fn render(
    machine: &Machine,
    command: &str,
    duration: std::time::Duration,
    rows: &[Row],
    failures: &[String],
    details_at: &str,
) -> String {
    let mut out = String::new();
    out.push_str(START_MARKER);
    out.push_str(
        "\n<!-- Written by `cargo bench --bench harness`; edit outside the markers. -->\n\n",
    );
    out.push_str(&machine_table(machine, command, duration));
    out.push('\n');
    out.push_str(&table(rows));
    out.push('\n');
    if failures.is_empty() {
        out.push_str("Functional checks: all passed (no errors, one upstream call for 100 identical cold queries).\n\n");
    } else {
        out.push_str("**Functional failures:**\n\n");
        for failure in failures {
            out.push_str(&format!("- {failure}\n"));
        }
        out.push('\n');
    }
    out.push_str(&format!(
        "Per-run details (each run of every measurement, the days' phases and spells, the machine's other \
         load): `{details_at}`, written beside this report by the same run and not committed.\n\n"
    ));
    out.push_str(END_MARKER);
    out.push('\n');
    out
}

/// The run's details file: which run, where its report is (`report_at`), then one line per detail.
pub(crate) fn render_details(
    machine: &Machine,
    command: &str,
    duration: std::time::Duration,
    details: &[String],
    report_at: &str,
) -> String {
    let mut out = format!(
        "# Benchmark details\n\nThe details of one harness run; its results table is in `{report_at}`. \
         Not committed: a run worth keeping gets these lines copied into the book's appendix \
         (docs/src/benchmarks/).\n\n"
    );
    out.push_str(&machine_table(machine, command, duration));
    out.push('\n');
    for detail in details {
        out.push_str(&format!("- {detail}\n"));
    }
    out
}

/// The results table in Markdown.
pub(crate) fn table(rows: &[Row]) -> String {
    let mut out = String::from("| measurement | result | target | met |\n|---|---|---|---|\n");
    for row in rows {
        let met = match row.met {
            Some(true) => "yes",
            Some(false) => "**no**",
            None => "—",
        };
        out.push_str(&format!(
            "| {} | {} | {} | {met} |\n",
            row.name, row.result, row.target
        ));
    }
    out
}

const NOTES_TEMPLATE: &str =
    "\n## Notes\n\nHand-written notes (profiles, before/after) go here; the harness keeps them.\n";

/// Replaces the generated block of `path` (or creates the file with it).
pub(crate) fn write(path: &Path, block: &str) -> std::io::Result<()> {
    let existing = std::fs::read_to_string(path).unwrap_or_default();
    let updated = match (existing.find(START_MARKER), existing.find(END_MARKER)) {
        (Some(start), Some(end)) if start < end => {
            let after = &existing[end + END_MARKER.len()..];
            let after = after.strip_prefix('\n').unwrap_or(after);
            format!("{}{block}{after}", &existing[..start])
        }
        _ => format!(
            "# Benchmarks\n\nNumbers from the benchmark harness (`benches/harness`): the release gateway binary as a \
             child process against the loopback simulators, loaded by the harness's own hyper 1 load generator.\n\n\
             {block}{NOTES_TEMPLATE}"
        ),
    };
    std::fs::write(path, updated)
}

/// Writes the run's details file (a new one each run), creating its folder when needed.
pub(crate) fn write_details(path: &Path, details: &str) -> std::io::Result<()> {
    if let Some(folder) = path.parent() {
        std::fs::create_dir_all(folder)?;
    }
    std::fs::write(path, details)
}
