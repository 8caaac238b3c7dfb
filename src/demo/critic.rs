//! The demo's built-in critic (`the-loop demo-critic PROMPT_FILE`, hidden): it stands
//! where a real critic CLI would — reads the review material from `{promptFile}`,
//! "thinks" for a moment so the spinner shows, and prints one JSON result with a short
//! review and usage, in the shape a `json` critic answers (SPEC §9.4). Its findings
//! name the lines the diff added (`path:line: …`, SPEC §21.3), so they land in the
//! Critics pane and on their lines in the diff view. No model is called, and the
//! review says so.

use serde_json::{Value, json};

/// What the review material holds, as far as a diff tells.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Material {
    pub lines: usize,
    pub files: Vec<String>,
    pub added: usize,
    pub removed: usize,
    /// Each added line's file and line number on the new side.
    pub added_at: Vec<(String, u32)>,
}

/// Reads a unified diff (or any text) for the numbers the review quotes.
pub fn examine(prompt: &str) -> Material {
    let mut m = Material {
        lines: prompt.lines().count(),
        ..Material::default()
    };
    // The new side's next line number in the current hunk.
    let mut next: Option<u32> = None;
    for line in prompt.lines() {
        if let Some(rest) = line.strip_prefix("diff --git a/") {
            let file = rest.split(" b/").next().unwrap_or(rest).to_string();
            if !m.files.contains(&file) {
                m.files.push(file);
            }
            next = None;
        } else if let Some(rest) = line.strip_prefix("@@ ") {
            next = new_start(rest);
        } else if line.starts_with('+') && !line.starts_with("+++") {
            m.added += 1;
            if let (Some(n), Some(file)) = (next, m.files.last()) {
                m.added_at.push((file.clone(), n));
                next = Some(n + 1);
            }
        } else if line.starts_with('-') && !line.starts_with("---") {
            m.removed += 1;
        } else if line.starts_with(' ') {
            next = next.map(|n| n + 1);
        }
    }
    m
}

/// `c` of a hunk header's `-a,b +c,d @@`.
fn new_start(header: &str) -> Option<u32> {
    let plus = header.split_whitespace().find(|w| w.starts_with('+'))?;
    plus[1..].split(',').next()?.parse().ok()
}

/// The review text: the figures of the material, then canned findings.
pub fn review(prompt: &str) -> String {
    let m = examine(prompt);
    let mut text = String::from(
        "Demo critic: a canned review, no model was called. In real use a critic is an agent CLI (claude, codex, …) run once over the same material.\n\n",
    );
    if m.files.is_empty() {
        text.push_str(&format!(
            "Read {} lines of review material; it holds no diff, so there is nothing to check line by line.\n",
            m.lines
        ));
    } else {
        text.push_str(&format!(
            "Read {} lines of review material: {} ({} added, {} removed).\n\n",
            m.lines,
            match m.files.len() {
                1 => format!("1 file changed, {}", m.files[0]),
                n => format!("{n} files changed, {}", m.files.join(", ")),
            },
            m.added,
            m.removed
        ));
        text.push_str("Findings:\n");
        // Anchored to the first and the last line the diff added.
        let (first, last) = (m.added_at.first(), m.added_at.last());
        let at = |place: Option<&(String, u32)>| {
            place.map_or(String::new(), |(file, line)| format!("{file}:{line}: "))
        };
        text.push_str(&format!(
            "{}warning: The change is small and focused, but it changes what this line says: check every caller.\n\
             {}No test covers this yet: add one for an attempt far past the cap.\n\n\
             Verdict: changes requested (demo).\n",
            at(first),
            at(last),
        ));
    }
    text
}

/// The critic's stdout: `result`, token `usage` (estimated at four characters a token)
/// and a zero cost.
pub fn result_json(prompt: &str) -> Value {
    let text = review(prompt);
    let tokens = |s: &str| s.chars().count().div_ceil(4);
    json!({
        "type": "result",
        "result": text,
        "usage": {
            "input_tokens": tokens(prompt),
            "output_tokens": tokens(&text),
        },
        "total_cost_usd": 0.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIFF: &str = "diff --git a/src/retry.rs b/src/retry.rs
index 1..2 100644
--- a/src/retry.rs
+++ b/src/retry.rs
@@ -1,3 +1,3 @@
-pub fn backoff_ms(attempt: u32, base_ms: u64) -> u64 {
-    base_ms.saturating_mul(1 << attempt.min(20))
+pub fn backoff_ms(attempt: u32, base_ms: u64, cap_ms: u64) -> u64 {
+    base_ms.saturating_mul(1 << attempt.min(20)).min(cap_ms)
 }
";

    #[test]
    fn a_diff_is_counted() {
        let m = examine(DIFF);
        assert_eq!(m.files, ["src/retry.rs"]);
        assert_eq!((m.added, m.removed), (2, 2));
        assert!(review(DIFF).contains("1 file changed, src/retry.rs (2 added, 2 removed)"));
        assert_eq!(
            m.added_at,
            [
                ("src/retry.rs".to_string(), 1),
                ("src/retry.rs".to_string(), 2)
            ]
        );
    }

    #[test]
    fn its_findings_name_the_lines_the_diff_added() {
        let text = review(DIFF);
        let named = crate::critic::findings::named(&text, None);
        let places: Vec<(&str, u64)> = named.iter().map(|n| (n.path.as_str(), n.line)).collect();
        assert_eq!(places, [("src/retry.rs", 1), ("src/retry.rs", 2)], "{text}");
        assert_eq!(
            named[0].severity,
            crate::critic::findings::Severity::Warning
        );
    }

    #[test]
    fn material_without_a_diff_is_said_to_be_so() {
        let text = review("just words\nand more");
        assert!(text.contains("2 lines"), "{text}");
        assert!(text.contains("no diff"), "{text}");
        assert!(!text.contains("Findings"), "{text}");
    }

    #[test]
    fn the_result_reads_as_a_json_critic_envelope() {
        let out = result_json(DIFF).to_string();
        let reading = crate::critic::envelope::read_json(&out);
        let (output, usage) = (reading.output.unwrap(), reading.usage);
        assert!(!reading.reported_error);
        assert!(
            output.starts_with("Demo critic: a canned review"),
            "{output}"
        );
        assert!(usage.present);
        assert_eq!(
            usage.input_tokens,
            Some(DIFF.chars().count().div_ceil(4) as u64)
        );
        assert_eq!(usage.cost_usd, Some(0.0));
    }
}
