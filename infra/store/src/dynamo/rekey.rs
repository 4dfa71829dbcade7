//! Moving a repository's items from one key to another (name-keyed records adopted by
//! the repository's id: see `parley_core::tenancy`).
//!
//! DynamoDB cannot change a key in place: each item is written under its new key, only
//! where no item is there yet (one written under the new key meanwhile is newer and
//! wins), then the old one is deleted. A crash in between leaves both, and the next run
//! finishes the move; nothing is lost either way.

use super::items::{Item, conditional, s};
use super::{DynamoStore, MEMORY_RECORD};
use parley_core::ports::StoreError;
use parley_core::ports::store::keys;

impl DynamoStore {
    pub(super) async fn rekey_tables(&self, from: &str, to: &str) -> Result<u64, StoreError> {
        let old = keys::repo_scope_prefixes(from);
        let new = keys::repo_scope_prefixes(to);
        let mut moved = 0;
        for table in [&self.tables.findings, &self.tables.conversations] {
            let found = self
                .scan_prefixes(table, &old, None, "rekey_repository")
                .await?;
            let rewrite = |mut item: Item| {
                let pk = item.get("pk").and_then(|v| v.as_s().ok()).cloned();
                if let Some(pk) = pk
                    && let Some((index, prefix)) = old
                        .iter()
                        .enumerate()
                        .find(|(_, p)| pk.starts_with(p.as_str()))
                {
                    item.insert(
                        "pk".into(),
                        s(&format!("{}{}", new[index], &pk[prefix.len()..])),
                    );
                }
                rename_repo_attribute(&mut item, from, to);
                item
            };
            moved += self
                .move_items(table, found, rewrite, "rekey_repository")
                .await?;
        }
        Ok(moved + self.rekey_partition(from, to, "rekey_repository").await?)
    }

    /// Move memory partition `from` to `to`; a record's `repo` is rewritten only when it
    /// names `from` (organisation learnings name the repositories they were taught in).
    pub(super) async fn rekey_partition(
        &self,
        from: &str,
        to: &str,
        operation: &str,
    ) -> Result<u64, StoreError> {
        let found = self
            .query_partition(&self.tables.memory, from, "", operation)
            .await?;
        let rewrite = |mut item: Item| {
            item.insert("pk".into(), s(to));
            let record = item
                .get(MEMORY_RECORD)
                .and_then(|v| v.as_s().ok())
                .and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok());
            if let Some(mut record) = record
                && record.get("repo").and_then(|r| r.as_str()) == Some(from)
            {
                record["repo"] = serde_json::Value::String(to.to_owned());
                item.insert(MEMORY_RECORD.into(), s(&record.to_string()));
            }
            item
        };
        self.move_items(&self.tables.memory, found, rewrite, operation)
            .await
    }

    /// Documents of repository `from` to `to`.
    pub(super) async fn rekey_snippets(&self, from: &str, to: &str) -> Result<u64, StoreError> {
        let found = self
            .query_partition(&self.tables.snippets, from, "", "rekey_documents")
            .await?;
        let rewrite = |mut item: Item| {
            item.insert("pk".into(), s(to));
            rename_repo_attribute(&mut item, from, to);
            item
        };
        self.move_items(&self.tables.snippets, found, rewrite, "rekey_documents")
            .await
    }

    /// Write each item as `rewrite` makes it, where its new key is free, then delete the
    /// originals. Returns how many were written.
    async fn move_items(
        &self,
        table: &str,
        items: Vec<Item>,
        rewrite: impl Fn(Item) -> Item,
        operation: &str,
    ) -> Result<u64, StoreError> {
        let mut moved = 0;
        for item in &items {
            let answer = self
                .client
                .put_item()
                .table_name(table)
                .set_item(Some(rewrite(item.clone())))
                .condition_expression("attribute_not_exists(pk)")
                .send()
                .await;
            if conditional(answer, operation)?.is_some() {
                moved += 1;
            }
        }
        self.delete_keys(table, items, operation).await?;
        Ok(moved)
    }
}

/// Findings, review runs and documents name their repository in a `repo` attribute (the
/// findings' comment index keys on it).
fn rename_repo_attribute(item: &mut Item, from: &str, to: &str) {
    if item
        .get("repo")
        .and_then(|v| v.as_s().ok())
        .map(String::as_str)
        == Some(from)
    {
        item.insert("repo".into(), s(to));
    }
}
