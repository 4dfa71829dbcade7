//! The deployed stack, emulated: template.yaml's tables and queues in moto, its secrets in
//! moto's Secrets Manager, its three functions under [`LambdaFunction`] with the
//! environment the template gives them, and its two SQS event source mappings played by
//! [`EventSourceMapping`]. GitHub and the LLM are the HTTP fakes.
//!
//! Everything a test needs to know about the stack is read from template.yaml (binary
//! names, timeouts, memory, batch sizes, variable names) or from the resources themselves
//! (queue visibility timeouts, redrive policies), so a template change is tested, not
//! shadowed by a copy of its numbers here.

use crate::fake_github::FakeGitHub;
use crate::fake_llm::FakeLlm;
use crate::iam::{self, PolicyProxy, Roles};
use crate::lambda_apigw;
use crate::lambda_emulator::{FunctionConfig, LambdaFunction, Outcome};
use crate::lambda_esm::EventSourceMapping;
pub use crate::lambda_template::{Template, root};
use aws_sdk_sqs::types::QueueAttributeName;
use parley_store::dynamo::{DynamoStore, TableNames};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Fails (never skips) without moto, like the other DynamoDB/SQS tests: `scripts/test.sh`
/// starts it and sets AWS_ENDPOINT_URL.
pub fn require_moto() {
    assert!(
        std::env::var_os("AWS_ENDPOINT_URL").is_some(),
        "AWS_ENDPOINT_URL is not set: start moto (scripts/test.sh does it, or scripts/moto.sh for one run)"
    );
}

/// The stack's AWS resources in moto, under a stack name of their own.
pub struct Resources {
    /// The Globals environment as the template wires it: table names, queue URLs and
    /// literals (`PARLEY_STORE=dynamodb`, …), as `parley tables create` resolves them.
    pub globals: Vec<(String, String)>,
    /// Logical id to table name, queue URL, and each one's ARN; the region and account
    /// the ARNs name.
    pub tables: BTreeMap<String, String>,
    pub queues: BTreeMap<String, String>,
    pub arns: BTreeMap<String, String>,
    pub region: String,
    pub account: String,
    pub sqs: aws_sdk_sqs::Client,
    pub dynamodb: aws_sdk_dynamodb::Client,
    pub secrets: aws_sdk_secretsmanager::Client,
}

impl Resources {
    /// Create template.yaml's tables and queues with `parley tables create` (the code the
    /// operator runs against an emulator, called in-process).
    pub async fn provision(stack_name: &str) -> Resources {
        require_moto();
        let config = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
        let created =
            parley_cli::tables::create(&root().join("template.yaml"), stack_name, &config)
                .await
                .unwrap_or_else(|err| panic!("parley tables create: {err:#}"));
        let sqs = aws_sdk_sqs::Client::new(&config);
        let dynamodb = aws_sdk_dynamodb::Client::new(&config);
        let mut arns = BTreeMap::new();
        for (id, name) in &created.tables {
            let arn = dynamodb
                .describe_table()
                .table_name(name)
                .send()
                .await
                .expect("describe a created table")
                .table
                .and_then(|t| t.table_arn)
                .expect("a table has an ARN");
            arns.insert(id.clone(), arn);
        }
        for (id, url) in &created.queues {
            let arn = queue_attribute(&sqs, url, QueueAttributeName::QueueArn)
                .await
                .expect("a queue has an ARN");
            arns.insert(id.clone(), arn);
        }
        // arn:aws:service:region:account:…
        let any_arn: Vec<String> = arns
            .values()
            .next()
            .map(|a| a.split(':').map(str::to_string).collect())
            .unwrap_or_default();
        Resources {
            globals: created.variables,
            tables: created.tables,
            queues: created.queues,
            arns,
            region: any_arn.get(3).cloned().unwrap_or_default(),
            account: any_arn.get(4).cloned().unwrap_or_default(),
            sqs,
            dynamodb,
            secrets: aws_sdk_secretsmanager::Client::new(&config),
        }
    }

    /// A Globals variable.
    pub fn var(&self, name: &str) -> String {
        self.globals
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("the template's Globals have no {name}"))
    }

    /// A new secret; returns its ARN.
    pub async fn create_secret(&self, name: &str, value: &str) -> String {
        self.secrets
            .create_secret()
            .name(name)
            .secret_string(value)
            .send()
            .await
            .expect("create the secret in moto")
            .arn
            .expect("a new secret has an ARN")
    }

    /// The DynamoDB store on the stack's tables, for assertions on what the functions
    /// wrote.
    pub fn store(&self) -> DynamoStore {
        let tables = TableNames::from_lookup(|name| {
            self.globals
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        });
        DynamoStore::new(self.dynamodb.clone(), tables)
    }

    /// Visible (waiting) messages in a queue, by its URL.
    pub async fn depth(&self, queue_url: &str) -> u64 {
        queue_attribute(
            &self.sqs,
            queue_url,
            QueueAttributeName::ApproximateNumberOfMessages,
        )
        .await
        .and_then(|n| n.parse().ok())
        .unwrap_or_default()
    }

    /// `maxReceiveCount` of the redrive policy of the queue whose URL is in Globals
    /// variable `queue_var`.
    pub async fn max_receive_count(&self, queue_var: &str) -> u32 {
        let policy: Value = queue_attribute(
            &self.sqs,
            &self.var(queue_var),
            QueueAttributeName::RedrivePolicy,
        )
        .await
        .and_then(|p| serde_json::from_str(&p).ok())
        .unwrap_or_else(|| panic!("{queue_var} has no redrive policy"));
        match &policy["maxReceiveCount"] {
            Value::Number(n) => n.as_u64().unwrap_or(0) as u32,
            Value::String(s) => s.parse().unwrap_or(0),
            other => panic!("maxReceiveCount: {other}"),
        }
    }

    /// Every message in a queue (a dead-letter queue, typically), received and left
    /// there: `(body, attributes)`.
    pub async fn peek(&self, queue_url: &str) -> Vec<(String, Value)> {
        let output = self
            .sqs
            .receive_message()
            .queue_url(queue_url)
            .max_number_of_messages(10)
            .visibility_timeout(0)
            .message_system_attribute_names(aws_sdk_sqs::types::MessageSystemAttributeName::All)
            .send()
            .await
            .expect("receive from the queue");
        output
            .messages
            .unwrap_or_default()
            .into_iter()
            .map(|m| {
                let attributes: serde_json::Map<String, Value> = m
                    .attributes
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k.as_str().to_string(), Value::String(v)))
                    .collect();
                (m.body.unwrap_or_default(), Value::Object(attributes))
            })
            .collect()
    }
}

/// One attribute of the queue at `url`.
async fn queue_attribute(
    sqs: &aws_sdk_sqs::Client,
    url: &str,
    name: QueueAttributeName,
) -> Option<String> {
    sqs.get_queue_attributes()
        .queue_url(url)
        .attribute_names(name.clone())
        .send()
        .await
        .expect("queue attributes")
        .attributes?
        .remove(&name)
}

/// The ARNs of the stack's secrets, as the functions receive them.
#[derive(Debug, Clone)]
pub struct SecretArns {
    pub webhook_secret: String,
    pub private_key: String,
    pub llm_api_key: String,
    /// With an embeddings endpoint: its key.
    pub embeddings_api_key: Option<String>,
}

/// What a test changes about the stack it starts.
pub struct StackOptions {
    /// template.yaml, as the test may have changed it.
    pub template: Template,
    /// An OpenAI-compatible embeddings endpoint (`EMBEDDINGS_BASE_URL`, its key in
    /// Secrets Manager) and its vector size; without one, retrieval is lexical only.
    pub embeddings: Option<(String, usize)>,
}

impl Default for StackOptions {
    fn default() -> Self {
        StackOptions {
            template: Template::load(),
            embeddings: None,
        }
    }
}

/// The whole stack: resources, secrets, the three functions and both event source
/// mappings, pointed at the fakes.
pub struct LambdaStack {
    pub resources: Resources,
    pub secret_arns: SecretArns,
    /// The webhook secret's value (GitHub signs with it).
    pub webhook_secret: String,
    pub webhook: Arc<LambdaFunction>,
    pub conversation_worker: Arc<LambdaFunction>,
    pub review_worker: Arc<LambdaFunction>,
    pub conversations: EventSourceMapping,
    pub reviews: EventSourceMapping,
    /// The review worker's second mapping, on the embedding queue (with embeddings).
    pub embeddings: Option<EventSourceMapping>,
    /// Each function's endpoint for AWS, enforcing its role (webhook, conversation
    /// worker, review worker).
    roles: Vec<PolicyProxy>,
    /// The functions' logs and scratch files.
    pub dir: tempfile::TempDir,
}

impl LambdaStack {
    /// Provision a fresh stack (its own tables, queues and secrets) and set up its
    /// functions; no process starts before the first invocation.
    pub async fn start(github: &FakeGitHub, llm: &FakeLlm) -> LambdaStack {
        LambdaStack::start_with(github, llm, StackOptions::default()).await
    }

    /// [`LambdaStack::start`] as `options` say.
    pub async fn start_with(
        github: &FakeGitHub,
        llm: &FakeLlm,
        options: StackOptions,
    ) -> LambdaStack {
        require_moto();
        let StackOptions {
            template,
            embeddings,
        } = options;
        let binaries = crate::serve_process::workspace_binaries();
        let name = format!(
            "parley-e2e-{}",
            &uuid::Uuid::new_v4().simple().to_string()[..10]
        );
        let resources = Resources::provision(&name).await;

        // The template's secrets: the webhook secret from a parameter, the App key stored
        // by the operator after the first deploy, the LLM key an existing secret.
        let webhook_secret = format!("whsec-{}", uuid::Uuid::new_v4().simple());
        let secret_arns = SecretArns {
            webhook_secret: resources
                .create_secret(&format!("{name}-WebhookSecret"), &webhook_secret)
                .await,
            private_key: resources
                .create_secret(
                    &format!("{name}-PrivateKeySecret"),
                    &crate::clients::app_key(),
                )
                .await,
            llm_api_key: resources
                .create_secret(&format!("{name}-LlmApiKey"), LLM_API_KEY)
                .await,
            embeddings_api_key: match embeddings {
                Some(_) => Some(
                    resources
                        .create_secret(&format!("{name}-EmbeddingsApiKey"), "embeddings-key")
                        .await,
                ),
                None => None,
            },
        };

        // Globals: what `parley tables create` wired, plus the template's parameters.
        let mut parameters = vec![
            ("RUST_LOG", "info".to_string()),
            ("GITHUB_APP_ID", "12345".to_string()),
            ("GITHUB_APP_SLUG", "parley".to_string()),
            ("GITHUB_API_URL", github.url.clone()),
            ("LLM_PROVIDER", "anthropic".to_string()),
            ("LLM_MODEL", crate::clients::MODEL.to_string()),
            ("LLM_BASE_URL", llm.url.clone()),
            // The template gives the functions the queues' own maxReceiveCount.
            (
                "PARLEY_MAX_RECEIVE",
                resources
                    .max_receive_count("PARLEY_REVIEW_QUEUE_URL")
                    .await
                    .to_string(),
            ),
        ];
        parameters.extend(match &embeddings {
            Some((url, dimensions)) => [
                ("EMBEDDINGS_PROVIDER", "openai".to_string()),
                ("EMBEDDINGS_MODEL", "text-embedding-3-small".to_string()),
                ("EMBEDDINGS_DIMENSIONS", dimensions.to_string()),
                ("EMBEDDINGS_BASE_URL", url.clone()),
            ]
            .to_vec(),
            // Retrieval without vectors: lexical only.
            None => [
                ("EMBEDDINGS_PROVIDER", "none".to_string()),
                (
                    "EMBEDDINGS_MODEL",
                    "amazon.titan-embed-text-v2:0".to_string(),
                ),
                ("EMBEDDINGS_DIMENSIONS", "512".to_string()),
            ]
            .to_vec(),
        });
        let mut globals = resources.globals.clone();
        globals.extend(parameters.iter().map(|(k, v)| (k.to_string(), v.clone())));
        // Not the template's: what makes the AWS SDK reach moto instead of AWS.
        for name in [
            "AWS_ENDPOINT_URL",
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_REGION",
            "AWS_DEFAULT_REGION",
        ] {
            if let Ok(value) = std::env::var(name) {
                globals.push((name.to_string(), value));
            }
        }
        for variable in template.global_variables() {
            let wired = globals.iter().any(|(k, _)| *k == variable);
            // Set only when their parameter is (`!If … AWS::NoValue`).
            let optional = [
                "PARLEY_MENTION_ALIASES",
                "PARLEY_SECRETS_REVISION",
                "EMBEDDINGS_BASE_URL",
                "PARLEY_MONTHLY_BUDGET_USD",
            ];
            assert!(
                wired || optional.contains(&variable.as_str()),
                "template.yaml sets {variable} on every function; wire it in lambda_stack.rs"
            );
        }

        let dir = tempfile::tempdir().expect("tempdir");
        let function = |logical_id: &str, own: Vec<(&str, String)>| {
            let (binary, config) = template.function(logical_id);
            for variable in template.function_variables(logical_id) {
                // Set only when its parameter is (`!If … AWS::NoValue`).
                let optional = variable == "EMBEDDINGS_API_KEY";
                assert!(
                    optional || own.iter().any(|(k, _)| *k == variable),
                    "template.yaml sets {variable} on {logical_id}; wire it in lambda_stack.rs"
                );
            }
            let mut env = globals.clone();
            env.extend(own.into_iter().map(|(k, v)| (k.to_string(), v)));
            (binaries.join(binary), config, env)
        };
        let webhook = function(
            "WebhookFunction",
            vec![("GITHUB_WEBHOOK_SECRET", secret_arns.webhook_secret.clone())],
        );
        let mut worker_secrets = vec![
            ("GITHUB_PRIVATE_KEY", secret_arns.private_key.clone()),
            ("LLM_API_KEY", secret_arns.llm_api_key.clone()),
            // The template's archive cache, in this stack's own directory (as each
            // function's /tmp is its own).
            ("PARLEY_SNAPSHOT_CACHE_BYTES", "805306368".to_string()),
            (
                "PARLEY_SNAPSHOT_DIR",
                dir.path().join("snapshots").display().to_string(),
            ),
        ];
        if let Some(arn) = &secret_arns.embeddings_api_key {
            worker_secrets.push(("EMBEDDINGS_API_KEY", arn.clone()));
        }
        let conversation_worker = function("ConversationWorkerFunction", worker_secrets.clone());
        let review_worker = function("ReviewWorkerFunction", worker_secrets);

        // Each function reaches moto under its own role from the template.
        let environment: Vec<(String, String)> =
            [&webhook.2, &conversation_worker.2, &review_worker.2]
                .into_iter()
                .flatten()
                .cloned()
                .collect();
        let roles = roles(&template, &resources, &secret_arns, &environment);
        let (webhook, webhook_role) = start(&roles, "WebhookFunction", webhook, dir.path()).await;
        let (conversation_worker, conversation_role) = start(
            &roles,
            "ConversationWorkerFunction",
            conversation_worker,
            dir.path(),
        )
        .await;
        let (review_worker, review_role) =
            start(&roles, "ReviewWorkerFunction", review_worker, dir.path()).await;

        let conversations = EventSourceMapping::new(
            Roles::sqs_client(&conversation_role).await,
            resources.sqs.clone(),
            &resources.var("PARLEY_CONVERSATION_QUEUE_URL"),
            template.batch_size("ConversationWorkerQueueMapping"),
            conversation_worker.clone(),
        )
        .await;
        let reviews = EventSourceMapping::new(
            Roles::sqs_client(&review_role).await,
            resources.sqs.clone(),
            &resources.var("PARLEY_REVIEW_QUEUE_URL"),
            template.batch_size("ReviewWorkerQueueMapping"),
            review_worker.clone(),
        )
        .await;
        let embeddings = match embeddings {
            Some(_) => Some(
                EventSourceMapping::new(
                    Roles::sqs_client(&review_role).await,
                    resources.sqs.clone(),
                    &resources.var("PARLEY_EMBEDDING_QUEUE_URL"),
                    template.batch_size("ReviewWorkerEmbeddingQueueMapping"),
                    review_worker.clone(),
                )
                .await,
            ),
            None => None,
        };
        LambdaStack {
            resources,
            secret_arns,
            webhook_secret,
            webhook,
            conversation_worker,
            review_worker,
            conversations,
            reviews,
            embeddings,
            roles: vec![webhook_role, conversation_role, review_role],
            dir,
        }
    }

    /// A delivery as GitHub sends it, through API Gateway to the webhook function, signed
    /// with the webhook secret. Returns the status and body the function answered.
    pub async fn deliver(&self, event: &str, delivery: &str, payload: &Value) -> (u16, String) {
        self.deliver_signed(&self.webhook_secret.clone(), event, delivery, payload)
            .await
    }

    /// [`LambdaStack::deliver`] signed with `secret`.
    pub async fn deliver_signed(
        &self,
        secret: &str,
        event: &str,
        delivery: &str,
        payload: &Value,
    ) -> (u16, String) {
        let body = serde_json::to_vec(payload).expect("encode the payload");
        let signature = crate::sign(secret, &body);
        let request = lambda_apigw::http_api_request(
            "POST",
            "/webhook",
            &[
                ("Content-Type", "application/json"),
                ("User-Agent", "GitHub-Hookshot/e2e"),
                ("X-GitHub-Event", event),
                ("X-GitHub-Delivery", delivery),
                ("X-Hub-Signature-256", &signature),
            ],
            &body,
        );
        let outcome = self.webhook.invoke(&request).await;
        self.assert_within_roles();
        match outcome {
            Outcome::Response(response) => lambda_apigw::status_and_body(&response),
            other => panic!(
                "the webhook function failed: {other:?}\n{}",
                self.webhook.logs()
            ),
        }
    }

    /// Run both event source mappings until both queues are empty (failed messages are
    /// made visible again at once, as if their visibility timeout had run out), at most
    /// `max_polls` polls each.
    pub async fn drain(&self, max_polls: usize) {
        // A conversation job can enqueue a review (`@parley review`), a review can ask
        // for a lost one and both for embeddings: twice round is enough.
        for _ in 0..2 {
            self.conversations.drain(max_polls).await;
            self.reviews.drain(max_polls).await;
            if let Some(embeddings) = &self.embeddings {
                embeddings.drain(max_polls).await;
            }
        }
        self.assert_within_roles();
    }

    /// What the functions (or their event source mappings) asked AWS for and their roles
    /// refused, one line each; taken, so that the end of the test does not fail on them.
    pub fn take_refusals(&self) -> Vec<String> {
        self.roles
            .iter()
            .flat_map(PolicyProxy::take_refusals)
            .collect()
    }

    /// Fails the test if any function (or its event source mapping) asked AWS for
    /// something its role in template.yaml does not allow: in AWS that call would fail.
    /// Also run when the stack is dropped, so every Lambda-path test checks it.
    pub fn assert_within_roles(&self) {
        let refusals: Vec<String> = self.roles.iter().flat_map(PolicyProxy::refusals).collect();
        assert!(
            refusals.is_empty(),
            "template.yaml does not allow what the functions did:\n{}\n{}",
            refusals.join("\n"),
            self.logs()
        );
    }

    /// Every authorisation `function` (0 webhook, 1 conversation worker, 2 review
    /// worker) needed so far, as `action on ARN`.
    pub fn asked(&self, function: usize) -> Vec<String> {
        self.roles[function].asked()
    }

    /// All three functions' logs, for failure messages.
    pub fn logs(&self) -> String {
        [
            &self.webhook,
            &self.conversation_worker,
            &self.review_worker,
        ]
        .iter()
        .map(|f| format!("--- {} ---\n{}", f.name(), f.logs()))
        .collect::<Vec<_>>()
        .join("\n")
    }

    pub fn log_dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for LambdaStack {
    fn drop(&mut self) {
        // Not while unwinding: a second panic would abort and hide the first.
        if !std::thread::panicking() {
            self.assert_within_roles();
        }
    }
}

/// What the template's intrinsics resolve to in this stack, and the names its requests
/// use, for the functions' roles.
fn roles(
    template: &Template,
    resources: &Resources,
    secrets: &SecretArns,
    environment: &[(String, String)],
) -> Roles {
    let functions = [
        "WebhookFunction",
        "ConversationWorkerFunction",
        "ReviewWorkerFunction",
    ];
    let mut refs: BTreeMap<String, String> = resources
        .tables
        .iter()
        .chain(&resources.queues)
        .map(|(id, v)| (id.clone(), v.clone()))
        .collect();
    refs.insert("WebhookSecret".into(), secrets.webhook_secret.clone());
    refs.insert("PrivateKeySecret".into(), secrets.private_key.clone());
    let stack = iam::Stack {
        region: resources.region.clone(),
        account: resources.account.clone(),
        parameters: iam::parameters_from_environment(template.yaml(), &functions, environment),
        refs,
        arns: resources.arns.clone(),
    };
    let arn = |id: &String| resources.arns.get(id).cloned().unwrap_or_default();
    let names = iam::Names {
        tables: resources
            .tables
            .iter()
            .map(|(id, name)| (name.clone(), arn(id)))
            .collect(),
        queues: resources
            .queues
            .iter()
            .map(|(id, url)| (url.clone(), arn(id)))
            .collect(),
        secrets: BTreeMap::new(),
    };
    let upstream = std::env::var("AWS_ENDPOINT_URL").expect("moto's endpoint");
    Roles::new(template.yaml(), stack, names, &upstream)
}

/// A function whose AWS endpoint enforces its role, and that endpoint.
async fn start(
    roles: &Roles,
    logical_id: &str,
    (binary, config, mut env): (PathBuf, FunctionConfig, Vec<(String, String)>),
    dir: &Path,
) -> (Arc<LambdaFunction>, PolicyProxy) {
    let proxy = roles.proxy(logical_id).await;
    for (key, value) in env.iter_mut() {
        if key == "AWS_ENDPOINT_URL" {
            value.clone_from(&proxy.url);
        }
    }
    let function = LambdaFunction::new(config, &binary, env, dir).await;
    (Arc::new(function), proxy)
}

/// The LLM API key the stack's secret holds.
pub const LLM_API_KEY: &str = "llm-key-from-secrets-manager";
