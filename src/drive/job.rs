//! One agentic job's task (`drive::load` spawns one per scheduled arrival, holding the job's
//! concurrency slot): [`Talk::run_job`] follows the job's graph of calls. A call that waits
//! for nothing starts with the job; any other is sent its `gap_ms` (the server's time, as a
//! think time is) after the last of its `after` calls ended. Calls that do not wait for each
//! other are in flight together, inside this one task. A call's prompt is its own text
//! followed by the replies of its `splice` calls, as the server produced them
//! (docs/workloads.md, "How a call's prompt carries its upstream replies").
//!
//! What the job holds: each call's place, and an upstream reply only while a call that
//! splices it is still unbuilt. A failed call fails its job: the calls that wait for it,
//! directly or through others, are never sent and are counted unsent (`upstream_failed`;
//! `stopped` when the failure was the run's stop); the calls that do not wait for it still
//! run. A stop leaves every call not yet sent unsent (`stopped`).

use futures_util::stream::{FuturesUnordered, StreamExt};

use crate::drive::history::{render_call, Unbuilt};
use crate::drive::talk::{Talk, Talked};
use crate::measure::client::RequestSpec;
use crate::measure::job::{CallPlace, MAX_CALLS_PER_JOB};
use crate::measure::record::{FailureKind, RequestRecord};

/// Where one call of a job stands.
#[derive(Clone, Copy, Debug, PartialEq)]
enum State {
    /// Waiting for its upstream calls (or not yet looked at).
    Pending,
    /// Handed to its future: it is being built, waits for its gap, or is in flight.
    Launched,
    /// Its record was written.
    Ended,
    /// Never sent (counted in the job's `Talked`), or not planned (past the window's end).
    Dropped,
}

/// Why a call is not sent.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Why {
    Stopped,
    UpstreamFailed,
    /// It would come due after the time window's end: it was not planned.
    NotPlanned,
    /// Due inside the time window, still waiting at the prefill gate when it ended.
    WindowEnded,
}

/// How a call's future ended.
enum End {
    Record(Box<RequestRecord>),
    Dropped(Why),
}

/// The job's graph as its calls end: what each waits for and what each reply is still needed
/// for.
struct Graph {
    places: Vec<CallPlace>,
    state: Vec<State>,
    /// Upstream calls each still waits for.
    waits: Vec<usize>,
    /// The latest end (clock ns) of each call's upstream calls so far.
    latest_end: Vec<u64>,
    /// The calls that wait for each call.
    downstream: Vec<Vec<u32>>,
    /// Of each call's reply: how many unbuilt calls still splice it, and the reply (its text
    /// and the server's count of its tokens) while any do.
    needed: Vec<u32>,
    replies: Vec<Option<(String, u64)>>,
}

impl Graph {
    fn new(calls: &[RequestSpec]) -> Graph {
        let n = calls.len();
        let places: Vec<CallPlace> = (calls.iter())
            .map(|r| r.call.clone().unwrap_or_default())
            .collect();
        let mut waits = vec![0; n];
        let mut downstream = vec![Vec::new(); n];
        let mut needed = vec![0u32; n];
        for (k, p) in places.iter().enumerate() {
            // A place that names a later call, or itself, is refused when the call is built.
            for &j in p.after.iter().filter(|&&j| (j as usize) < k) {
                waits[k] += 1;
                downstream[j as usize].push(k as u32);
            }
            for &j in p.splice.iter().filter(|&&j| (j as usize) < k) {
                needed[j as usize] = needed[j as usize].saturating_add(1);
            }
        }
        Graph {
            places,
            state: vec![State::Pending; n],
            waits,
            latest_end: vec![0; n],
            downstream,
            needed,
            replies: vec![None; n],
        }
    }

    /// The calls that wait for nothing.
    fn roots(&self) -> Vec<usize> {
        (0..self.places.len())
            .filter(|&k| self.waits[k] == 0)
            .collect()
    }

    /// Call `k` will never be built: the replies it would carry are needed once less.
    fn release(&mut self, k: usize) {
        for &j in &self.places[k].splice {
            let j = j as usize;
            if j < k && self.needed[j] > 0 {
                self.needed[j] -= 1;
                if self.needed[j] == 0 {
                    self.replies[j] = None;
                }
            }
        }
    }

    /// Marks every call that waits for `k`, directly or through others, not sent for `why`,
    /// counting them in `talked`.
    fn drop_downstream(&mut self, k: usize, why: Why, talked: &mut Talked) {
        let mut todo = self.downstream[k].clone();
        while let Some(d) = todo.pop() {
            let d = d as usize;
            if self.state[d] != State::Pending {
                continue;
            }
            self.drop_call(d, why, talked);
            todo.extend_from_slice(&self.downstream[d]);
        }
    }

    /// Marks call `k` not sent for `why`, counting it in `talked`.
    fn drop_call(&mut self, k: usize, why: Why, talked: &mut Talked) {
        self.state[k] = State::Dropped;
        self.release(k);
        match why {
            Why::Stopped => talked.unsent.stopped += 1,
            Why::UpstreamFailed => talked.unsent.upstream_failed += 1,
            Why::WindowEnded => talked.unsent.window_ended += 1,
            Why::NotPlanned => {}
        }
    }

    /// Call `k`'s prompt text: its own text, then each spliced reply, `"\n\n"` between parts,
    /// and its words when `words` (its own count plus each reply's whitespace words), within
    /// `limits`. Its spliced replies are needed once less.
    fn spliced(
        &mut self,
        k: usize,
        req: &RequestSpec,
        limits: crate::config::shape::HistoryLimits,
        words: bool,
    ) -> Result<(String, Option<u64>), String> {
        let place = &self.places[k];
        if let Some(&j) = (place.after.iter().chain(&place.splice)).find(|&&j| j as usize >= k) {
            return Err(format!("call {k} names call {j}, which is not before it"));
        }
        if k >= MAX_CALLS_PER_JOB {
            return Err(format!(
                "call {k}: a job holds at most {MAX_CALLS_PER_JOB} calls"
            ));
        }
        let mut parts: Vec<&str> = vec![&req.prompt];
        let mut counted = req.input_len.filter(|_| words);
        let (mut bytes, mut tokens) = (req.prompt.len() as u64, req.input_len.unwrap_or(0));
        for &j in &place.splice {
            let Some((reply, output)) = self.replies[j as usize].as_ref() else {
                return Err(format!(
                    "call {k} carries the reply of call {j}, which has not answered before it"
                ));
            };
            parts.push(reply);
            bytes = bytes.saturating_add(reply.len() as u64 + 2);
            // The limit holds the server's count of the reply, as a conversation's history
            // does; in words the prompt's count adds the reply's words.
            tokens = tokens.saturating_add(*output);
            if words {
                counted =
                    counted.map(|n| n.saturating_add(reply.split_whitespace().count() as u64));
            }
        }
        let over = |what: &str, n: u64, flag: &str, max: u64| {
            format!("call {k}: its prompt would hold {n} {what}, more than {flag} {max}")
        };
        if bytes > limits.bytes {
            return Err(over("bytes", bytes, "--max-history-bytes", limits.bytes));
        }
        if tokens > limits.tokens {
            let flag = "--max-history-tokens";
            return Err(over("tokens", tokens, flag, limits.tokens));
        }
        Ok((parts.join("\n\n"), counted))
    }
}

impl Talk {
    /// Sends job `job`'s `calls` (call 0 first, each call's `after` and `splice` naming earlier
    /// ones) by its graph, from `first_ns` (the arrival's scheduled time); every record carries
    /// the job and the call's place. Returns what it sent and why it left the rest unsent.
    pub(super) async fn run_job(self, job: u64, calls: Vec<RequestSpec>, first_ns: u64) -> Talked {
        let mut talked = Talked::default();
        let mut graph = Graph::new(&calls);
        let mut specs: Vec<Option<RequestSpec>> = calls.into_iter().map(Some).collect();
        let mut flying = FuturesUnordered::new();
        let mut ready = graph.roots();
        loop {
            for k in ready.drain(..) {
                let Some(mut req) = specs[k].take() else {
                    continue;
                };
                req.session = Some(job);
                let base = match graph.places[k].after.is_empty() {
                    true => first_ns,
                    false => graph.latest_end[k],
                };
                let gap = self.real_ns(graph.places[k].gap_ms * 1e6);
                let scheduled_ns = base.saturating_add(gap);
                if self.stop.is_cancelled() {
                    graph.drop_call(k, Why::Stopped, &mut talked);
                    graph.drop_downstream(k, Why::Stopped, &mut talked);
                    continue;
                }
                let built = graph.spliced(k, &req, self.history, self.client.tokenizer().is_none());
                graph.release(k);
                graph.state[k] = State::Launched;
                flying.push(self.call(k, req, built, scheduled_ns));
            }
            let Some((k, end)) = flying.next().await else {
                break;
            };
            match end {
                End::Record(mut record) => {
                    graph.state[k] = State::Ended;
                    record.job = Some(job);
                    record.call = Some(graph.places[k].clone());
                    if graph.needed[k] > 0 {
                        let output = record.output_tokens.unwrap_or(0);
                        graph.replies[k] = (record.generated_text.clone()).map(|t| (t, output));
                    }
                    let ok = record.is_ok();
                    let end_ns = record.end_ns;
                    talked.cancelled +=
                        u64::from(record.outcome.failure_kind() == Some(FailureKind::Cancelled));
                    let _ = self.out.send(*record);
                    talked.sent += 1;
                    if ok {
                        ready.extend(graph.ended(k, end_ns));
                    } else {
                        let why = self.after_failed_call();
                        graph.drop_downstream(k, why, &mut talked);
                    }
                }
                End::Dropped(why) => {
                    graph.drop_call(k, why, &mut talked);
                    // After the window's end, the calls downstream were never planned.
                    let below = match why {
                        Why::WindowEnded => Why::NotPlanned,
                        why => why,
                    };
                    graph.drop_downstream(k, below, &mut talked);
                }
            }
        }
        // Every call ended, or was dropped with its reason; none is left waiting (each waits
        // only for earlier calls), but one would count as stopped, never be lost.
        let left = graph.state.iter().filter(|&&s| s == State::Pending).count();
        talked.unsent.stopped += left as u64;
        talked
    }

    /// Why the calls downstream of a failed call are not sent: not planned when the window has
    /// ended, stopped when the run was, else their job's failure.
    fn after_failed_call(&self) -> Why {
        let now = tokio::time::Instant::now();
        if self.window_end.is_some_and(|end| now >= end) {
            Why::NotPlanned
        } else if self.stop.is_cancelled() || self.cancel.is_cancelled() {
            Why::Stopped
        } else {
            Why::UpstreamFailed
        }
    }

    /// The clock's span of `server_ns` of the server's time (the run's time scale).
    fn real_ns(&self, server_ns: f64) -> u64 {
        // A float-to-integer cast saturates (and NaN is 0).
        (server_ns / self.time_scale) as u64
    }

    /// Call `k`: `built` (its spliced text and its words, or why it cannot be built) rendered
    /// and counted where the run has a template or a tokenizer, then sent at `scheduled_ns`,
    /// unless the run stops first or the time falls past the window's end.
    async fn call(
        &self,
        k: usize,
        mut req: RequestSpec,
        built: Result<(String, Option<u64>), String>,
        scheduled_ns: u64,
    ) -> (usize, End) {
        let fail = |req: &RequestSpec, why: String| {
            let record = self.unbuilt(req, scheduled_ns, why);
            (k, End::Record(Box::new(record)))
        };
        let (text, words) = match built {
            Ok(b) => b,
            Err(why) => return fail(&req, why),
        };
        match render_call(&self.client, text, k, &self.cancel).await {
            Ok((prompt, counted)) => {
                req.prompt = prompt;
                req.input_len = counted.or(words);
                req.messages = None;
            }
            Err(Unbuilt::Failed(why)) => return fail(&req, why),
            Err(Unbuilt::Cancelled) => return (k, End::Dropped(Why::Stopped)),
        }
        let at = self.clock.instant_at(scheduled_ns);
        if self.window_end.is_some_and(|end| at >= end) {
            return (k, End::Dropped(Why::NotPlanned));
        }
        if at > tokio::time::Instant::now() {
            // Sub-millisecond, as arrivals are: tokio's timer would leave a call up to 2 ms late
            // (a timerfd only while it waits).
            let mut timer = crate::measure::timer::SendTimer::new();
            tokio::select! {
                biased;
                () = self.stop.cancelled() => return (k, End::Dropped(Why::Stopped)),
                () = timer.sleep_until(at) => {}
            }
        } else if self.stop.is_cancelled() {
            return (k, End::Dropped(Why::Stopped));
        }
        match self.send(&req, scheduled_ns).await {
            Some(record) => (k, End::Record(Box::new(record))),
            // Caught waiting at the prefill gate by the stop or the window's end: never sent.
            None => match self.stop.is_cancelled() {
                true => (k, End::Dropped(Why::Stopped)),
                false => (k, End::Dropped(Why::WindowEnded)),
            },
        }
    }
}

impl Graph {
    /// Call `k` ended well at `end_ns`: the calls downstream of it that waited only for it
    /// now, to launch.
    fn ended(&mut self, k: usize, end_ns: u64) -> Vec<usize> {
        let mut ready = Vec::new();
        for &d in &self.downstream[k] {
            let d = d as usize;
            self.latest_end[d] = self.latest_end[d].max(end_ns);
            self.waits[d] = self.waits[d].saturating_sub(1);
            if self.waits[d] == 0 && self.state[d] == State::Pending {
                ready.push(d);
            }
        }
        ready
    }
}

#[cfg(test)]
#[path = "job_tests.rs"]
mod tests;
