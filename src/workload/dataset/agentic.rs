//! The `agentic` dataset's jobs: `depth` levels of `fanout` parallel calls. Level 0's calls
//! start with their job; each call of level k + 1 waits for every call of level k, is sent
//! `gap_ms` after the last of them ended, and carries all of their replies after its own text
//! (docs/workloads.md, "Jobs (agentic workloads)", has the picture). The calls' own texts
//! are any dataset's prompts (random text of exact length here): this module only gives each
//! its place.

use crate::config::workload::AgenticShape;
use crate::measure::job::CallPlace;

/// The places of one job's calls, in call order (level by level).
pub fn places(shape: &AgenticShape) -> Vec<CallPlace> {
    let f = shape.fanout;
    let of = shape.fanout.saturating_mul(shape.depth);
    (0..shape.depth)
        .flat_map(|level| {
            let upstream: Vec<u32> = match level {
                0 => Vec::new(),
                _ => ((level - 1) * f..level * f).collect(),
            };
            (0..f).map(move |j| CallPlace {
                call: level * f + j,
                of,
                after: upstream.clone(),
                splice: upstream.clone(),
                gap_ms: if level == 0 { 0.0 } else { shape.gap_ms },
            })
        })
        .collect()
}

/// The calls of one job each: `items` (one per call, `calls_per_job` per job, in order) given
/// their places.
pub fn assign<T>(items: &mut [T], shape: &AgenticShape, place: impl Fn(&mut T, CallPlace)) {
    let one = places(shape);
    for job in items.chunks_mut(one.len().max(1)) {
        for (item, p) in job.iter_mut().zip(&one) {
            place(item, p.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_wait_for_and_splice_the_whole_level_before() {
        let shape = AgenticShape {
            fanout: 2,
            depth: 3,
            gap_ms: 5.0,
        };
        let p = places(&shape);
        assert_eq!(p.len(), 6);
        assert!(p[..2].iter().all(|c| c.after.is_empty() && c.gap_ms == 0.0));
        assert_eq!(p[2].after, vec![0, 1]);
        assert_eq!(p[3].splice, vec![0, 1]);
        assert_eq!(p[5].after, vec![2, 3]);
        assert_eq!(p[5].gap_ms, 5.0);
        assert_eq!(
            (0..6).collect::<Vec<u32>>(),
            p.iter().map(|c| c.call).collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_tool_loop_is_a_chain() {
        let p = places(&AgenticShape {
            fanout: 1,
            depth: 3,
            gap_ms: 0.0,
        });
        assert_eq!(p[1].after, vec![0]);
        assert_eq!(p[2].after, vec![1]);
    }
}
