//! Critic placeholders (SPEC §9.2): a closed set, substituted inside the single argv
//! element that mentions them. A value never splits an element or adds one — the child
//! gets it as bytes of that one argument, and no shell ever sees it.

/// Every placeholder a critic's `args` may use.
pub const KNOWN: [&str; 6] = [
    "{prompt}",
    "{promptFile}",
    "{model}",
    "{workItem}",
    "{specDir}",
    "{cwd}",
];

/// The values of one run. `None` (unset) substitutes as the empty string.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Values {
    pub prompt: Option<String>,
    pub prompt_file: Option<String>,
    pub model: Option<String>,
    pub work_item: Option<String>,
    pub spec_dir: Option<String>,
    pub cwd: Option<String>,
}

impl Values {
    fn get(&self, placeholder: &str) -> Option<&str> {
        let value = match placeholder {
            "{prompt}" => &self.prompt,
            "{promptFile}" => &self.prompt_file,
            "{model}" => &self.model,
            "{workItem}" => &self.work_item,
            "{specDir}" => &self.spec_dir,
            "{cwd}" => &self.cwd,
            _ => return None,
        };
        Some(value.as_deref().unwrap_or(""))
    }
}

/// The `{name}` tokens in `arg`, known or not, in order. A token is an identifier in
/// braces, so JSON or other brace text in an argument (`{"a": 1}`) is not one.
pub fn tokens(arg: &str) -> impl Iterator<Item = &str> {
    let mut rest = arg;
    std::iter::from_fn(move || {
        loop {
            let start = rest.find('{')?;
            let after = &rest[start..];
            match token_at(after) {
                Some(len) => {
                    rest = &after[len..];
                    return Some(&after[..len]);
                }
                None => rest = &after[1..],
            }
        }
    })
}

/// The length of a `{identifier}` token at the start of `s`, if there is one.
fn token_at(s: &str) -> Option<usize> {
    let body = s.strip_prefix('{')?;
    let end = body.find('}')?;
    let name = &body[..end];
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    (first_ok && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')).then_some(end + 2)
}

/// The tokens in `arg` outside [`KNOWN`].
pub fn unknown(arg: &str) -> Vec<&str> {
    tokens(arg).filter(|t| !KNOWN.contains(t)).collect()
}

/// Whether any of `args` mentions `placeholder`.
pub fn mentions(args: &[String], placeholder: &str) -> bool {
    args.iter().any(|a| tokens(a).any(|t| t == placeholder))
}

/// Substitutes every known placeholder in one pass, so a value that itself contains
/// `{model}` (a prompt quoting a placeholder) is copied, never substituted again.
/// Unknown tokens are kept literally (validation rejects them before a run).
pub fn substitute(arg: &str, values: &Values) -> String {
    let mut out = String::with_capacity(arg.len());
    let mut rest = arg;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let after = &rest[start..];
        match token_at(after).and_then(|len| values.get(&after[..len]).map(|v| (len, v))) {
            Some((len, value)) => {
                out.push_str(value);
                rest = &after[len..];
            }
            None => {
                out.push('{');
                rest = &after[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Each element of `args` substituted: the result has exactly as many elements.
pub fn substitute_all(args: &[String], values: &Values) -> Vec<String> {
    args.iter().map(|a| substitute(a, values)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values() -> Values {
        Values {
            prompt: Some("review this".into()),
            prompt_file: Some("/tmp/p.txt".into()),
            model: Some("opus".into()),
            work_item: Some("github:octo/repo#15".into()),
            spec_dir: None,
            cwd: Some("/src/repo".into()),
        }
    }

    #[test]
    fn substitutes_inside_one_element() {
        let cases: &[(&str, &str)] = &[
            ("{prompt}", "review this"),
            ("--prompt={prompt}", "--prompt=review this"),
            ("{model}:{workItem}", "opus:github:octo/repo#15"),
            ("--file={promptFile}", "--file=/tmp/p.txt"),
            ("{cwd}/.git", "/src/repo/.git"),
            ("plain", "plain"),
            ("", ""),
            // Unset is empty, never the literal placeholder.
            ("--spec={specDir}", "--spec="),
            // Braces that are not placeholders stay.
            (r#"{"a": 1}"#, r#"{"a": 1}"#),
            ("{ prompt }", "{ prompt }"),
            ("{{prompt}}", "{review this}"),
            ("{prompt", "{prompt"),
            ("{unknown}", "{unknown}"),
        ];
        for (template, expected) in cases {
            assert_eq!(substitute(template, &values()), *expected, "{template}");
        }
    }

    #[test]
    fn hostile_values_stay_inside_one_argument() {
        let hostile = [
            "; rm -rf ~",
            "$(touch /tmp/pwned)",
            "`touch /tmp/pwned`",
            "two words\tand a tab",
            "line one\nline two\r\n",
            "'quoted' \"double\" \\ back",
            "a {model} inside the prompt",
            "| cat /etc/passwd > x &",
            "-rf",
        ];
        for prompt in hostile {
            let v = Values {
                prompt: Some(prompt.to_string()),
                ..values()
            };
            let args = vec!["--p".to_string(), "{prompt}".to_string(), "x".to_string()];
            let out = substitute_all(&args, &v);
            assert_eq!(out, vec!["--p", prompt, "x"], "{prompt:?}");
            let embedded = substitute("<{prompt}>", &v);
            assert_eq!(embedded, format!("<{prompt}>"));
        }
    }

    #[test]
    fn a_value_is_never_substituted_twice() {
        let v = Values {
            prompt: Some("{model} {cwd}".into()),
            ..values()
        };
        assert_eq!(substitute("{prompt}|{model}", &v), "{model} {cwd}|opus");
    }

    #[test]
    fn finds_tokens_and_unknown_ones() {
        assert_eq!(
            tokens("a {prompt} {x_1} {2x} {} {\"k\"} {cwd}").collect::<Vec<_>>(),
            vec!["{prompt}", "{x_1}", "{cwd}"]
        );
        assert_eq!(
            unknown("{prompt}{sessionId}{Prompt}"),
            vec!["{sessionId}", "{Prompt}"]
        );
        assert!(unknown("{promptFile} {\"json\": true}").is_empty());
        let args = vec!["--in".to_string(), "x{promptFile}".to_string()];
        assert!(mentions(&args, "{promptFile}"));
        assert!(!mentions(&args, "{prompt}"));
    }
}
