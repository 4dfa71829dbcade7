#!/usr/bin/env bash
# A local AWS emulator (moto) for development, the same way scripts/test.sh runs it.
#
#   scripts/moto.sh                 start moto, print the exports, run until Ctrl-C
#   scripts/moto.sh CMD [ARGS...]   start moto, run CMD with the exports, stop moto,
#                                   exit with CMD's status; e.g.
#                                   scripts/moto.sh cargo nextest run -p parley-store
#   scripts/moto.sh --provision [CMD [ARGS...]]
#                                   also create template.yaml's tables and queues in moto
#                                   (`parley tables create`) and export the functions'
#                                   PARLEY_* variables for them, e.g. to run the Lambda
#                                   binaries under `cargo lambda watch` against "AWS":
#                                   scripts/moto.sh --provision cargo lambda watch
#
# MOTO_PORT=NNNN picks a fixed port (handy when another shell should reuse the exports).
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

trap stop_moto EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

provision=0
if [[ "${1:-}" == --provision ]]; then
  provision=1
  shift
fi

ensure_venv
start_moto

exports="export AWS_ENDPOINT_URL=$AWS_ENDPOINT_URL
export AWS_ACCESS_KEY_ID=$AWS_ACCESS_KEY_ID
export AWS_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY
export AWS_REGION=$AWS_REGION
export AWS_DEFAULT_REGION=$AWS_DEFAULT_REGION"
if [[ $provision == 1 ]]; then
  provisioned="$(cd "$PARLEY_ROOT" && cargo run -q -p parley-cli -- tables create --stack-name parley-local)"
  eval "$provisioned"
  exports+=$'\n'"$provisioned"
fi

if [[ $# -gt 0 ]]; then
  status=0
  "$@" || status=$?
  exit "$status"
fi

echo "# moto is running; paste these into another shell (Ctrl-C here stops moto):"
echo "$exports"
wait "$MOTO_PID"
