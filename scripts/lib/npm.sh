# Installing a pinned release of an npm-distributed CLI (Claude Code, Codex, opencode) into a
# prefix under target/npm. Sourced by scripts/check and scripts/record-screens, from the
# repository root; messages name the script that sourced it.

# Whether BIN's `--version` names VERSION (`2.1.197 (Claude Code)`, `codex-cli 0.171.0`,
# `1.18.33`).
reports_version() { # BIN VERSION
  [ -x "$1" ] && "$1" --version 2>/dev/null | head -n 1 | grep -Fqw -- "$2"
}

# Installs PACKAGE@VERSION into PREFIX unless its BIN already reports VERSION. Without
# npm the tests of that client are skipped — except under CI, which must run them all —
# unless REQUIRED is set (a caller that cannot go on without it).
npm_install() { # PREFIX BIN PACKAGE VERSION WHAT
  local me bin="$1/node_modules/.bin/$2"
  me="scripts/$(basename "$0")"
  reports_version "$bin" "$4" && return 0
  if command -v npm >/dev/null 2>&1; then
    echo "$me: installing $5 $4 ($3@$4, npm) into ${1#"$PWD/"}" >&2
    mkdir -p "$1"
    npm install --silent --no-audit --no-fund --prefix "$1" "$3@$4" >&2
    if ! reports_version "$bin" "$4"; then
      echo "$me: $bin does not report $4 after installing it" >&2
      exit 1
    fi
  elif [ -n "${CI:-}" ] || [ -n "${REQUIRED:-}" ]; then
    echo "$me: npm not found, and $5 $4 is needed: install Node.js and npm" >&2
    exit 1
  else
    echo "$me: npm not found; the $5 $4 tests will be skipped (install Node.js and npm to run them)" >&2
  fi
}
