//! The rig every end-to-end test and bench stands on, built one way so that a scenario
//! differs from the next only in what it scripts.
//!
//! Two levels, because Parley runs two ways:
//! - [`Fakes`]: GitHub and the model, faked over HTTP on 127.0.0.1. Tests of a whole
//!   process (`parley serve`, the CLI, the Lambda functions) need nothing more: they
//!   point the process at the fakes with [`Fakes::env`] and let it open its own store.
//! - [`Rig`]: the fakes plus a store behind both its ports (SQLite, or DynamoDB on moto),
//!   the local queue, and the [`Services`] a worker is wired with, for tests that drive
//!   a handler in this process. The review and conversation harnesses, the retrieval and
//!   embedding worlds are a `Rig` with their own scripts on top.
//!
//! [`on_both_stores!`](crate::on_both_stores) runs each scenario once on each store.

use crate::fake_github::FakeGitHub;
use crate::fake_llm::FakeLlm;
use crate::stores::Backend;
use parley_core::ports::{CorpusStore, Embedder, Store};
use parley_core::services::Services;
use parley_queue::sqlite::{QueueSettings, SqliteQueue};
use std::path::Path;
use std::sync::Arc;

/// The organisation every scenario's repositories belong to.
pub const OWNER: &str = "octo-org";
/// Who opens the standard PRs.
pub const AUTHOR: &str = "alice";
/// The App's bot account, as GitHub names it on comments and reviews.
pub const BOT: &str = "parley[bot]";
/// Base of every standard PR the scenarios open.
pub const BASE: &str = "b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0";
/// Head of every standard PR the scenarios open.
pub const HEAD: &str = "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1";
/// `src/db.rs` of the standard PR: right-side lines 1-6, of which 2-4 are added (a query
/// built with `format!`).
pub const DB_PATCH: &str = "@@ -1,3 +1,6 @@\n use std::io;\n+pub fn find(id: &str) -> String {\n+    format!(\"SELECT * FROM users WHERE id = '{}'\", id)\n+}\n fn a() {}\n fn b() {}";
/// The hunk a review comment on [`DB_PATCH`]'s query quotes.
pub const SQL_HUNK: &str = "@@ -1,3 +1,6 @@\n use std::io;\n+pub fn find(id: &str) -> String {\n+    format!(\"SELECT * FROM users WHERE id = '{}'\", id)\n+}";

/// GitHub and the model, each a real HTTP server on 127.0.0.1.
pub struct Fakes {
    pub github: FakeGitHub,
    pub llm: FakeLlm,
}

impl Fakes {
    pub async fn start() -> Fakes {
        let (github, llm) = tokio::join!(FakeGitHub::start(), FakeLlm::start());
        Fakes { github, llm }
    }

    /// PR `pr` on `repo` by `author` at [`HEAD`], changing `src/db.rs` by [`DB_PATCH`].
    pub fn open_db_pull(&self, repo: &str, pr: u64, author: &str) {
        self.github.open_pull(
            repo,
            pr,
            (author, HEAD, BASE),
            &[("src/db.rs", "modified", DB_PATCH)],
        );
    }

    /// A model that answers every question with `text` and whose review passes find
    /// nothing, for tests about what carries the work rather than what the model says.
    pub fn answer_everything_with(&self, text: &str) {
        self.llm.default_reply(&crate::scripts::answer(text, None));
        crate::scripts::passes_find_nothing(&self.llm);
    }

    /// The variables an operator sets for `parley serve` (and, less the App's, for the
    /// CLI), pointed at the fakes, with the local store and queue in `db`.
    pub fn env(&self, db: &Path, secret: &str) -> Vec<(String, String)> {
        [
            ("GITHUB_WEBHOOK_SECRET", secret.to_string()),
            ("GITHUB_APP_SLUG", "parley".to_string()),
            ("GITHUB_APP_ID", "12345".to_string()),
            ("GITHUB_PRIVATE_KEY", crate::clients::app_key()),
            ("GITHUB_API_URL", self.github.url.clone()),
            ("LLM_PROVIDER", "anthropic".to_string()),
            ("LLM_BASE_URL", self.llm.url.clone()),
            ("LLM_API_KEY", "test-key".to_string()),
            ("LLM_MODEL", crate::clients::MODEL.to_string()),
            ("PARLEY_DB_PATH", db.display().to_string()),
            ("RUST_LOG", "info".to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }
}

/// The fakes, a store behind both its ports, and the local queue, for a handler driven in
/// this process. Fields are public so a scenario can script and inspect each part; it
/// derefs to its [`Fakes`], so `rig.github` and `rig.llm` are the fakes.
pub struct Rig {
    pub fakes: Fakes,
    pub store: Arc<dyn Store>,
    pub corpus: Arc<dyn CorpusStore>,
    pub queue: Arc<SqliteQueue>,
    /// Keeps a SQLite store's directory for as long as the rig lives.
    _dir: Option<tempfile::TempDir>,
}

impl Rig {
    /// Fresh fakes and a fresh store on `backend` (its own tables on moto).
    pub async fn start(backend: Backend) -> Rig {
        let (fakes, (store, corpus, dir)) =
            tokio::join!(Fakes::start(), crate::stores::open(backend));
        Rig::assemble(fakes, store, corpus, dir)
    }

    /// [`Rig::start`] on a store of the caller's (one that fails or counts on purpose);
    /// the corpus is a private in-memory SQLite store, as that store may not be one. `dir`
    /// keeps a file store's directory.
    pub async fn with_store(store: Arc<dyn Store>, dir: Option<tempfile::TempDir>) -> Rig {
        let corpus = Arc::new(
            parley_store::sqlite::SqliteStore::open_in_memory().expect("in-memory corpus store"),
        );
        Rig::assemble(Fakes::start().await, store, corpus, dir)
    }

    fn assemble(
        fakes: Fakes,
        store: Arc<dyn Store>,
        corpus: Arc<dyn CorpusStore>,
        dir: Option<tempfile::TempDir>,
    ) -> Rig {
        let queue = Arc::new(SqliteQueue::open_in_memory(QueueSettings::default()).expect("queue"));
        Rig {
            fakes,
            store,
            corpus,
            queue,
            _dir: dir,
        }
    }

    /// Every service a worker needs, as the Lambda and `parley serve` wire them, with no
    /// embedder (retrieval lexical only).
    pub fn services(&self) -> Services {
        self.services_with(None)
    }

    /// [`Rig::services`] with `embedder`.
    pub fn services_with(&self, embedder: Option<Arc<dyn Embedder>>) -> Services {
        crate::clients::services_with_retrieval(
            &self.github,
            &self.llm,
            self.store.clone(),
            self.queue.clone(),
            self.corpus.clone(),
            embedder,
        )
    }
}

/// A second worker on the same fakes with a SQLite store and corpus of its own: one
/// that never heard of what the first worker recorded (as after a worker died before
/// writing it down).
pub struct FreshWorker {
    pub store: Arc<dyn Store>,
    pub corpus: Arc<dyn CorpusStore>,
    pub services: Services,
    _dir: tempfile::TempDir,
}

impl Rig {
    /// See [`FreshWorker`].
    pub fn fresh_worker(&self) -> FreshWorker {
        let (store, dir) = crate::stores::sqlite();
        let corpus: Arc<dyn CorpusStore> = Arc::new(
            parley_store::sqlite::SqliteStore::open_in_memory().expect("in-memory corpus store"),
        );
        let queue = Arc::new(SqliteQueue::open_in_memory(QueueSettings::default()).expect("queue"));
        let services = crate::clients::services_with_retrieval(
            &self.github,
            &self.llm,
            store.clone(),
            queue,
            corpus.clone(),
            None,
        );
        FreshWorker {
            store,
            corpus,
            services,
            _dir: dir,
        }
    }
}

impl std::ops::Deref for Rig {
    type Target = Fakes;

    fn deref(&self) -> &Fakes {
        &self.fakes
    }
}

/// One test module per scenario, each run on SQLite and on DynamoDB (moto), on the
/// multi-threaded runtime the Lambda and `parley serve` use:
/// - `on_both_stores!(a, b)`: each scenario is an `async fn(Backend)`;
/// - `on_both_stores!(with Harness::start; a, b)`: each takes what
///   `Harness::start(backend)` builds (the path as seen from the calling module).
///
/// The tests are named `<scenario>::sqlite` and `<scenario>::dynamodb`.
#[macro_export]
macro_rules! on_both_stores {
    (with $start:path; $($name:ident),* $(,)?) => {$(
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name($start($crate::stores::Backend::Sqlite).await).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn dynamodb() {
                super::$name($start($crate::stores::Backend::Dynamo).await).await;
            }
        }
    )*};
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name($crate::stores::Backend::Sqlite).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn dynamodb() {
                super::$name($crate::stores::Backend::Dynamo).await;
            }
        }
    )*};
}
