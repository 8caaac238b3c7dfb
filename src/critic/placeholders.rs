//! Critic placeholders (SPEC §9.2): a closed set, substituted inside the single argv
//! element that mentions them by the one substitution ([`crate::substitute`]); unset is
//! the empty string. A value never splits an element or adds one — the child gets it as
//! bytes of that one argument, and no shell ever sees it.

use crate::substitute::{self, Missing};

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
    fn table(&self) -> [(&'static str, Option<&str>); 6] {
        [
            ("{prompt}", self.prompt.as_deref()),
            ("{promptFile}", self.prompt_file.as_deref()),
            ("{model}", self.model.as_deref()),
            ("{workItem}", self.work_item.as_deref()),
            ("{specDir}", self.spec_dir.as_deref()),
            ("{cwd}", self.cwd.as_deref()),
        ]
    }
}

/// The tokens in `arg` outside [`KNOWN`].
pub fn unknown(arg: &str) -> Vec<&str> {
    substitute::unknown(arg, &KNOWN)
}

/// Each element of `args` substituted: the result has exactly as many elements.
pub fn substitute_all(args: &[String], values: &Values) -> Vec<String> {
    substitute::argv(args, &values.table(), Missing::Empty)
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

    fn substitute(template: &str, values: &Values) -> String {
        let out = substitute_all(&[template.to_string()], values);
        assert_eq!(out.len(), 1, "one element in, one out");
        out.concat()
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
    fn finds_unknown_tokens() {
        assert_eq!(
            unknown("{prompt}{sessionId}{Prompt}"),
            vec!["{sessionId}", "{Prompt}"]
        );
        assert!(unknown("{promptFile} {\"json\": true} {cwd}{specDir}").is_empty());
    }
}
