#!/bin/sh
# A critic far too talkative on both streams.
head -c 3000000 /dev/zero | tr '\0' a
head -c 2000000 /dev/zero | tr '\0' b >&2
