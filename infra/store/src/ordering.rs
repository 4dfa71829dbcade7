//! "Oldest first", defined once for both adapters.
//!
//! DynamoDB returns a partition in sort-key order (the finding id), SQLite in
//! whatever order its index yields; neither is creation order. Sorting the decoded
//! records here keeps the two identical, with the id as a tie-break so records created
//! in the same instant still come back in a stable order.

use parley_core::ports::{Finding, ReviewRun};

pub(crate) fn findings_oldest_first(findings: &mut [Finding]) {
    findings.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
}

pub(crate) fn runs_oldest_first(runs: &mut [ReviewRun]) {
    runs.sort_by(|a, b| (a.started_at, &a.head_sha).cmp(&(b.started_at, &b.head_sha)));
}
