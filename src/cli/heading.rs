//! The headings `servebench run --help` (and `search --help`, whose probes are runs) groups
//! its options under, in the order a newcomer reads them: where the server is and what it
//! serves (Target), how requests are sent (Load), what is sent (Workload), what is written
//! and reported (Output), how long anything may wait and how much it may hold (Limits), the
//! built-in server (Simulator), and the rest (Advanced).
//!
//! Every option of `run` names its heading (`help_heading = heading::LOAD`), and `run -h`
//! shows only the options a first run needs: the others are `hide_short_help`, listed by
//! `--help` only. To add an option: give it the heading of its concern, and hide it from
//! `-h` unless a first run needs it (`tests`, `run_short_help_fits_a_screen`).

pub const TARGET: &str = "Target";
pub const LOAD: &str = "Load";
pub const WORKLOAD: &str = "Workload";
pub const OUTPUT: &str = "Output";
pub const LIMITS: &str = "Limits";
pub const SIMULATOR: &str = "Simulator";
pub const ADVANCED: &str = "Advanced";

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use crate::cli::Cli;

    /// `run -h` fits a screen (at most 80 lines), and `run --help` still lists every option,
    /// each under one of the headings.
    #[test]
    fn run_short_help_fits_a_screen() {
        let mut cli = Cli::command();
        let run = cli.find_subcommand_mut("run").unwrap();
        let short = run.render_help().to_string();
        let lines = short.lines().count();
        assert!(lines <= 80, "run -h is {lines} lines:\n{short}");
        let long = run.render_long_help().to_string();
        let headings = [
            super::TARGET,
            super::LOAD,
            super::WORKLOAD,
            super::OUTPUT,
            super::LIMITS,
            super::SIMULATOR,
            super::ADVANCED,
        ];
        for h in headings {
            assert!(long.contains(&format!("{h}:")), "no {h} in run --help");
        }
        for arg in run.get_arguments() {
            let (Some(long_name), false) = (arg.get_long(), arg.is_hide_set()) else {
                continue;
            };
            assert!(long.contains(&format!("--{long_name}")), "--{long_name}");
            if long_name != "help" {
                let heading = arg.get_help_heading().unwrap_or("Options");
                assert!(headings.contains(&heading), "--{long_name} under {heading}");
            }
        }
    }
}
