//! A tiny model2vec static model, written to disk by the test that needs it: a WordLevel
//! `tokenizer.json`, an `embeddings` matrix in `model.safetensors` and a `config.json`.
//!
//! Real models (minishlab/potion-base-8M: 8M parameters, 256 dimensions, ~30 MB) have
//! the same three files; this one has a handful of words, so tests get real vectors from
//! the real loading code in milliseconds and without a download.

use safetensors::tensor::{Dtype, TensorView};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;

/// `[UNK]` and then these words, one row each.
pub const VOCABULARY: &[&str] = &[
    "parse", "header", "input", "fn", "sql", "query", "user", "database", "escape", "string",
    "test", "config",
];

/// Write the model into `dir` with vectors of `dimensions` values. Word `i` (1-based, `[UNK]`
/// is row 0) gets a vector peaked at column `i % dimensions`, so texts sharing words are
/// similar and unrelated ones are not.
pub fn write(dir: &Path, dimensions: usize) {
    std::fs::create_dir_all(dir).expect("model dir");
    let mut vocab = BTreeMap::new();
    vocab.insert("[UNK]".to_string(), 0u32);
    for (i, word) in VOCABULARY.iter().enumerate() {
        vocab.insert(
            (*word).to_string(),
            u32::try_from(i + 1).expect("small vocabulary"),
        );
    }
    let tokenizer = json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [
            {"id": 0, "content": "[UNK]", "single_word": false, "lstrip": false,
             "rstrip": false, "normalized": false, "special": true}
        ],
        "normalizer": {"type": "Lowercase"},
        "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": null,
        "decoder": null,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"}
    });
    std::fs::write(dir.join("tokenizer.json"), tokenizer.to_string()).expect("tokenizer.json");

    let rows = VOCABULARY.len() + 1;
    let mut matrix = vec![0.0_f32; rows * dimensions];
    for row in 0..rows {
        for column in 0..dimensions {
            let peak = if column == row % dimensions { 1.0 } else { 0.0 };
            // A little of every column too, so no two rows are orthogonal by accident.
            matrix[row * dimensions + column] = peak + 0.05 * ((row + column) % 3) as f32;
        }
    }
    let bytes: Vec<u8> = matrix.iter().flat_map(|v| v.to_le_bytes()).collect();
    let view = TensorView::new(Dtype::F32, vec![rows, dimensions], &bytes).expect("tensor");
    let data = safetensors::serialize([("embeddings", view)], &None).expect("safetensors");
    std::fs::write(dir.join("model.safetensors"), data).expect("model.safetensors");

    let config = json!({"model_type": "model2vec", "normalize": true, "hidden_dim": dimensions});
    std::fs::write(dir.join("config.json"), config.to_string()).expect("config.json");
}
