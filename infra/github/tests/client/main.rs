//! The GitHub client against a fake GitHub serving GitHub's documented and recorded
//! responses. One test binary (modules below) keeps link time down.

mod support;

mod auth;
mod errors;
mod operations;
mod pagination;
mod retries;
