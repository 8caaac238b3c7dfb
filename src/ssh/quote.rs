//! The one place an argv becomes a command line for a remote shell. ssh sends the far
//! side one string, which sshd runs as `$SHELL -c STRING` under the remote user's login
//! shell; every word is single-quoted so that shell runs exactly the argv given —
//! nothing expanded, split, globbed or redirected. A POSIX shell is assumed on the far
//! side; `the-loop hosts check` proves it by sending a hostile argv there and back.

/// Why an argv cannot be sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuoteError {
    #[error("nothing to run")]
    Empty,
    #[error("argument {index} holds a NUL byte, which no command line can carry")]
    Nul { index: usize },
}

/// `argv` as one POSIX shell command line whose words are exactly `argv`.
///
/// Each word is wrapped in single quotes, inside which a shell interprets nothing; a
/// single quote in a word closes the quote, adds an escaped quote and opens it again
/// (`it's` → `'it'\''s'`). The empty word becomes `''`.
pub fn command_line(argv: &[String]) -> Result<String, QuoteError> {
    if argv.is_empty() {
        return Err(QuoteError::Empty);
    }
    let mut line = String::new();
    for (index, word) in argv.iter().enumerate() {
        if word.contains('\0') {
            return Err(QuoteError::Nul { index });
        }
        if index > 0 {
            line.push(' ');
        }
        line.push('\'');
        line.push_str(&word.replace('\'', r"'\''"));
        line.push('\'');
    }
    Ok(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn strings(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    /// Runs `line` with `sh -c` (what sshd does with it) around `printf '%s\0'`, and
    /// reads back the words the shell passed.
    fn through_sh(argv: &[String]) -> Vec<String> {
        let mut full = strings(&["printf", "%s\\0"]);
        full.extend(argv.iter().cloned());
        let line = command_line(&full).unwrap();
        let out = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(&line)
            .output()
            .expect("run /bin/sh");
        assert!(out.status.success(), "{line:?}: {out:?}");
        let mut words: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .split('\0')
            .map(str::to_string)
            .collect();
        words.pop(); // after the last NUL
        words
    }

    #[test]
    fn words_are_single_quoted() {
        assert_eq!(
            command_line(&strings(&["tmux", "it's", "", "$HOME"])).unwrap(),
            r#"'tmux' 'it'\''s' '' '$HOME'"#
        );
    }

    #[test]
    fn nothing_or_a_nul_is_refused() {
        assert_eq!(command_line(&[]), Err(QuoteError::Empty));
        assert_eq!(
            command_line(&strings(&["a", "b\0c"])),
            Err(QuoteError::Nul { index: 1 })
        );
    }

    #[test]
    fn what_a_shell_would_act_on_reaches_the_command_as_text() {
        let hostile = strings(&[
            "; rm -rf ~",
            "$(id)",
            "`id`",
            "a'b\"c",
            "*",
            "~",
            "x\ny",
            "\\",
            "-n",
            "> /tmp/x",
            "'",
            "''",
            "a b\tc",
            "#not a comment",
            "!$",
        ]);
        assert_eq!(through_sh(&hostile), hostile);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Any argv survives the remote shell unchanged.
        #[test]
        fn any_argv_survives_a_posix_shell(argv in proptest::collection::vec("[^\u{0}]{0,12}", 1..6)) {
            prop_assert_eq!(through_sh(&argv), argv);
        }
    }
}
