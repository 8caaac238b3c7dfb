//! `the-loop config check | init | path`.

use super::{CliResult, Ctx, Threads, usage};
use crate::config::{self, Environment, PathSource, ResolvedPath};
use crate::harness::Harness;
use crate::session::delivery::{ClientReleases, Screen, ScreenReader as Reader, describe_release};
use anyhow::{Context, anyhow};
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Subcommand)]
pub enum ConfigCommand {
    /// Validate the config and print the effective result (YAML on stdout).
    Check,
    /// Write a commented starter config.
    Init {
        /// Where to write it (default: the resolved config path).
        #[arg(long)]
        path: Option<PathBuf>,
        /// Overwrite an existing file.
        #[arg(long)]
        force: bool,
    },
    /// Show which config file is used.
    Path,
}

pub fn run(cmd: ConfigCommand, ctx: &Ctx) -> CliResult {
    let env = Environment::from_process();
    let flag = ctx.config_flag.as_deref();
    match cmd {
        ConfigCommand::Check => check(&env, flag),
        ConfigCommand::Init { path, force } => init(&env, flag, path, force),
        ConfigCommand::Path => path(&env, flag),
    }
}

fn check(env: &Environment, flag: Option<&Path>) -> CliResult {
    let loaded = env.load(flag).map_err(usage)?;
    loaded.check_placeholders().map_err(usage)?;
    let yaml = serde_norway::to_string(&loaded.config).map_err(super::failed)?;
    match &loaded.path {
        Some(path) => eprintln!("config: {} (valid)", path.display()),
        None => eprintln!(
            "config: no file found{}; using the defaults (create one with `the-loop config init`)",
            env.default_file
                .as_ref()
                .map(|p| format!(" at {}", p.display()))
                .unwrap_or_default()
        ),
    }
    for warning in &loaded.warnings {
        eprintln!("warning: {warning}");
    }
    if loaded.config.repos.is_empty() {
        eprintln!(
            "note: no repos: nothing is watched; `the-loop run` does not start on this file, and a supervisor running with repos keeps its config rather than reload to it"
        );
    }
    for note in workspace_notes(&loaded.config) {
        eprintln!("note: {note}");
    }
    for line in harness_screens(&loaded.config) {
        eprintln!("{line}");
    }
    for note in unpriced_notes(&loaded.config) {
        eprintln!("note: {note}");
    }
    print!("{yaml}");
    Ok(())
}

/// Models the sessions used that no price covers (SPEC §20.2): their cost shows as
/// unknown until `pricing.models` names them.
fn unpriced_notes(config: &config::Config) -> Vec<String> {
    let paths = crate::paths::StatePaths::from_env();
    let events = crate::events::EventLog::open(&paths);
    let registry = crate::session::Registry::new(&paths, events, crate::events::Source::Cli);
    let prices = crate::usage::Prices::new(&config.pricing.models);
    let mut models = std::collections::BTreeSet::new();
    for record in registry.list().unwrap_or_default() {
        for model in record.usage.tally().by_model().into_keys() {
            if prices.of(&model).is_none() {
                models.insert(model);
            }
        }
    }
    models
        .into_iter()
        .map(|m| format!("model `{m}` has no price: its cost shows as unknown (?); add pricing.models.{m} (USD per million tokens)"))
        .collect()
}

/// Where each repo's sessions will work (SPEC §16.1): worktrees, or a shared path.
fn workspace_notes(config: &config::Config) -> Vec<String> {
    let Ok(runtime) = crate::runtime::build(Threads::One) else {
        return Vec::new();
    };
    runtime.block_on(crate::workspace::describe_modes(
        &config.repos,
        &config.hosts,
        &config.workspaces,
        &crate::paths::StatePaths::from_env(),
    ))
}

/// Each configured harness, which release runs, the permission mode its sessions get
/// and whether the-loop knows its screen (SPEC §18.2, issue 30): the default one first,
/// then the others of `sessions.harnesses`.
fn harness_screens(config: &config::Config) -> Vec<String> {
    let sessions = &config.sessions;
    let releases = ClientReleases::new(crate::paths::StatePaths::from_env().clients_dir());
    let default = sessions.harness.as_str();
    // A repo's own harness (`repos[].harness`) is listed like a configured one.
    let mut others: Vec<&str> = sessions.harnesses.keys().map(String::as_str).collect();
    for name in config.repos.iter().filter_map(|r| r.harness.as_deref()) {
        if !others.contains(&name) {
            others.push(name);
        }
    }
    let others = others.into_iter();
    let path = std::env::var_os("PATH");
    let runtime = crate::runtime::build(Threads::One).ok();
    std::iter::once(default)
        .chain(others.filter(|name| *name != default))
        .filter_map(|name| {
            let harness = Harness::resolve(name, sessions).ok()?;
            let role = if name == default {
                " (sessions.harness)"
            } else {
                ""
            };
            let mut facts = Vec::new();
            let located = harness.locate(path.as_deref());
            let reader = Reader::of(harness.screen());
            let client = reader.map(Reader::client);
            let version = match (&located, &runtime) {
                (Ok(program), Some(runtime)) if client.is_some() => {
                    Some(runtime.block_on(crate::harness::version::of(program)))
                }
                _ => None,
            };
            match (&located, &version) {
                (Err(error), _) => facts.push(error.to_string()),
                (Ok(_), Some(Ok(v))) => facts.push(format!("{} {v}", client.unwrap_or_default())),
                (Ok(_), Some(Err(error))) => facts.push(error.to_string()),
                (Ok(program), None) => facts.push(program.display().to_string()),
            }
            if harness.is_claude() {
                facts.push(format!("permission mode {}", permission_modes(config)));
            }
            let read = version.as_ref().and_then(|v| v.as_ref().ok());
            if harness.clone().with_codex_policy(config.sessions.codex).codex_policy().is_some() {
                facts.push(format!("approval policy and sandbox {}", codex_policies(config)));
                facts.push(codex_channel(config, read.map(String::as_str)));
            }
            if harness.is_opencode() {
                facts.push(format!(
                    "permission {}; driven through its own server on 127.0.0.1 (nothing pasted, no screen read)",
                    opencode_policies(config)
                ));
                return Some(format!("harness {name}{role}: {}", facts.join("; ")));
            }
            let screen = match (Screen::of(&harness, read.map(String::as_str)), reader) {
                (Screen::Known, _) => format!(
                    "screen: known (recorded from {} {})",
                    client.unwrap_or_default(),
                    read.map_or("", String::as_str)
                ),
                (Screen::Unrecorded(Some(v)), Some(reader)) => format!(
                    "screen: {} {v} · {} — not recorded (recorded: {}): a delivery goes out when its hooks and its screen agree, and is held `screen-unread` when they do not",
                    reader.client(),
                    describe_release(reader, &v, &releases.seen(reader, &v)),
                    reader.recorded_releases().join(", ")
                ),
                (Screen::Unrecorded(_), _) => {
                    "screen: release unread — a delivery goes out when its hooks and its screen agree".to_string()
                }
                (Screen::NotRead, _) => {
                    "screen: unknown (a paste cannot wait for an open dialog or a half-typed draft to clear)".to_string()
                }
            };
            facts.push(screen);
            Some(format!("harness {name}{role}: {}", facts.join("; ")))
        })
        .collect()
}

/// `bash ask, edit ask, external ask`, or with the repos that name their own.
fn opencode_policies(config: &config::Config) -> String {
    let global = config.sessions.opencode.permission;
    let repos: Vec<String> = config
        .repos
        .iter()
        .filter_map(|r| Some(format!("{}: {}", r.name, global.with(r.opencode?))))
        .collect();
    if repos.is_empty() {
        global.to_string()
    } else {
        format!("{global} ({})", repos.join(", "))
    }
}

/// `on-request, workspace-write`, or with the repos that name their own
/// (`… (octo/web: never, read-only)`).
fn codex_policies(config: &config::Config) -> String {
    let global = config.sessions.codex;
    let repos: Vec<String> = config
        .repos
        .iter()
        .filter_map(|r| Some(format!("{}: {}", r.name, global.with(r.codex?))))
        .collect();
    if repos.is_empty() {
        global.to_string()
    } else {
        format!("{global} ({})", repos.join(", "))
    }
}

/// How a local codex session of release `version` runs (`sessions.codexChannel`).
fn codex_channel(config: &config::Config, version: Option<&str>) -> String {
    use crate::harness::app_server::APP_SERVER_SINCE;
    if config.sessions.codex_channel != config::CodexChannel::AppServer {
        return "channel: paste (codexChannel: paste)".into();
    }
    match version {
        Some(v) if crate::harness::version::at_least(v, APP_SERVER_SINCE) => {
            "channel: app server (comments by turn/start, approvals answered through it)".into()
        }
        _ => format!("channel: paste (the app server needs codex {APP_SERVER_SINCE} or later)"),
    }
}

/// `default`, or `default (octo/web: plan)` when repos name their own.
fn permission_modes(config: &config::Config) -> String {
    let global = config.sessions.permission_mode.as_str();
    let repos: Vec<String> = config
        .repos
        .iter()
        .filter_map(|r| Some(format!("{}: {}", r.name, r.permission_mode?)))
        .collect();
    if repos.is_empty() {
        global.to_string()
    } else {
        format!("{global} ({})", repos.join(", "))
    }
}

fn init(
    env: &Environment,
    flag: Option<&Path>,
    explicit: Option<PathBuf>,
    force: bool,
) -> CliResult {
    let target = match explicit {
        Some(path) => path,
        None => resolved_or_usage(env, flag)?.path,
    };
    if !force && target.exists() {
        return Err(usage(anyhow!(
            "{} already exists; not overwriting it (pass --force to replace it, or --path to write elsewhere)",
            target.display()
        )));
    }
    crate::fsutil::atomic_write(&target, config::starter::STARTER_YAML.as_bytes())
        .with_context(|| format!("cannot write {}", target.display()))?;
    println!("{}", target.display());
    eprintln!("wrote a starter config to {}", target.display());
    // The same lines `config check` and `run` print until each placeholder is replaced.
    if let Ok(written) = env.load_file(&target) {
        for placeholder in &written.placeholders {
            eprintln!("edit {placeholder}");
        }
    }
    eprintln!(
        "then run `the-loop --config {} config check`",
        target.display()
    );
    Ok(())
}

fn path(env: &Environment, flag: Option<&Path>) -> CliResult {
    let ResolvedPath { path, source } = resolved_or_usage(env, flag)?;
    println!("{}", path.display());
    let chosen_by = match source {
        PathSource::Flag => "the --config flag",
        PathSource::Env => "$THE_LOOP_CONFIG",
        PathSource::Default => "the default location (XDG config dir)",
    };
    let state = if path.is_file() {
        "exists".to_string()
    } else if path.exists() {
        "exists but is not a regular file".to_string()
    } else if source == PathSource::Default {
        "does not exist: the defaults apply (create it with `the-loop config init`)".to_string()
    } else {
        format!(
            "does not exist (create it with `the-loop config init --path {}`)",
            path.display()
        )
    };
    eprintln!("chosen by {chosen_by}; {state}");
    Ok(())
}

fn resolved_or_usage(
    env: &Environment,
    flag: Option<&Path>,
) -> Result<ResolvedPath, super::CliError> {
    env.resolve(flag).ok_or_else(|| {
        usage(anyhow!(
            "cannot determine the default config location (no home directory); pass --config PATH or set THE_LOOP_CONFIG"
        ))
    })
}
