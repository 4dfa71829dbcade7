//! IAM for the Lambda-path tests. moto accepts every call from anyone, so a function whose
//! role in template.yaml lacks a permission its code needs passes every test and fails in
//! AWS. Here each emulated function reaches moto through a [`PolicyProxy`] that enforces
//! the function's own role, read from the template ([`Policy`]), and the SQS event source
//! mappings receive and delete under that role too, as Lambda's do.

mod policy;
mod proxy;
mod request;

pub use policy::{Policy, Stack, parameters_from_environment};
pub use proxy::PolicyProxy;
pub use request::Names;

/// What an SQS event source mapping calls with the function's role (AWS: "Lambda
/// execution role permissions" for Amazon SQS).
pub const EVENT_SOURCE_ACTIONS: [&str; 3] = [
    "sqs:ReceiveMessage",
    "sqs:DeleteMessage",
    "sqs:GetQueueAttributes",
];

/// The roles of one emulated stack's functions, each ready to be enforced.
pub struct Roles {
    template: serde_norway::Value,
    stack: Stack,
    names: std::sync::Arc<Names>,
    /// moto's endpoint.
    upstream: String,
}

impl Roles {
    pub fn new(
        template: &serde_norway::Value,
        stack: Stack,
        names: Names,
        upstream: &str,
    ) -> Roles {
        Roles {
            template: template.clone(),
            stack,
            names: std::sync::Arc::new(names),
            upstream: upstream.to_string(),
        }
    }

    /// The role of `function` (a logical id).
    pub fn policy(&self, function: &str) -> Policy {
        Policy::of_function(&self.template, function, &self.stack)
    }

    /// An endpoint enforcing `function`'s role.
    pub async fn proxy(&self, function: &str) -> PolicyProxy {
        PolicyProxy::start(self.policy(function), self.names.clone(), &self.upstream).await
    }

    /// An SQS client that calls through `proxy`, under its role.
    pub async fn sqs_client(proxy: &PolicyProxy) -> aws_sdk_sqs::Client {
        let config = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
        let config = aws_sdk_sqs::config::Builder::from(&config)
            .endpoint_url(&proxy.url)
            .build();
        aws_sdk_sqs::Client::from_conf(config)
    }
}
