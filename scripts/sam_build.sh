#!/usr/bin/env bash
# `sam build` from a fresh clone: the three functions for arm64 (provided.al2023), exactly
# as `sam deploy` ships them, with every tool it needs installed into .venv.
#
#   scripts/sam_build.sh [extra `sam build` options]
#
# 1. .venv with aws-sam-cli, cargo-lambda and ziglang (scripts/requirements.txt).
# 2. The Rust target aarch64-unknown-linux-gnu (rustup); cargo-lambda cross-compiles to it
#    with zig as the C compiler and linker, so no cross toolchain is needed.
# 3. `sam build`: for each function, `cargo lambda build --release --arm64 --bin <name>`
#    in its package directory (template.yaml: BuildMethod rust-cargolambda, CodeUri;
#    samconfig.toml: beta_features, no parallel builds), bootstraps in .aws-sam/build/.
# 4. The bootstraps' sizes, checked against their budgets (see lambda_size_check in
#    scripts/lib.sh).
#
# Slow: about 10-25 minutes on 2 cores from a cold target directory (three release
# builds with fat LTO). CI builds only the webhook (scripts/test.sh).
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$PARLEY_ROOT"

started=$SECONDS
step() { log "$* [$((SECONDS - started))s]"; }

step "python tooling (aws-sam-cli, cargo-lambda, ziglang)"
ensure_venv
ensure_lambda_target
export PATH="$VENV/bin:$PATH" # cargo-lambda, and python3 -m ziglang for zig
export SAM_CLI_TELEMETRY=0

step "sam build"
sam build "$@"

step "bootstrap sizes"
status=0
for function in WebhookFunction ConversationWorkerFunction ReviewWorkerFunction; do
  lambda_size_check "$function" ".aws-sam/build/$function/bootstrap" || status=1
done
step "done"
exit "$status"
