//! `--bucket-by FIELD:E0,E1,...`: a run's figures also per bucket of a request's length
//! (docs/metrics.md, "Figures by length bucket"). A value, checked when it is read: the field
//! (`input_len`, `output_len`), then at most [`MAX_BUCKET_EDGES`] edges in strictly
//! increasing order. Bucket i holds the lengths from edge i up to (not including) edge i + 1;
//! the last is open above; a length below the first edge is in none.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::error::BucketError;

/// The most edges `--bucket-by` takes.
pub const MAX_BUCKET_EDGES: usize = 32;

/// Which length a request is bucketed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BucketField {
    /// The prompt's tokens (the server's count where it gave a plausible one, else the built
    /// length).
    InputLen,
    /// The output tokens (N, where the request got an answer; else the length asked for).
    OutputLen,
}

impl BucketField {
    pub fn as_str(self) -> &'static str {
        match self {
            BucketField::InputLen => "input_len",
            BucketField::OutputLen => "output_len",
        }
    }
}

/// The buckets a run's figures are also given by.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BucketBy {
    pub field: BucketField,
    pub edges: Vec<u64>,
}

impl BucketBy {
    /// The bucket `len` falls in; `None` below the first edge.
    pub fn bucket(&self, len: u64) -> Option<usize> {
        self.edges.iter().rposition(|&e| e <= len)
    }

    /// Bucket `i` as people read it: `512-2047`, or `8192+` for the last.
    pub fn label(&self, i: usize) -> String {
        match self.edges.get(i + 1) {
            Some(hi) => format!("{}-{}", self.edges[i], hi - 1),
            None => format!("{}+", self.edges[i]),
        }
    }
}

impl fmt::Display for BucketBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let edges: Vec<String> = self.edges.iter().map(u64::to_string).collect();
        write!(f, "{}:{}", self.field.as_str(), edges.join(","))
    }
}

impl FromStr for BucketBy {
    type Err = BucketError;

    fn from_str(s: &str) -> Result<Self, BucketError> {
        let bad = |why: &'static str| BucketError {
            given: s.chars().take(200).collect(),
            why,
        };
        let (field, edges) = s.split_once(':').ok_or_else(|| bad("not FIELD:EDGES"))?;
        let field = match field.trim() {
            "input_len" => BucketField::InputLen,
            "output_len" => BucketField::OutputLen,
            _ => return Err(bad("the field is input_len or output_len")),
        };
        let edges = (edges.split(','))
            .map(|e| e.trim().parse::<u64>())
            .collect::<Result<Vec<u64>, _>>()
            .map_err(|_| bad("each edge is a whole number of tokens"))?;
        if edges.len() > MAX_BUCKET_EDGES {
            return Err(bad("at most 32 edges"));
        }
        if edges.windows(2).any(|w| w[0] >= w[1]) {
            return Err(bad("the edges must increase strictly"));
        }
        Ok(BucketBy { field, edges })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bucket i is [edge i, edge i+1), the last open; below the first edge: none; bad specs
    /// refused with what is wrong.
    #[test]
    fn edges_bound_buckets_and_bad_specs_are_refused() {
        let b: BucketBy = "input_len:0,512,2048,8192".parse().unwrap();
        let got: Vec<_> = [0, 511, 512, 2047, 2048, 8192, u64::MAX]
            .map(|n| b.bucket(n))
            .to_vec();
        assert_eq!(
            got,
            [
                Some(0),
                Some(0),
                Some(1),
                Some(1),
                Some(2),
                Some(3),
                Some(3)
            ]
        );
        assert_eq!((b.label(0), b.label(3)), ("0-511".into(), "8192+".into()));
        assert_eq!(b.to_string(), "input_len:0,512,2048,8192");
        let o: BucketBy = "output_len:100".parse().unwrap();
        assert_eq!((o.bucket(99), o.bucket(100)), (None, Some(0)));
        let many = format!(
            "input_len:{}",
            (0..33).map(|i| i.to_string()).collect::<Vec<_>>().join(",")
        );
        for (spec, why) in [
            ("input_len", "not FIELD:EDGES"),
            ("prompt:1,2", "input_len or output_len"),
            ("input_len:1,x", "whole number"),
            ("input_len:-1", "whole number"),
            ("input_len:", "whole number"),
            ("input_len:5,5", "increase strictly"),
            ("input_len:9,3", "increase strictly"),
            (many.as_str(), "at most 32"),
        ] {
            let e = spec.parse::<BucketBy>().unwrap_err().to_string();
            assert!(e.contains(why), "{spec}: {e}");
        }
    }
}
