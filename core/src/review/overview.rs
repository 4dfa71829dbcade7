//! What the change does, in a few sentences at the top of the review, so its reader
//! meets the findings with the change in mind (and a reviewer who skims learns what the
//! PR is for). One pass writes it, in the same reply as its findings: the correctness
//! pass where it runs, else the first chosen, so it costs some of that pass's output
//! tokens and no call of its own. `review.overview: false` leaves it out. It is the
//! model's words about user code: the summary cleans it with everything else it posts.

use crate::review::findings::PassResult;
use crate::review::prompts::SpecialistPrompt;

/// Asked of the pass that writes the overview, after its task.
pub const ASK: &str = "\n\nAlso give `\"overview\"` in the JSON, beside `\"findings\"`: two \
or three plain sentences on what this change does and how, for someone about to read it. \
Describe; do not judge, praise or repeat findings.";

/// The most characters of one part's overview kept: a model that writes an essay is cut
/// at its last sentence that fits.
const MAX_CHARS: usize = 700;

/// The pass that writes the overview, of those chosen to run.
pub fn writer(chosen: &[&'static SpecialistPrompt]) -> Option<&'static str> {
    chosen
        .iter()
        .find(|s| s.name == "correctness")
        .or(chosen.first())
        .map(|s| s.name)
}

/// Each part's overview, in part order: trimmed, on one line, cut to [`MAX_CHARS`];
/// parts whose writer failed or said nothing have none.
pub fn collect(results: &[PassResult]) -> Vec<String> {
    let mut written: Vec<(usize, String)> = results
        .iter()
        .filter_map(|r| Some((r.part, r.overview.as_deref()?)))
        .map(|(part, text)| (part, one_paragraph(text)))
        .filter(|(_, text)| !text.is_empty())
        .collect();
    written.sort_by_key(|(part, _)| *part);
    written.into_iter().map(|(_, text)| text).collect()
}

/// The summary's section for `overviews` (empty when there are none): one paragraph, or
/// one line a part where the diff was read in parts.
pub fn render(overviews: &[String]) -> String {
    match overviews {
        [] => String::new(),
        [one] => format!("\n\n**What this change does:** {one}"),
        parts => {
            let mut out = String::from("\n\n**What this change does**, part by part:\n");
            for text in parts {
                out.push_str(&format!("\n- {text}"));
            }
            out
        }
    }
}

/// `text` as one paragraph (a heading or a list a model wrote there would break the
/// summary's layout), cut at a sentence or a word within [`MAX_CHARS`].
fn one_paragraph(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() <= MAX_CHARS {
        return joined;
    }
    let cut: String = joined.chars().take(MAX_CHARS).collect();
    match cut.rfind(". ") {
        Some(at) if at > MAX_CHARS / 2 => cut[..=at].to_string(),
        _ => {
            let at = cut.rfind(' ').unwrap_or(cut.len());
            format!("{}…", &cut[..at])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::prompts::ALL;
    use std::time::Duration;

    fn result(part: usize, overview: Option<&str>) -> PassResult {
        PassResult {
            specialist: "correctness",
            part,
            outcome: Ok(Vec::new()),
            elapsed: Duration::ZERO,
            tools_read: Vec::new(),
            overview: overview.map(str::to_string),
        }
    }

    #[test]
    fn the_correctness_pass_writes_it_where_it_runs() {
        let by_name = |names: &[&str]| -> Vec<&'static SpecialistPrompt> {
            ALL.into_iter()
                .filter(|s| names.contains(&s.name))
                .collect()
        };
        assert_eq!(
            writer(&by_name(&["security", "correctness"])),
            Some("correctness")
        );
        assert_eq!(writer(&by_name(&["tests", "style"])), Some("tests"));
        assert_eq!(writer(&[]), None);
    }

    #[test]
    fn each_part_gives_one_paragraph_in_part_order() {
        let results = [
            result(1, Some("Second   part\n\n# adds a heading")),
            result(0, Some(" First part. ")),
            result(2, Some("   ")),
            result(3, None),
        ];
        let overviews = collect(&results);
        assert_eq!(overviews, ["First part.", "Second part # adds a heading"]);
        assert_eq!(
            render(&overviews),
            "\n\n**What this change does**, part by part:\n\n- First part.\n- Second part # adds a heading"
        );
        assert_eq!(
            render(&overviews[..1]),
            "\n\n**What this change does:** First part."
        );
        assert_eq!(render(&[]), "");
    }

    #[test]
    fn an_essay_is_cut_at_a_sentence_or_a_word() {
        let sentence = "This change moves the cache into the store. ";
        let essay = sentence.repeat(40);
        let cut = one_paragraph(&essay);
        assert!(cut.chars().count() <= MAX_CHARS, "{}", cut.len());
        assert!(cut.ends_with("store."), "{cut}");
        let words = "word ".repeat(400);
        let cut = one_paragraph(&words);
        assert!(cut.ends_with("word…"), "{cut}");
        assert!(cut.chars().count() <= MAX_CHARS + 1);
    }
}
