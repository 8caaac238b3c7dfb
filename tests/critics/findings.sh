#!/bin/sh
# A critic that names places in its working directory (SPEC §21.3), in the style $1:
# `text` prints `path:line[:col]: message` lines, `json` prints a `findings` array,
# `flood` prints 10 000 text findings. Some places are good, some point out of the
# worktree or past the end of a file, and one message carries escape sequences.
esc=$(printf '\033')
case "$1" in
  text)
    printf 'Review of the change.\n'
    printf 'src/lib.rs:2: warning: the loop never ends\n'
    printf 'src/lib.rs:4:3: error: %s[2J%s]0;pwned%s\\ screen cleared\n' "$esc" "$esc" "$esc"
    printf 'README.md:1: a note off the diff\n'
    printf '../../etc/passwd:1: climbs out\n'
    printf '/etc/passwd:1: absolute\n'
    printf 'out.txt:1: a symlink out of the worktree\n'
    printf 'src/lib.rs:0: line zero\n'
    printf 'src/lib.rs:99: past the end\n'
    ;;
  json)
    printf '{"result":"json review","findings":['
    printf '{"path":"src/lib.rs","line":2,"endLine":3,"severity":"warning","message":"the loop never ends"},'
    printf '{"path":"src/lib.rs","line":4,"severity":"error","message":"\\u001b[2J screen cleared"},'
    printf '{"path":"README.md","line":1,"message":"a note off the diff"},'
    printf '{"path":"../../etc/passwd","line":1,"message":"climbs out"},'
    printf '{"path":"out.txt","line":1,"message":"a symlink out"},'
    printf '{"path":"src/lib.rs","line":99,"message":"past the end"}'
    printf ']}\n'
    ;;
  flood)
    i=0
    while [ "$i" -lt 10000 ]; do
      printf 'src/lib.rs:%d: finding %d\n' $((i % 5 + 1)) "$i"
      i=$((i + 1))
    done
    ;;
esac
