#!/bin/sh
# A critic that reads its prompt from the file named by $1 and records, in $2, the
# path, the file's mode and a copy of its content.
printf '%s' "$1" > "$2/path"
stat -c %a "$1" > "$2/mode"
cat "$1" > "$2/copy"
printf 'read %s bytes\n' "$(wc -c < "$1" | tr -d ' ')"
