//! Checking and normalising what a provider sent back: every adapter promises one finite,
//! L2-normalised vector of the configured size per text.

use parley_core::ports::EmbeddingError;

/// `vector` scaled to unit length, or why it cannot be a vector of `dimensions`.
///
/// OpenAI's and Titan's vectors arrive normalised already (the division by ~1.0 is
/// cheap); Ollama and llama.cpp return some models' vectors unnormalised, and cosine as a
/// plain dot product needs unit length.
pub fn normalised(mut vector: Vec<f32>, dimensions: usize) -> Result<Vec<f32>, EmbeddingError> {
    if vector.len() != dimensions {
        return Err(EmbeddingError::BadResponse(format!(
            "a vector of {} values, expected {dimensions}",
            vector.len()
        )));
    }
    if vector.iter().any(|v| !v.is_finite()) {
        return Err(EmbeddingError::BadResponse(
            "a vector with a non-finite value".into(),
        ));
    }
    let norm = vector
        .iter()
        .map(|v| f64::from(*v) * f64::from(*v))
        .sum::<f64>()
        .sqrt();
    if norm == 0.0 {
        return Err(EmbeddingError::BadResponse("an all-zero vector".into()));
    }
    for v in &mut vector {
        *v = (f64::from(*v) / norm) as f32;
    }
    Ok(vector)
}

/// Tokens when a provider does not report them: about four characters a token for
/// English and code, which is what cost estimates elsewhere assume too.
pub fn estimated_tokens(texts: &[String]) -> u64 {
    texts
        .iter()
        .map(|t| (t.chars().count() as u64).div_ceil(4))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_come_out_unit_length() {
        let v = normalised(vec![3.0, 4.0], 2).unwrap();
        assert!(
            (v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6,
            "{v:?}"
        );
    }

    #[test]
    fn wrong_size_zero_or_non_finite_is_garbage() {
        for (vector, dims) in [
            (vec![1.0, 0.0, 0.0], 2),
            (vec![0.0, 0.0], 2),
            (vec![f32::NAN, 1.0], 2),
            (vec![f32::INFINITY, 1.0], 2),
        ] {
            assert!(
                matches!(
                    normalised(vector.clone(), dims),
                    Err(EmbeddingError::BadResponse(_))
                ),
                "{vector:?}"
            );
        }
    }

    #[test]
    fn token_estimate_rounds_up() {
        assert_eq!(
            estimated_tokens(&["abcde".into(), "".into(), "ab".into()]),
            3
        );
    }
}
