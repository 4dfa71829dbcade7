//! An HTTP transport that lets one request reach the emulator at a time.
//!
//! Why: DynamoDB applies each conditional write atomically per item; moto does not. Its
//! server is threaded and checks a condition and then writes without a lock, so two
//! racing `UpdateItem`s on a new item can both pass `attribute_not_exists` (seen here:
//! 16 racing increments under ceiling 5 handed out `1` twice, about once in 30 runs).
//! That is a flaw of the emulator, not of the store, and it made the concurrency checks
//! flaky.
//!
//! Serialising *requests* restores DynamoDB's per-request atomicity and nothing more:
//! the racing tasks still interleave their requests freely, so a store that decided
//! "only once" with a read followed by a write (two requests) would still be caught.

use aws_sdk_dynamodb::config::{HttpClient, RuntimeComponents, SharedHttpClient};
use aws_smithy_http_client::tls::{Provider, rustls_provider::CryptoMode};
use aws_smithy_runtime_api::client::http::{
    HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::HttpRequest;
use std::sync::Arc;
use tokio::sync::Mutex;

#[derive(Debug, Clone)]
pub struct OneAtATime {
    inner: SharedHttpClient,
    gate: Arc<Mutex<()>>,
}

impl OneAtATime {
    /// The SDK's default client (hyper with rustls), behind the gate.
    pub fn new() -> Self {
        let inner = aws_smithy_http_client::Builder::new()
            .tls_provider(Provider::Rustls(CryptoMode::AwsLc))
            .build_https();
        Self {
            inner,
            gate: Arc::new(Mutex::new(())),
        }
    }
}

impl HttpClient for OneAtATime {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        SharedHttpConnector::new(GatedConnector {
            inner: self.inner.http_connector(settings, components),
            gate: Arc::clone(&self.gate),
        })
    }
}

#[derive(Debug)]
struct GatedConnector {
    inner: SharedHttpConnector,
    gate: Arc<Mutex<()>>,
}

impl HttpConnector for GatedConnector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let inner = self.inner.clone();
        let gate = Arc::clone(&self.gate);
        HttpConnectorFuture::new(async move {
            // Held until the response head arrives; moto has finished the operation by
            // then (it builds the whole response before sending any of it).
            let _turn = gate.lock().await;
            inner.call(request).await
        })
    }
}
