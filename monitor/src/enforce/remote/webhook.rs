//! `--approvals-webhook URL`: abm tells a service about each new question
//! by POSTing it, signed like every request of the endpoint (the service
//! checks `abm-signature` with the same secret), and the service answers
//! through the endpoint's `POST /answer`. A delivery that fails is tried
//! again a few times; the question stays open meanwhile and is denied at
//! `--confirm-timeout` if nobody answers.
use std::{
    collections::HashMap,
    sync::{atomic::Ordering, Arc},
    time::{Duration, Instant},
};

use serde_json::json;

use super::client::Remote;
use crate::enforce::Shared;

/// How often the open questions are looked at.
const TICK: Duration = Duration::from_millis(100);
/// Deliveries of one question before abm gives up on it.
const ATTEMPTS: u32 = 5;

/// Posts each new question of the run to `hook`; returns when the run
/// stops. `answer_url`: the endpoint the service answers through.
pub(crate) fn run(hook: Remote, answer_url: String, shared: Arc<Shared>) {
    // Request id -> (attempts so far, when to try next); u32::MAX: done.
    let mut sent: HashMap<u64, (u32, Instant)> = HashMap::new();
    while !shared.stop.load(Ordering::Relaxed) {
        let open = shared.pending_list();
        sent.retain(|id, _| open.iter().any(|p| p["id"].as_u64() == Some(*id)));
        for q in open {
            let Some(id) = q["id"].as_u64() else { continue };
            let (tries, next) = *sent.entry(id).or_insert((0, Instant::now()));
            if tries >= ATTEMPTS || Instant::now() < next {
                continue;
            }
            let body = json!({
                "event": "question",
                "answer_url": answer_url,
                "question": q,
            })
            .to_string();
            let result = hook
                .signed("POST", hook.path(), body.as_bytes())
                .and_then(|req| hook.send(&req));
            let done = match result {
                Ok((code, _)) if (200..300).contains(&code) => {
                    tracing::debug!("remote approvals: question {id} sent to {}", hook.url());
                    true
                }
                Ok((code, v)) => {
                    tracing::warn!(
                        "remote approvals: {} answered {code} to question {id}: {v}",
                        hook.url()
                    );
                    false
                }
                Err(e) => {
                    tracing::warn!("remote approvals: question {id}: {e:#}");
                    false
                }
            };
            let backoff = Duration::from_millis(500 << tries.min(4));
            sent.insert(
                id,
                if done {
                    (ATTEMPTS, Instant::now())
                } else {
                    (tries + 1, Instant::now() + backoff)
                },
            );
        }
        std::thread::sleep(TICK);
    }
}
