#!/usr/bin/env bash
# The model-file parser alone under libFuzzer; kept for old callers of this name.
# Usage: scripts/fuzz_model_file.sh [seconds] (needs a release build in build/). See scripts/fuzz.sh.
exec "$(dirname "$0")/fuzz.sh" "${1:-60}" model_file
