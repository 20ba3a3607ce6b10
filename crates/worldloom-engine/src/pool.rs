//! [`EnginePool`]: several engines serving the same model (vLLM or SGLang
//! servers behind `--engine openai`) used as one, by least outstanding
//! requests, with a failed request retried on another member.
//!
//! Each prediction goes to the member with the fewest predictions in
//! flight (ties: the one after the last chosen, round robin). When a
//! member refuses the request or its stream fails before producing
//! anything (an `Error` event first, or a stream that ends without
//! `Done`), the next member by the same order is tried, each member once;
//! the last failure is reported when all fail. Once a member has produced
//! an event, its stream is the prediction's, errors included (a half-sent
//! observation is not restarted elsewhere).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{RecvTimeoutError, Sender};
use std::time::Duration;

use crate::world_model::{
    CancelToken, EngineError, EngineEvent, PredictRequest, PredictionStream, WorldModel,
};

struct Member {
    engine: Arc<dyn WorldModel>,
    outstanding: AtomicUsize,
}

/// Engines used as one; see the module docs.
pub struct EnginePool {
    members: Arc<Vec<Member>>,
    next: AtomicUsize,
}

impl EnginePool {
    /// A pool of `engines` (at least one).
    ///
    /// # Errors
    /// [`EngineError::Setup`] for an empty list.
    pub fn new(engines: Vec<Arc<dyn WorldModel>>) -> Result<Self, EngineError> {
        if engines.is_empty() {
            return Err(EngineError::Setup(
                "an engine pool needs at least one engine".into(),
            ));
        }
        Ok(Self {
            members: Arc::new(
                engines
                    .into_iter()
                    .map(|engine| Member {
                        engine,
                        outstanding: AtomicUsize::new(0),
                    })
                    .collect(),
            ),
            next: AtomicUsize::new(0),
        })
    }

    /// Predictions in flight per member, in member order.
    pub fn outstanding(&self) -> Vec<usize> {
        self.members
            .iter()
            .map(|m| m.outstanding.load(Ordering::SeqCst))
            .collect()
    }

    /// Member indices, fewest outstanding first, ties from the rotating
    /// start.
    fn order(&self) -> Vec<usize> {
        let n = self.members.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed) % n;
        let mut order: Vec<usize> = (0..n).map(|i| (start + i) % n).collect();
        order.sort_by_key(|&i| self.members[i].outstanding.load(Ordering::SeqCst));
        order
    }
}

impl WorldModel for EnginePool {
    /// `pool(NAME, NAME, …)`, or the one member's name.
    fn name(&self) -> String {
        if self.members.len() == 1 {
            return self.members[0].engine.name();
        }
        let names: Vec<String> = self.members.iter().map(|m| m.engine.name()).collect();
        format!("pool({})", names.join(", "))
    }

    fn predict(&self, request: PredictRequest) -> Result<PredictionStream, EngineError> {
        let (tx, rx) = std::sync::mpsc::channel();
        let cancel = CancelToken::new();
        let order = self.order();
        // Counted at once, so the next request sees this one.
        self.members[order[0]]
            .outstanding
            .fetch_add(1, Ordering::SeqCst);
        let members = self.members.clone();
        let token = cancel.clone();
        std::thread::Builder::new()
            .name("worldloom-engine-pool".into())
            .spawn(move || run(&members, &order, request, &token, &tx))
            .map_err(|e| EngineError::Stopped(format!("cannot start the pool's thread: {e}")))?;
        Ok(PredictionStream { events: rx, cancel })
    }

    fn context_tokens(&self) -> Option<usize> {
        self.members
            .iter()
            .filter_map(|m| m.engine.context_tokens())
            .min()
    }
}

/// Tries members in `order` until one produces an event, then forwards its
/// stream to `tx`.
fn run(
    members: &[Member],
    order: &[usize],
    request: PredictRequest,
    cancel: &CancelToken,
    tx: &Sender<EngineEvent>,
) {
    let mut last_error = EngineError::Stopped("no engine in the pool answered".into());
    for (n, &i) in order.iter().enumerate() {
        let member = &members[i];
        if n > 0 {
            member.outstanding.fetch_add(1, Ordering::SeqCst);
        }
        let outcome = forward(member, request.clone(), cancel, tx);
        member.outstanding.fetch_sub(1, Ordering::SeqCst);
        match outcome {
            Forwarded::Finished => return,
            Forwarded::FailedBeforeOutput(error) => last_error = error,
        }
        if cancel.is_cancelled() {
            break;
        }
    }
    let _ = tx.send(EngineEvent::Error { error: last_error });
}

enum Forwarded {
    /// The stream was forwarded to its end (or the receiver left).
    Finished,
    /// The member failed before any output; try another.
    FailedBeforeOutput(EngineError),
}

fn forward(
    member: &Member,
    request: PredictRequest,
    cancel: &CancelToken,
    tx: &Sender<EngineEvent>,
) -> Forwarded {
    let name = member.engine.name();
    let stream = match member.engine.predict(request) {
        Ok(s) => s,
        Err(e) => return Forwarded::FailedBeforeOutput(e),
    };
    let mut started = false;
    loop {
        if cancel.is_cancelled() {
            stream.cancel.cancel();
        }
        let event = match stream.events.recv_timeout(Duration::from_millis(10)) {
            Ok(event) => event,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => {
                let error =
                    EngineError::Stopped(format!("{name} ended the prediction without a result"));
                if started {
                    let _ = tx.send(EngineEvent::Error { error });
                    return Forwarded::Finished;
                }
                return Forwarded::FailedBeforeOutput(error);
            }
        };
        let last = matches!(event, EngineEvent::Done { .. } | EngineEvent::Error { .. });
        if let EngineEvent::Error { error } = &event
            && !started
        {
            return Forwarded::FailedBeforeOutput(error.clone());
        }
        started = true;
        if tx.send(event).is_err() {
            stream.cancel.cancel();
            return Forwarded::Finished;
        }
        if last {
            return Forwarded::Finished;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use worldloom_core::{ChatMessage, ChatRole};

    use super::*;
    use crate::baseline::CopyEngine;
    use crate::collect::collect;
    use crate::world_model::GenerationParams;

    struct Down;
    impl WorldModel for Down {
        fn name(&self) -> String {
            "down".into()
        }
        fn predict(&self, _: PredictRequest) -> Result<PredictionStream, EngineError> {
            let (tx, rx) = std::sync::mpsc::channel();
            let _ = tx.send(EngineEvent::Error {
                error: EngineError::Remote("503 Service Unavailable".into()),
            });
            Ok(PredictionStream {
                events: rx,
                cancel: CancelToken::new(),
            })
        }
    }

    /// Holds every prediction until released.
    struct Held(Arc<AtomicBool>);
    impl WorldModel for Held {
        fn name(&self) -> String {
            "held".into()
        }
        fn predict(&self, request: PredictRequest) -> Result<PredictionStream, EngineError> {
            let release = self.0.clone();
            let inner = CopyEngine.predict(request)?;
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                while !release.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(2));
                }
                for e in inner.events.iter() {
                    let _ = tx.send(e);
                }
            });
            Ok(PredictionStream {
                events: rx,
                cancel: inner.cancel,
            })
        }
    }

    fn request() -> PredictRequest {
        let mut r = PredictRequest::new(
            vec![ChatMessage::new(ChatRole::User, "ls")],
            GenerationParams::default(),
        );
        r.current_observation = Some("state".into());
        r
    }

    #[test]
    fn a_failing_member_is_retried_on_another() {
        let pool = EnginePool::new(vec![Arc::new(Down), Arc::new(CopyEngine)]).expect("pool");
        for _ in 0..4 {
            let stream = pool.predict(request()).expect("stream");
            let got = collect(stream, &CancelToken::new(), None, |_| {}).expect("answer");
            assert_eq!(got.output.parsed.observation.as_deref(), Some("state"));
        }
        let all_down = EnginePool::new(vec![Arc::new(Down), Arc::new(Down)]).expect("pool");
        let stream = all_down.predict(request()).expect("stream");
        let err = collect(stream, &CancelToken::new(), None, |_| {}).unwrap_err();
        assert!(err.to_string().contains("503"), "{err}");
        assert_eq!(pool.name(), "pool(down, copy)");
    }

    #[test]
    fn a_busy_member_is_passed_over() {
        let release = Arc::new(AtomicBool::new(false));
        let pool = EnginePool::new(vec![Arc::new(Held(release.clone())), Arc::new(CopyEngine)])
            .expect("pool");
        let held = pool.predict(request()).expect("first goes to member 0");
        assert_eq!(pool.outstanding(), [1, 0]);
        let quick = pool.predict(request()).expect("second");
        collect(quick, &CancelToken::new(), None, |_| {}).expect("answer");
        // The member's count drops when its stream's last event has gone
        // out, which may trail the collector by a moment: wait for it, so
        // the next choice sees one in flight on the held member, none on
        // the other.
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while pool.outstanding() != [1, 0] {
            assert!(
                std::time::Instant::now() < deadline,
                "{:?}",
                pool.outstanding()
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        // Round robin would hand the third to the held member; least
        // outstanding hands it to the idle one.
        let third = pool.predict(request()).expect("third");
        assert_eq!(
            pool.outstanding(),
            [1, 1],
            "the third went to the idle member"
        );
        collect(third, &CancelToken::new(), Some(deadline), |_| {}).expect("answered");
        release.store(true, Ordering::SeqCst);
        collect(held, &CancelToken::new(), None, |_| {}).expect("answer");
    }

    #[test]
    fn requests_go_to_the_least_busy_member() {
        let release = Arc::new(AtomicBool::new(false));
        let pool = EnginePool::new(vec![
            Arc::new(Held(release.clone())),
            Arc::new(Held(release.clone())),
            Arc::new(Held(release.clone())),
        ])
        .expect("pool");
        let streams: Vec<_> = (0..3)
            .map(|_| pool.predict(request()).expect("stream"))
            .collect();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while pool.outstanding() != [1, 1, 1] {
            assert!(
                std::time::Instant::now() < deadline,
                "{:?}",
                pool.outstanding()
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        release.store(true, Ordering::SeqCst);
        for s in streams {
            collect(s, &CancelToken::new(), None, |_| {}).expect("answer");
        }
        while pool.outstanding() != [0, 0, 0] {
            assert!(
                std::time::Instant::now() < deadline,
                "{:?}",
                pool.outstanding()
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}
