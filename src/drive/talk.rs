//! One conversation's task (`drive::load` spawns one per scheduled arrival; a single request
//! is a conversation of one turn): [`Talk::converse`] sends its turns in order, each after
//! the think time (a trace's: not before its own time), carrying the history, and hands each
//! record to the run's writer; [`Talked`] counts what it sent and why it left the rest
//! unsent. The driver adds the tasks' counts into the run's accounting. An agentic job's
//! task is `job.rs`'s ([`Talk::run_job`]), on the same `Talk`.
//!
//! This is the per-request path: what is added here is paid once per request sent.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::config::shape::HistoryLimits;
use crate::drive::history::{unbuilt, History, Unbuilt};
use crate::drive::ui::live::Live;
use crate::measure::client::{Client, RequestSpec};
use crate::measure::clock::Clock;
use crate::measure::record::{FailureKind, RequestRecord};
use crate::results::document::Unsent;

/// What one conversation's task did (a single request is a conversation of one turn).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Talked {
    pub(super) sent: u64,
    pub(super) unsent: Unsent,
    /// Its requests that ended cancelled (the run's cancel reached them in flight).
    pub(super) cancelled: u64,
}

impl Talked {
    /// Adds a finished task's count (a task that panicked counted nothing: there is none);
    /// true when the task's request was cancelled in flight.
    pub(super) fn add(&mut self, joined: Option<Result<Talked, tokio::task::JoinError>>) -> bool {
        let Some(Ok(t)) = joined else {
            return false;
        };
        self.sent += t.sent;
        self.unsent.add(&t.unsent);
        self.cancelled += t.cancelled;
        t.cancelled > 0
    }
}

/// What a conversation's task needs to send its turns and report them.
pub(super) struct Talk {
    pub(super) client: Arc<Client>,
    pub(super) cancel: CancellationToken,
    pub(super) stop: CancellationToken,
    pub(super) out: mpsc::UnboundedSender<RequestRecord>,
    pub(super) live: Arc<Live>,
    pub(super) clock: Clock,
    /// Think time between turns, real time.
    pub(super) think: Duration,
    /// The server's clock speed-up (1 for a real server): a job's gaps are in its time.
    pub(super) time_scale: f64,
    /// A time-bounded run's end: no turn starts after it.
    pub(super) window_end: Option<tokio::time::Instant>,
    /// What a conversation's history may hold.
    pub(super) history: HistoryLimits,
}

impl Talk {
    /// Sends `turns` in order (one request: just that one). Turn k + 1 is scheduled
    /// `think` after turn k ended (a trace's turn: not before its `due` time) and goes
    /// only if turn k succeeded, the run was not stopped and its time window (if any) has not
    /// ended. A turn carries the history ([`History`]); one that cannot be built is a failed
    /// record (`prompt`) that ends the conversation.
    ///
    /// Returns how many turns it sent and why it did not send the others: the run stopped,
    /// or a turn failed; turns that would come due after the window's end are not planned.
    pub(super) async fn converse(
        self,
        conversation: u64,
        turns: Vec<RequestSpec>,
        first_ns: u64,
        due: Vec<Option<u64>>,
    ) -> Talked {
        let due = |k: usize| due.get(k.wrapping_sub(1)).copied().flatten().unwrap_or(0);
        let multi = turns.first().is_some_and(|r| r.turn.is_some());
        let mut history = History::default();
        let mut scheduled_ns = first_ns;
        let n = turns.len() as u64;
        let mut talked = Talked::default();
        let think_ns = u64::try_from(self.think.as_nanos()).unwrap_or(u64::MAX);
        for (k, mut req) in turns.into_iter().enumerate() {
            // This turn and those after it.
            let left = n - k as u64;
            if k > 0 {
                scheduled_ns = (self.clock.now_ns().saturating_add(think_ns)).max(due(k));
                let at = self.clock.instant_at(scheduled_ns);
                if self.window_end.is_some_and(|end| at >= end) {
                    return talked;
                }
                let wait = at > tokio::time::Instant::now();
                tokio::select! {
                    biased;
                    () = self.stop.cancelled() => {
                        talked.unsent.stopped += left;
                        return talked;
                    }
                    // Due now: at once (a timer would round up to its next tick).
                    () = tokio::time::sleep_until(at), if wait => {}
                    () = std::future::ready(()), if !wait => {}
                }
            }
            // Its session (`--affinity session` keeps it on one endpoint).
            req.session = multi.then_some(conversation);
            let built = if multi {
                (history.turn(&mut req, k, &self.client, self.history, &self.cancel)).await
            } else {
                Ok(())
            };
            let mut record = match built {
                Ok(()) => match self.send(&req, scheduled_ns).await {
                    Some(record) => record,
                    // Caught waiting at the prefill gate by the stop (every turn left
                    // unsent) or by the window's end (this turn; those after it would come
                    // due after the end: not planned).
                    None => {
                        match self.stop.is_cancelled() {
                            true => talked.unsent.stopped += left,
                            false => talked.unsent.window_ended += 1,
                        }
                        return talked;
                    }
                },
                Err(Unbuilt::Failed(why)) => self.unbuilt(&req, scheduled_ns, why),
                Err(Unbuilt::Cancelled) => {
                    talked.unsent.stopped += left;
                    return talked;
                }
            };
            let ok = record.is_ok();
            talked.cancelled +=
                u64::from(record.outcome.failure_kind() == Some(FailureKind::Cancelled));
            if multi {
                record.conversation = Some(conversation);
                record.turn = Some(k as u32);
                history.reply(req.prompt, &record);
            }
            let _ = self.out.send(record);
            talked.sent += 1;
            if !ok {
                self.after_failure(left - 1, &mut talked);
                return talked;
            }
        }
        talked
    }

    /// Sends `req` at `scheduled_ns`. It counts as sent when its first byte is written (or,
    /// for a request that never got that far, when it ends), so the live in-flight count,
    /// sent − finished, is true mid-run. `None`: the run stopped, or its time window ended,
    /// while it waited at the prefill gate, so it was never sent (counted unsent).
    pub(super) async fn send(&self, req: &RequestSpec, scheduled_ns: u64) -> Option<RequestRecord> {
        let told = AtomicBool::new(false);
        let tell = || {
            if !told.swap(true, Relaxed) {
                self.live.sent.fetch_add(1, Relaxed);
            }
        };
        let record = (self.client)
            .send_within(
                req,
                scheduled_ns,
                &self.clock,
                &self.cancel,
                None,
                Some(&tell),
            )
            .await;
        if Client::stopped_at_gate(&record) {
            return None;
        }
        tell();
        Some(record)
    }

    /// The failed record of a request that could not be built (`why`), counted as sent as
    /// every record is.
    pub(super) fn unbuilt(
        &self,
        req: &RequestSpec,
        scheduled_ns: u64,
        why: String,
    ) -> RequestRecord {
        self.live.sent.fetch_add(1, Relaxed);
        unbuilt(req, scheduled_ns, self.clock.now_ns(), why)
    }

    /// Counts the `later` turns a failed turn leaves unsent: beyond the window (not planned)
    /// when it has ended, stopped when the run was, else their conversation's failure.
    fn after_failure(&self, later: u64, talked: &mut Talked) {
        if self
            .window_end
            .is_some_and(|end| tokio::time::Instant::now() >= end)
        {
            return;
        }
        if self.stop.is_cancelled() || self.cancel.is_cancelled() {
            talked.unsent.stopped += later;
        } else {
            talked.unsent.earlier_turn_failed += later;
        }
    }
}
