//! Sending one logical call: authentication, the retry loop, and decoding.
//!
//! Every operation goes through [`GitHubClient::send`], so headers, retries and error
//! mapping are the same for all of them. See `retry` for the rules it applies.

use crate::client::GitHubClient;
use crate::pagination::{next_link, same_origin_link};
pub(crate) use crate::request::{Auth, Call, Reply};
use crate::responses::{ErrorBody, decode, status_error};
use crate::retry::{Replay, rate_limit_wait};
use parley_core::ports::github::{GitHubError, Listing, PageLimit};
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use reqwest::{Method, StatusCode, Url};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::time::{Duration, Instant, SystemTime};

/// Why an attempt did not succeed.
enum Failure {
    Status {
        status: u16,
        headers: HeaderMap,
        body: ErrorBody,
    },
    Network {
        /// Whether the request may have reached GitHub.
        sent: bool,
        message: String,
    },
}

impl GitHubClient {
    /// Sends `call` until it succeeds or a retry rule says stop.
    pub(crate) async fn send(&self, call: &Call) -> Result<Reply, GitHubError> {
        let context = format!("{} {}", call.method, call.url.path());
        let started = Instant::now();
        let mut attempts = 0u32;
        let mut rate_limit_waited = Duration::ZERO;
        let mut token_refreshed = false;

        loop {
            attempts += 1;
            let credential = self.credential(call.auth).await?;
            let failure = match self.attempt(call, &credential).await? {
                Ok(reply) => return Ok(reply),
                Err(failure) => failure,
            };

            match failure {
                Failure::Status {
                    status: 401, body, ..
                } => {
                    // A cached token can be revoked early (App permissions changed,
                    // installation re-authorised): mint a new one once. A 401 with a fresh
                    // token or the JWT means the credentials themselves are wrong.
                    // A person's token cannot be re-minted: its 401 is final.
                    if let Auth::Installation(installation_id) = call.auth
                        && !token_refreshed
                        && self.is_app()
                    {
                        tracing::warn!(%context, installation_id, "401 from GitHub; minting a new installation token");
                        self.forget_token(installation_id, &credential).await;
                        token_refreshed = true;
                        attempts -= 1;
                        continue;
                    }
                    return Err(status_error(401, body, &context));
                }
                Failure::Status {
                    status,
                    headers,
                    body,
                } => {
                    if let Some(wait) =
                        rate_limit_wait(status, &headers, body.message(), SystemTime::now())
                    {
                        let within_budget =
                            rate_limit_waited + wait <= self.retry.rate_limit_budget;
                        if attempts >= self.retry.max_attempts || !within_budget {
                            tracing::warn!(%context, status, wait_s = wait.as_secs(), "GitHub rate limit outlasts the retry budget");
                            return Err(GitHubError::RateLimited {
                                retry_after: Some(wait),
                            });
                        }
                        tracing::warn!(%context, status, attempt = attempts, wait_ms = wait.as_millis() as u64, request_id = request_id(&headers), "GitHub rate limit; waiting");
                        tokio::time::sleep(wait).await;
                        rate_limit_waited += wait;
                        continue;
                    }
                    let error = status_error(status, body, &context);
                    if status < 500 {
                        return Err(error);
                    }
                    let may_replay = call.replay == Replay::Safe;
                    self.back_off_or_fail(error, may_replay, attempts, started, &context)
                        .await?;
                }
                Failure::Network { sent, message } => {
                    let error = GitHubError::Network(format!("{context}: {message}"));
                    let may_replay = !sent || call.replay == Replay::Safe;
                    self.back_off_or_fail(error, may_replay, attempts, started, &context)
                        .await?;
                }
            }
        }
    }

    /// Sleeps before the next attempt, or returns `error` when the call may not be
    /// replayed or its attempts or time are used up.
    async fn back_off_or_fail(
        &self,
        error: GitHubError,
        may_replay: bool,
        attempts: u32,
        started: Instant,
        context: &str,
    ) -> Result<(), GitHubError> {
        if !may_replay {
            tracing::warn!(%context, %error, "not retrying a write GitHub may have received");
            return Err(error);
        }
        if attempts >= self.retry.max_attempts {
            tracing::warn!(%context, %error, attempts, "giving up after the last attempt");
            return Err(error);
        }
        let delay = self.retry.backoff(attempts);
        if started.elapsed() + delay > self.retry.max_elapsed {
            tracing::warn!(%context, %error, attempts, "giving up: retry time budget spent");
            return Err(error);
        }
        tracing::warn!(%context, %error, attempt = attempts, delay_ms = delay.as_millis() as u64, "retrying GitHub call");
        tokio::time::sleep(delay).await;
        Ok(())
    }

    /// One HTTP exchange. The outer `Err` is a failure to even build the request.
    async fn attempt(
        &self,
        call: &Call,
        credential: &str,
    ) -> Result<Result<Reply, Failure>, GitHubError> {
        let mut authorization = HeaderValue::from_str(&format!("Bearer {credential}"))
            .map_err(|_| GitHubError::Config("credential is not a valid header value".into()))?;
        authorization.set_sensitive(true);

        let mut request = self
            .http
            .request(call.method.clone(), call.url.clone())
            .header(AUTHORIZATION, authorization);
        if let Some(body) = &call.body {
            request = request
                .header(CONTENT_TYPE, "application/json")
                .body(body.clone());
        }

        let response = match request.send().await {
            Ok(response) => response,
            Err(err) => {
                return Ok(Err(Failure::Network {
                    sent: !err.is_connect(),
                    message: err.without_url().to_string(),
                }));
            }
        };
        let status = response.status();
        let headers = response.headers().clone();
        let body = match response.bytes().await {
            Ok(body) => body.to_vec(),
            Err(err) => {
                return Ok(Err(Failure::Network {
                    sent: true,
                    message: err.without_url().to_string(),
                }));
            }
        };
        tracing::debug!(method = %call.method, path = call.url.path(), status = status.as_u16(), "GitHub call");
        parley_core::metrics::github_call(
            headers
                .get("x-ratelimit-remaining")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse().ok()),
        );

        if status.is_success() {
            Ok(Ok(Reply { headers, body }))
        } else {
            Ok(Err(failure_from(status, headers, &body)))
        }
    }

    pub(crate) async fn get_json<T: DeserializeOwned>(
        &self,
        auth: Auth,
        url: Url,
    ) -> Result<T, GitHubError> {
        let context = format!("GET {}", url.path());
        let reply = self.send(&Call::get(url, auth)).await?;
        decode(&reply.body, &context)
    }

    /// POST/PATCH a JSON body and decode the answer.
    pub(crate) async fn send_json<T: DeserializeOwned, B: Serialize + ?Sized>(
        &self,
        method: Method,
        auth: Auth,
        url: Url,
        body: &B,
        replay: Replay,
    ) -> Result<T, GitHubError> {
        let context = format!("{method} {}", url.path());
        let body = serde_json::to_vec(body)
            .map_err(|err| GitHubError::InvalidRequest(format!("{context}: {err}")))?;
        let reply = self
            .send(&Call {
                method,
                url,
                auth,
                body: Some(body),
                replay,
            })
            .await?;
        decode(&reply.body, &context)
    }

    /// GETs `url` and the pages its `Link` headers lead to, until `limit` or the last page.
    pub(crate) async fn get_paged<T: DeserializeOwned>(
        &self,
        auth: Auth,
        mut url: Url,
        limit: PageLimit,
    ) -> Result<Listing<T>, GitHubError> {
        let mut items: Vec<T> = Vec::new();
        if limit.max_items == 0 || limit.max_pages == 0 {
            return Ok(Listing {
                items,
                truncated: false,
            });
        }
        url.query_pairs_mut()
            .append_pair("per_page", &limit.per_page().to_string());
        let mut pages = 0usize;
        loop {
            let context = format!("GET {}", url.path());
            let reply = self.send(&Call::get(url, auth)).await?;
            pages += 1;
            let page: Vec<T> = decode(&reply.body, &context)?;
            let page_was_empty = page.is_empty();
            items.extend(page);
            let next = next_link(&reply.headers);
            if page_was_empty {
                // An empty page with a `next` link would otherwise page forever (up to the
                // cap) for nothing; GitHub never means that.
                return Ok(Listing {
                    items,
                    truncated: false,
                });
            }

            if items.len() >= limit.max_items {
                let truncated = items.len() > limit.max_items || next.is_some();
                items.truncate(limit.max_items);
                return Ok(Listing { items, truncated });
            }
            match next {
                None => {
                    return Ok(Listing {
                        items,
                        truncated: false,
                    });
                }
                Some(_) if pages >= limit.max_pages => {
                    return Ok(Listing {
                        items,
                        truncated: true,
                    });
                }
                Some(link) => url = same_origin_link(self.base.rest(), &link)?,
            }
        }
    }
}

fn failure_from(status: StatusCode, headers: HeaderMap, body: &[u8]) -> Failure {
    Failure::Status {
        status: status.as_u16(),
        headers,
        body: ErrorBody::parse(body),
    }
}

/// GitHub's id for the exchange, the one thing its support needs to trace a failure.
fn request_id(headers: &HeaderMap) -> &str {
    headers
        .get("x-github-request-id")
        .and_then(|value| value.to_str().ok())
        .unwrap_or("")
}
