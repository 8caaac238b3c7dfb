#!/bin/sh
# A JSON critic: prints one document in the style named by $1.
case "$1" in
  snake)
    printf '%s\n' '{"type":"result","is_error":false,"result":"snake review","total_cost_usd":0.0125,"usage":{"input_tokens":100,"output_tokens":20,"cache_read_input_tokens":5,"cache_creation_input_tokens":7}}'
    ;;
  camel)
    printf '%s\n' '{"result":"","response":"camel review","costUsd":1.5,"tokenUsage":{"inputTokens":3,"outputTokens":4,"cacheReadTokens":5,"cacheWriteTokens":6}}'
    ;;
  booleans)
    printf '%s\n' '{"result":"bool review","total_cost_usd":true,"usage":{"input_tokens":true,"output_tokens":false,"cache_read_input_tokens":"5"}}'
    ;;
  broken)
    printf '%s\n' 'this is not JSON'
    ;;
esac
