#!/bin/sh
# A critic that finds something and then fails.
echo "partial findings"
echo "lint: cannot parse line 3" >&2
exit 3
