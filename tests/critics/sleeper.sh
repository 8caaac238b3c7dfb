#!/bin/sh
# A critic that never finishes: it ignores SIGTERM, starts a child and a grandchild,
# and records every pid in $1 so a test can check they are all gone.
dir="$1"
trap '' TERM
sleep 300 &
echo $! > "$dir/child.pid"
sh -c 'sleep 300 & echo $! > "$1/grandchild.pid"; wait' sleeper-sub "$dir" &
echo $! > "$dir/sub.pid"
echo $$ > "$dir/critic.pid"
while :; do
  sleep 1
done
