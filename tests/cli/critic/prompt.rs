//! How the prompt reaches a critic: placeholders inside single arguments, never a
//! shell, a private prompt file, and the per-argument size limit.

use super::{Home, args_critic, code, envelope, recorded_args, script, stderr};
use serde_json::Value;
use std::path::Path;

#[test]
fn text_output_and_every_placeholder() {
    let home = Home::new(&args_critic("    model: opus\n"));
    let seen = home.scratch("seen");
    let out = home
        .cmd()
        .args(["critic", "run", "args", "--prompt", "look at this"])
        .args(["--work-item", "github:octo/repo#15", "--spec-dir"])
        .arg(&seen)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let env = envelope(&out);
    assert_eq!(env["harness"], Value::Null);
    assert!(env["output"].as_str().unwrap().starts_with("args=3 cwd="));
    assert_eq!(env["usage"]["present"], false);
    assert_eq!(
        recorded_args(&seen),
        ["look at this", "--model=opus", "github:octo/repo#15"]
    );
}

#[test]
fn unset_placeholders_are_empty() {
    let home = Home::new(&args_critic(""));
    let seen = home.scratch("seen");
    let out = home.round("args", &["--prompt", "p"], &seen);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(recorded_args(&seen), ["p", "--model=", ""]);
}

/// No shell ever runs: text that would create a file if any shell saw it is passed,
/// byte for byte, as one argument — and no file appears.
#[test]
fn no_shell_sees_the_prompt() {
    let home = Home::new(&args_critic(""));
    let seen = home.scratch("seen");
    let canary = home.dir.path().join("pwned");
    let c = canary.display();
    let prompts = [
        format!("; touch {c}"),
        format!("$(touch {c})"),
        format!("`touch {c}`"),
        format!("x && touch {c} || touch {c}"),
        format!("a\ntouch {c}\n"),
        format!("'\"; touch {c}; echo \"'"),
        format!("| touch {c} > {c}"),
    ];
    for prompt in &prompts {
        let out = home.round("args", &["--prompt", prompt], &seen);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert_eq!(recorded_args(&seen)[0], *prompt, "one argument, unchanged");
        assert!(!canary.exists(), "a shell ran {prompt:?}");
    }
}

#[test]
fn an_inline_prompt_reaches_the_critic_as_a_private_file_that_is_removed() {
    let home = Home::new(&format!(
        "  - {{name: filer, command: {}, args: ['{{promptFile}}', '{{specDir}}']}}\n",
        script("prompt_file.sh")
    ));
    let seen = home.scratch("seen");
    let prompt = "line one\nline two; $(not run)\n";
    let out = home.round("filer", &["--prompt", prompt], &seen);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(seen.join("copy")).unwrap(), prompt);
    assert_eq!(
        std::fs::read_to_string(seen.join("mode")).unwrap().trim(),
        "600"
    );
    let path = std::fs::read_to_string(seen.join("path")).unwrap();
    assert!(
        !Path::new(&path).exists(),
        "the temp file {path} was not removed"
    );

    // A given file is passed as is (absolute) and kept.
    let given = seen.join("given.txt");
    std::fs::write(&given, "from a file").unwrap();
    let out = home
        .cmd()
        .current_dir(&seen)
        .args([
            "critic",
            "run",
            "filer",
            "--prompt-file",
            "given.txt",
            "--spec-dir",
        ])
        .arg(&seen)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(seen.join("path")).unwrap(),
        given.display().to_string()
    );
    assert_eq!(
        std::fs::read_to_string(seen.join("copy")).unwrap(),
        "from a file"
    );
    assert!(given.exists());
}

/// Linux caps one argument at 128 KiB (MAX_ARG_STRLEN). A 200 KB prompt travels whole as
/// a file; inline it is refused with a clear error before anything starts; the largest
/// inline prompt that fits arrives as one argument.
#[cfg(target_os = "linux")]
#[test]
fn a_200_kb_prompt() {
    let home = Home::new(&format!(
        "{}  - {{name: filer, command: {}, args: ['{{promptFile}}', '{{specDir}}']}}\n",
        args_critic(""),
        script("prompt_file.sh")
    ));
    let seen = home.scratch("seen");
    let big: String = (0..200_000)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    let big_file = home.dir.path().join("big.txt");
    std::fs::write(&big_file, &big).unwrap();

    let out = home.round(
        "filer",
        &["--prompt-file", big_file.to_str().unwrap()],
        &seen,
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(envelope(&out)["output"], "read 200000 bytes\n");
    assert_eq!(std::fs::read_to_string(seen.join("copy")).unwrap(), big);

    let out = home.round(
        "args",
        &["--prompt-file", big_file.to_str().unwrap()],
        &seen,
    );
    assert_eq!(code(&out), 1);
    let env = envelope(&out);
    assert_eq!(env["ok"], false);
    assert_eq!(env["exitCode"], -1);
    let error = env["error"].as_str().unwrap();
    assert!(
        error.contains("200000 bytes") && error.contains("MAX_ARG_STRLEN"),
        "{error}"
    );
    assert!(error.contains("use `{promptFile}` in args"), "{error}");
    assert!(
        !seen.join("arg1").exists(),
        "the critic must not have started"
    );

    let largest = &big[..128 * 1024 - 1];
    let largest_file = home.dir.path().join("largest.txt");
    std::fs::write(&largest_file, largest).unwrap();
    let out = home.round(
        "args",
        &["--prompt-file", largest_file.to_str().unwrap()],
        &seen,
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(recorded_args(&seen)[0], largest);
}
