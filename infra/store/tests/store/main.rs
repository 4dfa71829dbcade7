//! The store crate's integration tests, in one binary (one link instead of one per file).

mod common;
mod contract;
mod corpus;
mod dynamodb;
mod sqlite;
