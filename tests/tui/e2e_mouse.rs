//! The mouse (SPEC §21.1) end to end: the real `the-loop tui` in a tmux pane, sent the
//! bytes a terminal sends for clicks and the wheel (SGR reports, `send-keys -l`), read
//! back with `capture-pane` — and tmux's own view of the pane's mouse modes, to see
//! reporting on while the screen is up, off while attached and after the exit.

use crate::support::tui_world::*;

/// Where `needle` is drawn in the Sessions pane's rows (the left columns, below the
/// status bar and the pane's top edge), as 0-based (column, row).
fn in_sessions(text: &str, needle: &str) -> Option<(u16, u16)> {
    text.lines().enumerate().skip(2).find_map(|(y, line)| {
        let left: String = line.chars().take(50).collect();
        let byte = left.find(needle)?;
        Some((left[..byte].chars().count() as u16, y as u16))
    })
}

/// Where `needle` is drawn on the footer (the last line).
fn in_footer(text: &str, needle: &str) -> (u16, u16) {
    let lines: Vec<&str> = text.lines().collect();
    let y = lines.len() - 1;
    let byte = lines[y]
        .find(needle)
        .unwrap_or_else(|| panic!("`{needle}` not in the footer:\n{text}"));
    (lines[y][..byte].chars().count() as u16, y as u16)
}

/// A left click as a terminal reports it in SGR: press, release (1-based positions).
fn click((x, y): (u16, u16)) -> String {
    let (x, y) = (x + 1, y + 1);
    format!("\x1b[<0;{x};{y}M\x1b[<0;{x};{y}m")
}

fn wheel_down((x, y): (u16, u16)) -> String {
    format!("\x1b[<65;{};{}M", x + 1, y + 1)
}

/// tmux's flags for the mouse modes the pane's program turned on.
fn modes(screen: &Screen) -> String {
    screen.format(
        "standard=#{mouse_standard_flag} sgr=#{mouse_sgr_flag} \
         button=#{mouse_button_flag} all=#{mouse_all_flag}",
    )
}

const ON: &str = "standard=1 sgr=1 button=0 all=0";
const OFF: &str = "standard=0 sgr=0 button=0 all=0";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clicks_double_clicks_the_wheel_and_hints_drive_the_real_screen() {
    let world = TuiWorld::with_issues([15, 16, 17]).await;
    world.start_sessions([15]).await;
    let screen = world.open_screen("mouse", &[]);
    screen.wait_text("supervising octo/repo").await;
    let text = screen
        .wait_for("the three rows", |t| {
            ["#15", "#16", "#17"]
                .iter()
                .all(|n| in_sessions(t, n).is_some())
                && t.contains("working")
        })
        .await;
    // Presses, releases and the wheel, in SGR; never every motion.
    assert_eq!(modes(&screen), ON);

    // A click selects the row under it: `d` then names #17 (it has nothing to diff).
    screen.type_text(&click(in_sessions(&text, "#17").unwrap()));
    screen.keys(&["d"]);
    screen
        .wait_text("octo/repo#17 has no session and no worktree")
        .await;

    // A double click on the session's row opens the reply box for it.
    let row15 = in_sessions(&text, "#15").unwrap();
    screen.type_text(&format!("{}{}", click(row15), click(row15)));
    screen.wait_text("Reply to octo/repo#15").await;
    screen.keys(&["Escape"]);
    screen
        .wait_for("the reply box to close", |t| {
            !t.contains("Reply to octo/repo#15")
        })
        .await;

    // A click on a pane focuses it: the footer offers the Questions keys.
    let text = screen.text();
    let questions = text
        .lines()
        .position(|l| l.starts_with("╭ Questions"))
        .expect("the Questions pane") as u16;
    screen.type_text(&click((4, questions + 1)));
    screen
        .wait_for("the Questions keys in the footer", |t| {
            t.lines().last().is_some_and(|l| l.contains("dismiss"))
        })
        .await;

    // A click on the help hint opens the help; the wheel scrolls it; `close` closes it.
    screen.type_text(&click(in_footer(&screen.text(), "help")));
    screen.wait_text("╭ Keys").await;
    screen.type_text(&wheel_down((80, 20)));
    screen.wait_text(" 4/").await;
    screen.type_text(&click(in_footer(&screen.text(), "close")));
    screen
        .wait_for("the help to close", |t| !t.contains("╭ Keys"))
        .await;

    // Attached, tmux has the terminal as it left it: no mouse reporting. Back, it is on.
    screen.keys(&["1"]);
    screen.type_text(&click(row15));
    screen.keys(&["a"]);
    screen
        .wait_for("the agent's session in place of the screen", |t| {
            t.contains("fake-agent ready") && !t.contains("supervising")
        })
        .await;
    assert_eq!(modes(&screen), OFF, "reporting is off while attached");
    screen.keys(&["C-b", "d"]);
    screen.wait_text("supervising octo/repo").await;
    assert_eq!(modes(&screen), ON, "and on again after the attach");

    // Malformed and hostile reports: zero and huge positions, unknown buttons, missing
    // or extra fields, the old X10 form at position 0. Nothing shows, nothing is sent
    // to the agent, the screen keeps running.
    let agent_lines = world.agent_lines().len();
    for junk in [
        "\x1b[<0;0;0M",
        "\x1b[<0;0;5M\x1b[<0;0;5m",
        "\x1b[<0;5;0M\x1b[<0;5;0m",
        "\x1b[<0;99999;99999M",
        "\x1b[<65;0;0M",
        "\x1b[<255;3;3M",
        "\x1b[<0;3M",
        "\x1b[<;;M",
        "\x1b[<0;3;3;3;3M",
        "\x1b[<-1;-1;-1M",
        "\x1b[M   ",
        "\x1b[M@!!",
    ] {
        screen.type_text(junk);
    }
    screen.keys(&["?"]);
    let text = screen.wait_text("╭ Keys").await;
    assert!(!text.contains("[<") && !text.contains("99999"), "{text}");
    screen.keys(&["Escape"]);
    screen
        .wait_for("the help to close", |t| !t.contains("╭ Keys"))
        .await;
    assert_eq!(
        world.agent_lines().len(),
        agent_lines,
        "nothing reached the agent"
    );

    // The quit hint quits: exit 0, the terminal restored, mouse reporting off.
    screen.type_text(&click(in_footer(&screen.text(), "quit")));
    assert_eq!(screen.wait_exit().await, 0);
    assert_eq!(modes(&screen), OFF);
    assert_eq!(screen.format("#{alternate_on}"), "0");
}

/// `tui.mouse: false`: reporting is never turned on (the terminal keeps its mouse), and
/// a report that arrives anyway selects nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_tui_mouse_false_the_terminal_keeps_the_mouse() {
    let world = TuiWorld::with_issues([15, 16, 17]).await;
    let config = std::fs::read_to_string(&world.config).unwrap();
    let config = config.replace("tui: {notify: none}", "tui: {notify: none, mouse: false}");
    assert!(config.contains("mouse: false"));
    std::fs::write(&world.config, config).unwrap();

    let screen = world.open_screen("nomouse", &[]);
    let text = screen
        .wait_for("the three rows", |t| {
            ["#15", "#16", "#17"]
                .iter()
                .all(|n| in_sessions(t, n).is_some())
        })
        .await;
    assert_eq!(modes(&screen), OFF);
    let row17 = in_sessions(&text, "#17").unwrap();
    screen.type_text(&format!("{}{}", click(row17), click(row17)));
    screen.keys(&["d"]);
    // The first row is still the selected one.
    let text = screen.wait_text("has no session and no worktree").await;
    assert!(text.contains("octo/repo#15 has no session"), "{text}");
    screen.keys(&["q"]);
    assert_eq!(screen.wait_exit().await, 0);
}

/// A signal is an exit path too: SIGTERM leaves the terminal with mouse reporting off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_leaves_mouse_reporting_off() {
    let world = TuiWorld::with_issues([15]).await;
    let screen = world.open_screen("signalled", &[]);
    screen.wait_text("supervising octo/repo").await;
    assert_eq!(modes(&screen), ON);
    // The pane runs `sh -c '… the-loop tui …'`: the screen is the shell's child.
    let shell = screen.pid();
    let children = std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children"))
        .expect("the shell's children");
    let tui = children
        .split_whitespace()
        .next()
        .expect("the screen's pid");
    let status = std::process::Command::new("kill")
        .args(["-TERM", tui])
        .status()
        .unwrap();
    assert!(status.success());
    screen.wait_exit().await;
    assert_eq!(modes(&screen), OFF);
    assert_eq!(screen.format("#{alternate_on}"), "0");
}
