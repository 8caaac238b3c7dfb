#!/bin/sh
# A text critic: writes each argument after the first, byte for byte, to $1/argN
# (N from 1), then prints what it saw of its surroundings.
dir="$1"
shift
i=0
for arg in "$@"; do
  i=$((i + 1))
  printf '%s' "$arg" > "$dir/arg$i"
done
printf 'args=%s cwd=%s mode=%s inherited=%s\n' "$i" "$(pwd)" "${CRITIC_MODE-unset}" "${CRITIC_INHERITED-unset}"
