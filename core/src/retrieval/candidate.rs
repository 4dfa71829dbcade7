//! What retrieval ranks: stored documents and the caller's in-memory texts, in one shape.
//!
//! Learnings and guideline files are corpora too, but they are read fresh for every job
//! (from the memory partition and the base branch) and never stored as documents, so they
//! arrive here as text; the caller may bring their vectors when it has them.

use super::language::language_of;
use super::lexical::Terms;
use super::term_counts::TermCounts;
use crate::learning::record::Learning;
use crate::ports::{Corpus, Document, Occurrence, QuantizedVector};
use crate::repo::Guideline;
use std::collections::BTreeMap;
use time::OffsetDateTime;

/// The five bodies of knowledge retrieval searches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    Code,
    Finding,
    Thread,
    Learning,
    Guideline,
}

impl Source {
    pub const ALL: [Source; 5] = [
        Source::Code,
        Source::Finding,
        Source::Thread,
        Source::Learning,
        Source::Guideline,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Source::Code => "code",
            Source::Finding => "findings",
            Source::Thread => "threads",
            Source::Learning => "learnings",
            Source::Guideline => "guidelines",
        }
    }
}

impl From<Corpus> for Source {
    fn from(corpus: Corpus) -> Self {
        match corpus {
            Corpus::Code => Source::Code,
            Corpus::Finding => Source::Finding,
            Corpus::Thread => Source::Thread,
        }
    }
}

/// One rankable text with what a prompt and the provenance need to cite it.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub source: Source,
    /// Unique within its source: the document key, a learning id, `path#section`.
    pub key: String,
    pub text: String,
    pub path: Option<String>,
    pub language: Option<String>,
    pub function_context: Option<String>,
    pub attributes: BTreeMap<String, String>,
    /// Where a stored document was seen, oldest first as stored.
    pub occurrences: Vec<Occurrence>,
    pub vector: Option<QuantizedVector>,
    /// The text's term counts when the store kept them; lexical search reads these
    /// instead of tokenising the text.
    pub terms: Option<TermCounts>,
    /// For the recency boost. `None` for learnings and guidelines: they are the
    /// repository's current rules, whatever their age.
    pub updated_at: Option<OffsetDateTime>,
}

impl Candidate {
    /// A text with nothing known about it yet: no place, facts, vector or age. Callers
    /// name what they do know with struct update syntax.
    pub fn text(source: Source, key: &str, text: impl Into<String>) -> Self {
        Candidate {
            source,
            key: key.to_owned(),
            text: text.into(),
            path: None,
            language: None,
            function_context: None,
            attributes: BTreeMap::new(),
            occurrences: Vec::new(),
            vector: None,
            terms: None,
            updated_at: None,
        }
    }

    /// The PR a candidate is from: its newest occurrence (stored documents only).
    pub fn pr(&self) -> Option<u64> {
        self.newest_occurrence().map(|o| o.pr)
    }

    pub fn newest_occurrence(&self) -> Option<&Occurrence> {
        self.occurrences.iter().max_by_key(|o| (o.created_at, o.pr))
    }

    /// Whether every place this candidate was seen is PR `pr`: the PR being reviewed or
    /// discussed already has its own code in front of the model.
    pub fn only_from_pr(&self, pr: u64) -> bool {
        !self.occurrences.is_empty() && self.occurrences.iter().all(|o| o.pr == pr)
    }

    /// An active learning. Its scope and paths were already applied by the caller; here it
    /// is only ranked for relevance to the query.
    pub fn learning(learning: &Learning) -> Self {
        let mut attributes = BTreeMap::new();
        attributes.insert("kind".to_string(), learning.kind.name().to_string());
        attributes.insert("scope".to_string(), learning.scope.name());
        Candidate {
            attributes,
            ..Candidate::text(Source::Learning, &learning.id, learning.text.clone())
        }
    }

    /// A guideline file, one candidate per section (split at Markdown headings, long
    /// sections again at blank lines), so a query draws the relevant part of a long
    /// CLAUDE.md rather than all or nothing of it.
    pub fn guideline_sections(guideline: &Guideline) -> Vec<Self> {
        sections(&guideline.text, MAX_SECTION_CHARS)
            .into_iter()
            .enumerate()
            .map(|(index, text)| Candidate {
                path: Some(guideline.path.clone()),
                ..Candidate::text(
                    Source::Guideline,
                    &format!("{}#{}", guideline.path, index + 1),
                    text,
                )
            })
            .collect()
    }

    /// What BM25 reads of this candidate: its stored counts, or else its text.
    pub fn lexical_terms(&self) -> Terms<'_> {
        match &self.terms {
            Some(counts) => Terms::Counted(counts),
            None => Terms::Text(&self.text),
        }
    }

    pub fn with_vector(mut self, vector: QuantizedVector) -> Self {
        self.vector = Some(vector);
        self
    }
}

impl From<Document> for Candidate {
    fn from(doc: Document) -> Self {
        let language = doc.language.or_else(|| {
            doc.path
                .as_deref()
                .and_then(language_of)
                .map(str::to_string)
        });
        Candidate {
            source: doc.corpus.into(),
            key: doc.key,
            text: doc.text,
            path: doc.path,
            language,
            function_context: doc.function_context,
            attributes: doc.attributes,
            occurrences: doc.occurrences,
            vector: doc.vector,
            terms: doc.terms,
            updated_at: Some(doc.updated_at),
        }
    }
}

/// A guideline section longer than this is split again at blank lines.
const MAX_SECTION_CHARS: usize = 1200;

fn sections(text: &str, max_chars: usize) -> Vec<String> {
    let mut by_heading: Vec<String> = Vec::new();
    let mut in_code = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_code = !in_code;
        }
        if (!in_code && trimmed.starts_with('#')) || by_heading.is_empty() {
            by_heading.push(String::new());
        }
        if let Some(current) = by_heading.last_mut() {
            current.push_str(line);
            current.push('\n');
        }
    }
    let mut out = Vec::new();
    for section in by_heading {
        if section.chars().count() <= max_chars {
            out.push(section);
            continue;
        }
        let mut current = String::new();
        for paragraph in section.split("\n\n") {
            if !current.is_empty()
                && current.chars().count() + paragraph.chars().count() + 2 > max_chars
            {
                out.push(std::mem::take(&mut current));
            }
            if !current.is_empty() {
                current.push_str("\n\n");
            }
            current.push_str(paragraph);
        }
        out.push(current);
    }
    out.into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guidelines_split_at_headings_and_long_sections_at_paragraphs() {
        let guideline = Guideline {
            path: "CLAUDE.md".into(),
            text: "Intro line\n# Errors\nUse thiserror.\n```\n# not a heading\n```\n## Tests\nUnwrap is fine in tests.\n".into(),
        };
        let parts = Candidate::guideline_sections(&guideline);
        let texts: Vec<&str> = parts.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "Intro line",
                "# Errors\nUse thiserror.\n```\n# not a heading\n```",
                "## Tests\nUnwrap is fine in tests."
            ]
        );
        assert_eq!(parts[2].key, "CLAUDE.md#3");
        assert_eq!(parts[2].source, Source::Guideline);

        let long = format!("# Big\n{}\n\n{}", "a ".repeat(400), "b ".repeat(400));
        let split = sections(&long, 1200);
        assert_eq!(split.len(), 2, "{split:?}");
        assert!(split.iter().all(|s| s.chars().count() <= 1200));
    }
}
