//! Vector search: cosine similarity of an f32 query against int8-quantised vectors,
//! scored in the worker over the candidate set (a brute-force scan: at the candidate
//! bounds Parley reads, a scan of 10,000 vectors of 256 dimensions is a few
//! milliseconds, see `docs/retrieval.md`, and needs no index to keep in step).
//!
//! Vectors of another model, or of another dimension, are skipped: they live in a
//! different space and their cosine with the query means nothing.

use super::lexical::{Hit, top};
use crate::ports::QuantizedVector;

/// Cosine similarity of the dequantised vector `values × scale` with `query`. `None`
/// when it is undefined: lengths differ, a zero vector, or a scale that is not a
/// positive finite number (corrupt data). The scale cancels out of the cosine but is
/// checked, since a bad one means the stored vector cannot be trusted.
pub fn cosine(values: &[i8], scale: f32, query: &[f32]) -> Option<f32> {
    if values.len() != query.len() || !(scale.is_finite() && scale > 0.0) {
        return None;
    }
    let (dot, norm) = dot_and_norm(values, query);
    let query_norm = query.iter().map(|q| q * q).sum::<f32>().sqrt();
    let denominator = norm.sqrt() * query_norm;
    (denominator > 0.0 && denominator.is_finite()).then(|| dot / denominator)
}

/// Rank `vectors` (a candidate's position and its vector, if any) by cosine with `query`,
/// keeping those of `model` with the query's dimension: the best `limit` with a positive
/// similarity, best first, ties by position.
pub fn rank<'a>(
    query: &[f32],
    model: &str,
    vectors: impl IntoIterator<Item = Option<&'a QuantizedVector>>,
    limit: usize,
) -> Vec<Hit> {
    let query_norm = query.iter().map(|q| q * q).sum::<f32>().sqrt();
    if query_norm == 0.0 || !query_norm.is_finite() || limit == 0 {
        return Vec::new();
    }
    let scores: Vec<f64> = vectors
        .into_iter()
        .map(|v| {
            v.filter(|v| v.model == model && v.values.len() == query.len())
                .filter(|v| v.scale.is_finite() && v.scale > 0.0)
                .and_then(|v| {
                    let (dot, norm) = dot_and_norm(&v.values, query);
                    let denominator = norm.sqrt() * query_norm;
                    (denominator > 0.0).then(|| f64::from(dot / denominator))
                })
                .unwrap_or(0.0)
        })
        .collect();
    top(scores, limit)
}

/// Σ v·q and Σ v², in eight lanes so the compiler can vectorise the loop (a single f32
/// accumulator is a serial dependency it may not reorder).
fn dot_and_norm(values: &[i8], query: &[f32]) -> (f32, f32) {
    let mut dot = [0f32; 8];
    let mut norm = [0f32; 8];
    let mut v_chunks = values.chunks_exact(8);
    let mut q_chunks = query.chunks_exact(8);
    for (v, q) in (&mut v_chunks).zip(&mut q_chunks) {
        for lane in 0..8 {
            let x = f32::from(v[lane]);
            dot[lane] += x * q[lane];
            norm[lane] += x * x;
        }
    }
    let mut d: f32 = dot.iter().sum();
    let mut n: f32 = norm.iter().sum();
    for (&v, &q) in v_chunks.remainder().iter().zip(q_chunks.remainder()) {
        let x = f32::from(v);
        d += x * q;
        n += x * x;
    }
    (d, n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quantize(model: &str, vector: &[f32]) -> QuantizedVector {
        QuantizedVector::quantize(model, vector)
    }

    fn normalised(v: &[f32]) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    #[test]
    fn cosine_of_quantised_vectors_is_close_to_the_exact_one() {
        let a = normalised(&[0.3, -0.2, 0.9, 0.1, 0.05, -0.4, 0.0, 0.7, 0.2]);
        let b = normalised(&[0.1, -0.3, 0.8, 0.3, 0.0, -0.1, 0.2, 0.5, 0.1]);
        let exact: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        let q = quantize("m", &a);
        let approx = cosine(&q.values, q.scale, &b).unwrap();
        assert!((approx - exact).abs() < 0.01, "{approx} vs {exact}");
        let own = cosine(&q.values, q.scale, &a).unwrap();
        assert!((own - 1.0).abs() < 0.001, "{own}");
    }

    #[test]
    fn undefined_cosines_are_none() {
        assert_eq!(cosine(&[1, 2], 0.1, &[1.0]), None);
        assert_eq!(cosine(&[0, 0], 0.1, &[1.0, 0.0]), None);
        assert_eq!(cosine(&[1, 0], f32::NAN, &[1.0, 0.0]), None);
        assert_eq!(cosine(&[1, 0], -1.0, &[1.0, 0.0]), None);
        assert_eq!(cosine(&[1, 0], 0.5, &[0.0, 0.0]), None);
    }

    #[test]
    fn ranking_skips_other_models_and_dimensions() {
        let query = normalised(&[1.0, 0.2, 0.0]);
        let near = quantize("m", &normalised(&[0.9, 0.3, 0.1]));
        let nearer = quantize("m", &normalised(&[1.0, 0.2, 0.01]));
        let other_model = quantize("other", &query);
        let other_dims = quantize("m", &normalised(&[1.0, 0.2]));
        let opposite = quantize("m", &normalised(&[-1.0, 0.0, 0.0]));
        let hits = rank(
            &query,
            "m",
            [
                Some(&near),
                None,
                Some(&other_model),
                Some(&nearer),
                Some(&other_dims),
                Some(&opposite),
            ],
            10,
        );
        let order: Vec<usize> = hits.iter().map(|h| h.index).collect();
        assert_eq!(
            order,
            [3, 0],
            "opposite (negative) and skipped ones are out"
        );
        assert!(hits[0].score > 0.99);
    }
}
