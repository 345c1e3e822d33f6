//! `--replica-capacity RATE|PLAN.csv`: the requests per second one replica sustains within
//! the SLOs, given as a number or read from a saved plan (`servebench plan ... --format csv`,
//! written by `render::capacity::csv`): the request throughput of the step the plan found
//! sustained (docs/metrics.md, "Autoscaler benchmarks"). A file that is not such a plan, a
//! plan of several configurations (which one are the replicas?) or one with no sustained
//! load is refused in one line naming the file.

use std::io::Read as _;
use std::path::Path;

use crate::config::error::ConfigError;

/// The most bytes a plan's CSV may hold.
const MAX_PLAN_BYTES: u64 = 16 << 20;

const FLAG: &str = "--replica-capacity";

/// The capacity `value` gives: a number as it is (its range is the config's rule), else the
/// sustained request rate of the plan in the file it names.
pub fn parse(value: &str) -> Result<f64, ConfigError> {
    if let Ok(rate) = value.trim().parse::<f64>() {
        return Ok(rate);
    }
    from_plan(Path::new(value))
}

/// The sustained step's request throughput of the one configuration of the plan at `path`.
pub fn from_plan(path: &Path) -> Result<f64, ConfigError> {
    let name = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|e| {
        refused(
            &name,
            format!("neither a rate nor a plan's CSV file that can be read ({e})"),
        )
    })?;
    let mut text = String::new();
    (file.take(MAX_PLAN_BYTES + 1).read_to_string(&mut text))
        .map_err(|e| refused(&name, format!("cannot read it: {e}")))?;
    if text.len() as u64 > MAX_PLAN_BYTES {
        return Err(refused(
            &name,
            format!("larger than {MAX_PLAN_BYTES} bytes"),
        ));
    }
    sustained_rate(&text, &name)
}

/// The refusal of the plan `name`: one line naming the flag, the file and `why`.
fn refused(name: &str, why: impl std::fmt::Display) -> ConfigError {
    ConfigError::invalid(FLAG, format!("{name}: {why}"))
}

/// The sustained request rate of the plan `name`, from its CSV text.
fn sustained_rate(text: &str, name: &str) -> Result<f64, ConfigError> {
    let not_plan = "not a plan's CSV (make one with `servebench plan ... --format csv`)";
    let mut reader = ::csv::Reader::from_reader(text.as_bytes());
    let head = reader
        .headers()
        .map_err(|_| refused(name, not_plan))?
        .clone();
    let col = |c: &str| head.iter().position(|h| h == c);
    let (Some(conf), Some(sustained), Some(rate)) = (
        col("configuration"),
        col("sustained"),
        col("request_throughput"),
    ) else {
        return Err(refused(name, not_plan));
    };
    let mut configurations: Vec<String> = Vec::new();
    let mut found = None;
    for row in reader.records() {
        let row = row.map_err(|e| refused(name, format!("{not_plan}: {e}")))?;
        let cell = |i: usize| row.get(i).unwrap_or("");
        if !configurations.iter().any(|c| c == cell(conf)) {
            configurations.push(cell(conf).to_string());
        }
        if cell(sustained) == "true" {
            found = Some(cell(rate).to_string());
        }
    }
    match configurations.len() {
        0 => return Err(refused(name, format!("{not_plan}: it has no step"))),
        1 => {}
        n => {
            let names = configurations.join(", ").escape_debug().to_string();
            let why = format!(
                "a plan of {n} configurations ({names}): give the plan of the one the replicas run"
            );
            return Err(refused(name, why));
        }
    }
    let Some(cell) = found else {
        return Err(refused(
            name,
            "its configuration sustains no load within the SLOs",
        ));
    };
    match cell.parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 => Ok(r),
        _ => Err(refused(
            name,
            format!(
                "the sustained step's request throughput '{}' is not a rate above 0",
                cell.escape_debug()
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "configuration,source,usd_per_hour,parameter,load,request_throughput,sustained,sustained_load";

    #[test]
    fn the_sustained_steps_request_rate_is_read() {
        let text = format!("{HEAD}\na,x,1,max_concurrency,1,3.5,false,2\na,x,1,max_concurrency,2,6.25,true,2\na,x,1,max_concurrency,4,7,false,2\n");
        assert_eq!(sustained_rate(&text, "p.csv").unwrap(), 6.25);
        assert_eq!(parse("12.5").unwrap(), 12.5);
    }

    #[test]
    fn what_is_not_one_sustained_configuration_is_refused() {
        let err = |text: &str| sustained_rate(text, "p.csv").unwrap_err().to_string();
        let two = format!("{HEAD}\na,x,1,r,1,3,true,1\nb,y,1,r,1,4,true,1\n");
        assert!(
            err(&two).contains("2 configurations (a, b)"),
            "{}",
            err(&two)
        );
        let none = format!("{HEAD}\na,x,1,r,1,3,false,\n");
        assert!(err(&none).contains("sustains no load"));
        assert!(err("a,b\n1,2\n").contains("not a plan"));
        assert!(err(&format!("{HEAD}\n")).contains("no step"));
        let bad = format!("{HEAD}\na,x,1,r,1,NaN,true,1\n");
        assert!(err(&bad).contains("not a rate"));
        // Each names the flag and the file, in one line.
        assert!(err(&bad).contains("--replica-capacity") && err(&bad).contains("p.csv"));
        assert!(!err(&two).contains('\n'));
        let gone = from_plan(Path::new("/nonexistent/plan.csv")).unwrap_err();
        assert!(gone.to_string().contains("/nonexistent/plan.csv"), "{gone}");
    }
}
