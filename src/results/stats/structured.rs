//! Structured output and tool calls (docs/metrics.md, "Structured output and tool calls"):
//! over the successful requests of a run that asked for a schema's JSON or a tool call, how
//! many answers were checked, parsed as JSON and were valid against the schema (the share
//! valid is vLLM's `correct_rate(%)`), by verdict; and for tool calls, the time to the first
//! tool-call token, the argument tokens per answer and the calls per answer. A grammar's answers are not checked:
//! they are counted apart (`unchecked`), outside every share, as are the answers whose check
//! went over its budget (counted again in `over_budget`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::distribution::{Distribution, NS_PER_MS};
use super::samples::SampleSet;
use crate::measure::output_check::Verdict;
use crate::measure::record::RequestRecord;

/// A run's structured-output figures; absent for a run that asked for none.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StructuredFigures {
    /// Successful requests whose answer was checked.
    pub checked: u64,
    /// Those whose answer parsed as JSON.
    pub json: u64,
    /// Those whose answer was valid against the schema.
    pub valid: u64,
    /// `valid / checked`, in percent: vLLM's `correct_rate(%)`; absent when no answer was
    /// checked (a grammar run's), as no share was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correct_rate: Option<f64>,
    /// `json / checked`, in percent; absent when no answer was checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_rate: Option<f64>,
    /// Checked answers by verdict (`valid`, `schema_mismatch`, `not_json`, `missing`,
    /// `too_long`, `regex_mismatch`, `not_a_choice`).
    pub by_verdict: BTreeMap<String, u64>,
    /// Successful requests whose answer was not checked (`--structured-output grammar`, a
    /// check over its budget, a check the run's stop cut short).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unchecked: u64,
    /// Of `unchecked`, the answers whose check went over its budget (`output_check`'s
    /// `over_budget`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub over_budget: u64,
    /// Successful requests whose answer carried a tool call.
    #[serde(default)]
    pub tool_calls: u64,
    /// From the send to the first piece of a tool call's arguments, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_tool_call_ms: Option<Distribution>,
    /// Output tokens per request that answered with a tool call, mean.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_tool_call_tokens: Option<f64>,
    /// Tool calls per checked answer that had any, mean (an answer may call several
    /// functions; each is checked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_tool_calls_per_answer: Option<f64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Clone, Debug, Default)]
pub(super) struct StructuredSums {
    unchecked: u64,
    over_budget: u64,
    checked: u64,
    json: u64,
    valid: u64,
    by_verdict: BTreeMap<String, u64>,
    tool_calls: u64,
    tool_call_tokens: u128,
    ttft_tool_call: SampleSet,
    /// Checked answers with a tool call, and their calls.
    answers_with_calls: u64,
    calls: u64,
}

impl StructuredSums {
    /// A successful request with `output_tokens`; `time_scale`: the simulator's clock speed-up.
    pub(super) fn add(&mut self, r: &RequestRecord, output_tokens: u64, time_scale: f64) {
        match &r.output_check {
            Some(c) if c.verdict == Verdict::Unchecked => {
                self.unchecked += 1;
                self.over_budget += u64::from(c.over_budget);
            }
            Some(c) => {
                self.checked += 1;
                if c.tool_calls > 0 {
                    self.answers_with_calls += 1;
                    self.calls += u64::from(c.tool_calls);
                }
                self.json += u64::from(c.parsed_as_json());
                self.valid += u64::from(c.verdict == Verdict::Valid);
                *self
                    .by_verdict
                    .entry(c.verdict.as_str().into())
                    .or_insert(0) += 1;
            }
            None => {}
        }
        if let Some(t) = r.first_tool_call_ns {
            self.tool_calls += 1;
            self.tool_call_tokens += u128::from(output_tokens);
            let ns = t.saturating_sub(r.sent_ns);
            self.ttft_tool_call.add(ns as f64 * time_scale / NS_PER_MS);
        }
    }

    pub(super) fn merge(&mut self, other: StructuredSums) {
        self.checked += other.checked;
        self.unchecked += other.unchecked;
        self.over_budget += other.over_budget;
        self.json += other.json;
        self.valid += other.valid;
        for (k, n) in other.by_verdict {
            *self.by_verdict.entry(k).or_insert(0) += n;
        }
        self.tool_calls += other.tool_calls;
        self.tool_call_tokens += other.tool_call_tokens;
        self.ttft_tool_call.merge(other.ttft_tool_call);
        self.answers_with_calls += other.answers_with_calls;
        self.calls += other.calls;
    }

    pub(super) fn finish(self, ps: &[f64]) -> Option<StructuredFigures> {
        if self.checked == 0 && self.tool_calls == 0 && self.unchecked == 0 {
            return None;
        }
        let pct = |n: u64| (self.checked > 0).then(|| n as f64 * 100.0 / self.checked as f64);
        Some(StructuredFigures {
            checked: self.checked,
            json: self.json,
            valid: self.valid,
            correct_rate: pct(self.valid),
            json_rate: pct(self.json),
            by_verdict: self.by_verdict,
            unchecked: self.unchecked,
            over_budget: self.over_budget,
            tool_calls: self.tool_calls,
            mean_tool_call_tokens: (self.tool_calls > 0)
                .then(|| self.tool_call_tokens as f64 / self.tool_calls as f64),
            ttft_tool_call_ms: self.ttft_tool_call.finish(ps),
            mean_tool_calls_per_answer: (self.answers_with_calls > 0)
                .then(|| self.calls as f64 / self.answers_with_calls as f64),
        })
    }
}
