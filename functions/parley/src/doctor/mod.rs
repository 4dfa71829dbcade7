//! `parley doctor`: every setting and dependency, checked for real, in one table.
//!
//! Each check does the smallest real thing that proves the dependency works — signs a JWT
//! and calls `GET /app`, mints an installation token, sends the LLM a one-word prompt,
//! reads the store — so an OK means it works, not merely that a variable is set. A WARN
//! works with a limit worth knowing (a model that never calls tools); only a FAIL fails.

mod gate;

use crate::manifest;
use parley_core::ports::github::{App, GitHub, GitHubError, Installation, RepoScope};
use parley_core::ports::llm::{LlmRequest, Message};
use parley_core::repo::{ConfigLoader, LoadedConfig};
use parley_github::{GitHubClient, GitHubConfig};
use parley_runtime::clients::Env;
use parley_runtime::{Settings, build_adapters, secrets};
use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, clap::Args)]
pub struct DoctorArgs {
    /// Also check the App's installation on this repository and its .parley.yml.
    #[arg(value_name = "OWNER/REPO")]
    pub repo: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Ok,
    /// Works, with a limit the detail names and says how to lift; never a failure.
    Warn,
    Fail,
    /// Not checked (nothing to check it with); never a failure.
    Skip,
}

#[derive(Debug, Clone)]
pub struct Check {
    pub name: &'static str,
    pub status: Status,
    /// What was found, or how to fix it.
    pub detail: String,
}

fn ok(name: &'static str, detail: impl Into<String>) -> Check {
    Check {
        name,
        status: Status::Ok,
        detail: detail.into(),
    }
}

fn fail(name: &'static str, detail: impl Into<String>) -> Check {
    Check {
        name,
        status: Status::Fail,
        detail: detail.into(),
    }
}

fn warn(name: &'static str, detail: impl Into<String>) -> Check {
    Check {
        name,
        status: Status::Warn,
        detail: detail.into(),
    }
}

fn skip(name: &'static str, detail: impl Into<String>) -> Check {
    Check {
        name,
        status: Status::Skip,
        detail: detail.into(),
    }
}

/// Print the table; exit 1 when anything failed.
pub async fn run(args: &DoctorArgs, env: &Env) -> ExitCode {
    parley_runtime::telemetry::init_cli(false);
    let checks = checks(args, env).await;
    print!("{}", table(&checks));
    if checks.iter().any(|c| c.status == Status::Fail) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

pub async fn checks(args: &DoctorArgs, env: &Env) -> Vec<Check> {
    let mut checks = vec![webhook_secret(env).await];
    let (app, github) = app(env);
    let mut setup = None;
    let mut found_app = None;
    let app = match (app, &github) {
        (check, Some(client)) if check.status == Status::Ok => match client.get_app().await {
            Ok(found) => {
                setup = Some(app_setup(&found));
                let said = format!(
                    "GET /app as the App: {}",
                    found.slug.as_deref().unwrap_or("(no slug)")
                );
                found_app = Some(found);
                ok("GitHub App", said)
            }
            Err(err) => fail(
                "GitHub App",
                format!(
                    "GET /app refused the App's JWT ({}): check GITHUB_APP_ID matches the key, \
                     and the host clock",
                    err.public_reason()
                ),
            ),
        },
        (check, _) => check,
    };
    let app_ok = app.status == Status::Ok;
    checks.push(app);
    checks.extend(setup);
    let github = github.filter(|_| app_ok);
    if let Some(client) = &github {
        checks.push(deliveries(client).await);
    }
    let target = Target::find(args, github.as_ref()).await;
    checks.push(installation(&target).await);
    checks.push(installation_setup(&target));
    checks.push(gate::merge_gate(&target, found_app.as_ref()).await);
    checks.extend(llm(env).await);
    checks.extend(store_and_queue(env).await);
    checks.push(repo_config(&target).await);
    checks
}

/// The repository a run names and the App's installation there, looked up once for the
/// four checks that read it.
enum Target<'a> {
    /// No repository named.
    None,
    /// One named, but no working App to look at it with.
    NoApp,
    /// Not `OWNER/REPO`.
    Malformed(&'a str),
    Found {
        repo: &'a str,
        owner: &'a str,
        name: &'a str,
        github: Arc<GitHubClient>,
        installed: Result<Installation, GitHubError>,
        /// `.parley.yml` from the default branch, read once for the checks that need it.
        config: tokio::sync::OnceCell<Arc<LoadedConfig>>,
    },
}

impl<'a> Target<'a> {
    async fn find(args: &'a DoctorArgs, github: Option<&Arc<GitHubClient>>) -> Target<'a> {
        let Some(repo) = args.repo.as_deref() else {
            return Target::None;
        };
        let Some(github) = github else {
            return Target::NoApp;
        };
        let Some((owner, name)) = repo.split_once('/') else {
            return Target::Malformed(repo);
        };
        Target::Found {
            repo,
            owner,
            name,
            github: github.clone(),
            installed: github.repo_installation(owner, name).await,
            config: tokio::sync::OnceCell::new(),
        }
    }

    /// The repository's settings (over its organisation's), read the first time a check
    /// asks; `None` where there is no installation to read them through.
    async fn config(&self) -> Option<Arc<LoadedConfig>> {
        let Target::Found {
            github,
            config,
            owner,
            name,
            installed: Ok(found),
            ..
        } = self
        else {
            return None;
        };
        let loaded = config
            .get_or_init(|| async {
                let loader =
                    ConfigLoader::new(github.clone() as Arc<dyn GitHub>, ConfigLoader::DEFAULT_TTL);
                loader
                    .load(&RepoScope::new(found.id, *owner, *name), "HEAD")
                    .await
            })
            .await;
        Some(loaded.clone())
    }

    /// The installation and what reads through it, or the row a check shows without them
    /// (`name`'s): only the installation token check fails for a missing installation or
    /// a malformed name, the others skip.
    fn installed(
        &self,
        name: &'static str,
    ) -> Result<(&'a str, RepoScope, &Arc<GitHubClient>, &Installation), Check> {
        match self {
            Target::None | Target::NoApp => Err(skip(
                name,
                "give OWNER/REPO (and a working App) to check it",
            )),
            Target::Malformed(repo) => Err(skip(name, format!("{repo:?} is not OWNER/REPO"))),
            Target::Found {
                repo,
                owner,
                name: repo_name,
                github,
                installed,
                ..
            } => match installed {
                Ok(found) => Ok((
                    repo,
                    RepoScope::new(found.id, *owner, *repo_name),
                    github,
                    found,
                )),
                Err(_) => Err(skip(name, "needs the App's installation on the repository")),
            },
        }
    }
}

/// The permissions and events the App asks for against those Parley uses (the
/// manifest's): an App created before Parley used one (merge queues, say) goes on
/// without it, and what needs it silently never happens.
fn app_setup(app: &App) -> Check {
    setup(
        "App permissions",
        (&app.permissions, &app.events),
        "add them in the App's settings (Permissions & events), then accept them on each \
         installation",
    )
}

/// What the installation on the repository has accepted, which lags what the App asks
/// for until the installation's owner accepts a new permission.
fn installation_setup(target: &Target<'_>) -> Check {
    const NAME: &str = "installation permissions";
    match target.installed(NAME) {
        Ok((_, _, _, found)) => setup(
            NAME,
            (&found.permissions, &found.events),
            "accept the App's new permissions on this installation (its owner's settings: \
             GitHub Apps, Configure)",
        ),
        Err(row) => row,
    }
}

/// `held` against the manifest's permissions and events: missing what reviews and
/// answers need fails; missing what only merge queues or organisation-wide learnings
/// need warns.
fn setup(
    name: &'static str,
    (permissions, events): (&BTreeMap<String, String>, &[String]),
    fix: &str,
) -> Check {
    const OPTIONAL: [&str; 3] = ["merge_queues", "members", "merge_group"];
    let level = |access: &str| match access {
        "read" => 1,
        "write" => 2,
        "admin" => 3,
        _ => 0,
    };
    let mut missing: Vec<(&str, String)> = manifest::PERMISSIONS
        .iter()
        .filter(|(permission, access, _)| {
            let has = permissions.get(*permission).map_or(0, |held| level(held));
            has < level(access)
        })
        .map(|(permission, access, why)| (*permission, format!("{permission}: {access} ({why})")))
        .collect();
    missing.extend(
        manifest::EVENTS
            .iter()
            .filter(|event| !events.iter().any(|held| held == *event))
            .map(|event| (*event, format!("the {event} event"))),
    );
    if missing.is_empty() {
        return ok(
            name,
            format!(
                "every permission and event Parley uses ({} and {})",
                manifest::PERMISSIONS.len(),
                manifest::EVENTS.len()
            ),
        );
    }
    let lacks: Vec<&str> = missing.iter().map(|(_, said)| said.as_str()).collect();
    let detail = format!("lacks {}: {fix}", lacks.join("; "));
    if missing
        .iter()
        .all(|(lacking, _)| OPTIONAL.contains(lacking))
    {
        warn(name, detail)
    } else {
        fail(name, detail)
    }
}

/// What GitHub recorded of its latest deliveries to Parley: the sweep for lost deliveries
/// reads the same listing, and a failed delivery is the first thing to look for when a
/// question went unanswered.
async fn deliveries(client: &GitHubClient) -> Check {
    const NAME: &str = "webhook deliveries";
    match client.list_webhook_deliveries(None).await {
        Ok(page) => {
            let failed = page.deliveries.iter().filter(|d| !d.taken()).count();
            let detail = format!(
                "GET /app/hook/deliveries: {} latest, {failed} failed (the sweep asks GitHub \
                 for lost ones again)",
                page.deliveries.len()
            );
            ok(NAME, detail)
        }
        Err(err) if err.is_absent() => fail(
            NAME,
            "this GitHub keeps no webhook delivery log for Apps (GET /app/hook/deliveries: \
             not found): lost deliveries cannot be asked for again; the sweep only warns \
             (turn it off: PARLEY_REDELIVERY_MINUTES=0, or RedeliverySchedule empty)",
        ),
        Err(err) => fail(
            NAME,
            format!(
                "GET /app/hook/deliveries failed ({}): lost deliveries cannot be asked for again",
                err.public_reason()
            ),
        ),
    }
}

async fn webhook_secret(env: &Env) -> Check {
    const NAME: &str = "webhook secret";
    match env("GITHUB_WEBHOOK_SECRET").filter(|v| !v.trim().is_empty()) {
        None => fail(
            NAME,
            "GITHUB_WEBHOOK_SECRET is not set: make one (openssl rand -hex 32) and give the \
             same value to the GitHub App",
        ),
        Some(value) if secrets::is_secret_arn(&value) => match secrets::resolve(value).await {
            Ok(secret) if secret.len() >= 16 => ok(NAME, "read from Secrets Manager"),
            Ok(_) => fail(
                NAME,
                "the secret in Secrets Manager is shorter than 16 characters",
            ),
            Err(err) => fail(
                NAME,
                format!("{err}: check the ARN and the role's secretsmanager:GetSecretValue"),
            ),
        },
        Some(value) if value.len() < 16 => fail(
            NAME,
            "GITHUB_WEBHOOK_SECRET is shorter than 16 characters: use openssl rand -hex 32",
        ),
        Some(_) => ok(NAME, "set"),
    }
}

/// The App's credentials, and a client when they are usable.
fn app(env: &Env) -> (Check, Option<Arc<GitHubClient>>) {
    const NAME: &str = "GitHub App";
    let config = match GitHubConfig::from_lookup(|name| env(name)) {
        Ok(config) => config,
        Err(err) => return (fail(NAME, err.to_string()), None),
    };
    if !config.has_credentials() {
        return (
            fail(
                NAME,
                "GITHUB_APP_ID and GITHUB_PRIVATE_KEY_FILE (or GITHUB_PRIVATE_KEY) are not set: \
                 create the App (parley app manifest) and download its private key",
            ),
            None,
        );
    }
    match GitHubClient::new(config) {
        Ok(client) => (ok(NAME, "credentials set"), Some(Arc::new(client))),
        Err(err) => (fail(NAME, err.to_string()), None),
    }
}

async fn installation(target: &Target<'_>) -> Check {
    const NAME: &str = "installation token";
    let (repo, owner, name, github, id) = match target {
        Target::None => {
            return skip(
                NAME,
                "give OWNER/REPO (parley doctor OWNER/REPO) to check it",
            );
        }
        Target::NoApp => return skip(NAME, "needs a working GitHub App first"),
        Target::Malformed(repo) => return fail(NAME, format!("{repo:?} is not OWNER/REPO")),
        Target::Found {
            repo,
            owner,
            name,
            github,
            installed,
            ..
        } => match installed {
            Ok(installation) => (*repo, *owner, *name, github, installation.id),
            Err(err) if err.is_absent() => {
                return fail(
                    NAME,
                    format!("the App is not installed on {repo}: install it from the App's page"),
                );
            }
            Err(err) => return fail(NAME, format!("GitHub: {}", err.public_reason())),
        },
    };
    // Reading a file mints the installation token first.
    match github
        .get_file_contents(&RepoScope::new(id, owner, name), ".parley.yml", "HEAD")
        .await
    {
        Ok(_) => ok(NAME, format!("installation {id} on {repo}")),
        Err(err) => fail(
            NAME,
            format!(
                "installation {id} could not read {repo} ({}): check the App's Contents permission",
                err.public_reason()
            ),
        ),
    }
}

/// The model answers; then whether it calls tools, once it does.
async fn llm(env: &Env) -> Vec<Check> {
    const NAME: &str = "LLM";
    if let Err(err) = parley_llm::LlmConfig::from_lookup(|name| env(name)) {
        return vec![fail(
            NAME,
            format!(
                "{err} (Ollama: LLM_PROVIDER=openai LLM_BASE_URL=http://localhost:11434/v1; `parley review` lists all three ways)"
            ),
        )];
    }
    let llm = match parley_runtime::clients::llm_from_env(env).await {
        Ok(llm) => llm,
        Err(err) => return vec![fail(NAME, err.to_string())],
    };
    let mut request = LlmRequest::new("", vec![Message::user("Reply with the word OK.")]);
    request.options.max_tokens = 8;
    request.options.timeout = Some(Duration::from_secs(60));
    let started = Instant::now();
    match llm.complete(&request).await {
        Ok(reply) => vec![
            ok(
                NAME,
                format!(
                    "{} answered in {} ms",
                    reply.model,
                    started.elapsed().as_millis()
                ),
            ),
            tools(llm.as_ref()).await,
        ],
        Err(err) => vec![fail(
            NAME,
            format!(
                "{} ({}): check LLM_PROVIDER, LLM_BASE_URL, LLM_API_KEY and that the server runs",
                llm.model(),
                err.public_reason()
            ),
        )],
    }
}

/// Whether the model calls a tool when told to: what lets a review read code beyond the
/// diff (a caller, a definition). A self-hosted server may refuse tools, or take them and
/// ignore them without a word; reviews then work from the static context alone (after a
/// few wasted turns of reading, for a server that ignores them), which is worth knowing
/// and fixing, never a failure.
async fn tools(llm: &dyn parley_core::ports::llm::Llm) -> Check {
    const NAME: &str = "LLM tools";
    const FIX: &str = "llama-cpp-python: start it with --chat_format chatml-function-calling; \
                       llama.cpp: --jinja; Ollama: a model with tool support";
    if !llm.supports_tools() {
        return skip(NAME, "this provider is not offered tools");
    }
    let mut request = LlmRequest::new(
        "",
        vec![Message::user(
            "Call the read_file tool with the path README.md. Do not answer in words.",
        )],
    );
    request.tools = parley_core::context::tools::specs();
    request.options.max_tokens = 128;
    request.options.timeout = Some(Duration::from_secs(60));
    match llm.complete(&request).await {
        Ok(reply) if !reply.tool_calls.is_empty() => ok(
            NAME,
            format!(
                "the model called {}: reviews and answers may read code beyond the diff",
                reply.tool_calls[0].name
            ),
        ),
        Ok(_) => warn(
            NAME,
            format!(
                "told to call a tool, the model answered in words: the server may ignore tools, \
                 or the model not use them; reviews read the static context alone ({FIX})"
            ),
        ),
        Err(err) => warn(
            NAME,
            format!(
                "the server refused a request with tools ({}): reviews read the static context \
                 alone ({FIX})",
                err.public_reason()
            ),
        ),
    }
}

async fn store_and_queue(env: &Env) -> Vec<Check> {
    let settings = match Settings::from_lookup(|name| env(name)) {
        Ok(settings) => settings,
        Err(err) => return vec![fail("store", err.to_string())],
    };
    let store_kind = format!("{:?}", settings.store).to_lowercase();
    let adapters = match build_adapters(&settings).await {
        Ok(adapters) => adapters,
        Err(err) => {
            return vec![fail(
                "store and queue",
                format!(
                    "{err}: check PARLEY_STORE/PARLEY_QUEUE, PARLEY_DB_PATH or the AWS settings"
                ),
            )];
        }
    };
    let store = match adapters.store.counter("doctor", "checks").await {
        Ok(_) => ok("store", format!("{store_kind}: read ok")),
        Err(err) => fail(
            "store",
            format!("{store_kind}: {err}: check the table names and credentials"),
        ),
    };
    let queue_kind = format!("{:?}", settings.queue).to_lowercase();
    let queue = match adapters
        .polling
        .dead_letters(parley_core::ports::QueueName::Review)
        .await
    {
        Ok(dead) => ok(
            "queue",
            format!(
                "{queue_kind}: reachable, {} dead-lettered review job(s)",
                dead.len()
            ),
        ),
        Err(err) => fail(
            "queue",
            format!("{queue_kind}: {err}: check the queue URLs and credentials"),
        ),
    };
    vec![store, queue]
}

async fn repo_config(target: &Target<'_>) -> Check {
    const NAME: &str = ".parley.yml";
    let repo = match target.installed(NAME) {
        Ok((repo, ..)) => repo,
        Err(row) => return row,
    };
    let Some(loaded) = target.config().await else {
        return skip(NAME, "needs the App's installation on the repository");
    };
    if loaded.warnings.is_empty() {
        let over = match &loaded.org {
            Some(org) => format!(", over {org}'s organisation settings"),
            None => String::new(),
        };
        ok(NAME, format!("{repo}: valid (or absent: defaults){over}"))
    } else {
        let warnings: Vec<String> = loaded.warnings.iter().map(ToString::to_string).collect();
        fail(NAME, format!("{repo}: {}", warnings.join("; ")))
    }
}

/// `CHECK  STATUS  DETAIL`, aligned.
pub fn table(checks: &[Check]) -> String {
    let width = checks
        .iter()
        .map(|c| c.name.len())
        .max()
        .unwrap_or(5)
        .max(5);
    let mut out = format!(
        "{:width$}  {:6}  {}\n",
        "CHECK", "STATUS", "DETAIL / HOW TO FIX"
    );
    for check in checks {
        let status = match check.status {
            Status::Ok => "OK",
            Status::Warn => "WARN",
            Status::Fail => "FAIL",
            Status::Skip => "SKIP",
        };
        out.push_str(&format!(
            "{:width$}  {:6}  {}\n",
            check.name, status, check.detail
        ));
    }
    out
}
