//! Questions an execution's client answers later instead of at once.
//!
//! A client of the 2026-07-28 era cannot be sent a request (the revision
//! has no server-to-client requests), and a client that runs `execute` as
//! a task is not on the line while it runs. In both cases what a
//! downstream server asks (an elicitation, a sampling request, `roots/list`,
//! an approval) is parked here as an `inputRequests` entry; the client sees
//! it in an `input_required` answer (MRTR) or in `tasks/get`, and answers
//! with `inputResponses` on its retry or with `tasks/update`. The script
//! meanwhile sits in its `await`: the pending call is a host future, so
//! nothing has to be saved or restored.

#![expect(
    deprecated,
    reason = "sampling and roots are deprecated in MCP 2026-07-28 (SEP-2577) but are what downstream servers of both eras still ask"
)]

use std::collections::BTreeMap;
use std::sync::Mutex;

use rmcp::ErrorData;
use rmcp::model::{
    ClientResult, CreateMessageResult, ElicitResult, ErrorCode as RpcCode, InputRequest,
    InputRequests, InputResponses, ListRootsResult, ServerRequest,
};
use serde_json::Value;
use tokio::sync::{oneshot, watch};

/// The open questions of one execution.
pub struct Questions {
    open: Mutex<Open>,
    /// Bumped on every change, so a waiter never misses one.
    version: watch::Sender<u64>,
}

#[derive(Default)]
struct Open {
    /// Keys are never reused within an execution (the spec asks keys to be
    /// unique over a task's life): `q1`, `q2`, …
    next: u64,
    waiting: BTreeMap<String, Waiting>,
}

struct Waiting {
    request: InputRequest,
    answer: oneshot::Sender<Value>,
}

impl Default for Questions {
    fn default() -> Self {
        Questions {
            open: Mutex::default(),
            version: watch::Sender::new(0),
        }
    }
}

impl Questions {
    fn lock(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn bump(&self) {
        self.version.send_modify(|v| *v += 1);
    }

    /// The questions waiting for an answer, by key.
    pub fn pending(&self) -> InputRequests {
        self.lock()
            .waiting
            .iter()
            .map(|(key, w)| (key.clone(), w.request.clone()))
            .collect()
    }

    /// Hands `responses` to the questions they answer; keys that match no
    /// open question are ignored, as the spec says (a retry may repeat an
    /// answer already taken). Returns how many were taken.
    pub fn answer(&self, responses: InputResponses) -> usize {
        let mut taken = 0;
        let mut open = self.lock();
        for (key, value) in responses {
            if let Some(w) = open.waiting.remove(&key) {
                taken += usize::from(w.answer.send(value).is_ok());
            }
        }
        drop(open);
        if taken > 0 {
            self.bump();
        }
        taken
    }

    /// A receiver that sees every later change.
    pub fn watch(&self) -> watch::Receiver<u64> {
        self.version.subscribe()
    }

    fn put(&self, request: InputRequest) -> (String, oneshot::Receiver<Value>) {
        let (tx, rx) = oneshot::channel();
        let mut open = self.lock();
        open.next += 1;
        let key = format!("q{}", open.next);
        open.waiting.insert(
            key.clone(),
            Waiting {
                request,
                answer: tx,
            },
        );
        drop(open);
        self.bump();
        (key, rx)
    }

    fn withdraw(&self, key: &str) {
        if self.lock().waiting.remove(key).is_some() {
            self.bump();
        }
    }

    /// Parks `request` until the client answers it (or `asker` gives up),
    /// and converts the answer to what the asker expects.
    pub(super) async fn ask(
        &self,
        request: ServerRequest,
        asker: &mut oneshot::Sender<Result<ClientResult, ErrorData>>,
    ) -> Option<Result<ClientResult, ErrorData>> {
        let (kind, input) = match request {
            ServerRequest::ElicitRequest(r) => (Kind::Elicit, InputRequest::Elicitation(r)),
            ServerRequest::CreateMessageRequest(r) => {
                (Kind::Sample, InputRequest::CreateMessage(r))
            }
            ServerRequest::ListRootsRequest(r) => (Kind::Roots, InputRequest::ListRoots(r)),
            _ => {
                return Some(Err(ErrorData::new(
                    RpcCode::METHOD_NOT_FOUND,
                    "quickforge relays only elicitation, sampling and roots/list to a client that answers later",
                    None,
                )));
            }
        };
        let (key, answer) = self.put(input);
        tokio::select! {
            answer = answer => Some(match answer {
                Ok(value) => kind.convert(value),
                Err(_) => Err(ErrorData::internal_error("the question was dropped", None)),
            }),
            () = asker.closed() => {
                self.withdraw(&key);
                None
            }
        }
    }
}

/// What was asked, to read the answer as.
#[derive(Clone, Copy)]
enum Kind {
    Elicit,
    Sample,
    Roots,
}

impl Kind {
    fn convert(self, value: Value) -> Result<ClientResult, ErrorData> {
        let bad = |what: &str, e: serde_json::Error| {
            ErrorData::invalid_params(
                format!("the client's answer is not a valid {what} result: {e}"),
                None,
            )
        };
        match self {
            Kind::Elicit => serde_json::from_value::<ElicitResult>(value)
                .map(ClientResult::ElicitResult)
                .map_err(|e| bad("elicitation", e)),
            Kind::Sample => serde_json::from_value::<CreateMessageResult>(value)
                .map(|r| ClientResult::CreateMessageResult(Box::new(r)))
                .map_err(|e| bad("sampling", e)),
            Kind::Roots => serde_json::from_value::<ListRootsResult>(value)
                .map(ClientResult::ListRootsResult)
                .map_err(|e| bad("roots/list", e)),
        }
    }
}
