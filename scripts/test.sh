#!/usr/bin/env bash
# The test command: everything CI runs, runnable on a fresh clone.
#
#   scripts/test.sh
#
# 1. Python tooling in .venv (moto[server], cfn-lint, aws-sam-cli; installed once, reused).
# 2. moto_server on a free 127.0.0.1 port, stopped on exit; the AWS SDKs reach it through
#    AWS_ENDPOINT_URL with fake credentials, so no AWS account is touched.
# 3. cfn-lint and `sam validate` (plain and --lint) on template.yaml, offline. (That moto
#    accepts the template's tables and queues as declared is a test: `parley tables create`
#    in functions/parley/tests/operator.rs, and every emulated-Lambda scenario.)
# 4. cargo fmt --check, cargo clippy -D warnings, cargo doc -D warnings; the webhook's
#    arm64 Lambda bootstrap (cargo-lambda, as `sam build` builds it) and its size budget;
#    the grammars' parity
#    tests built for arm64 the same way and run under qemu-aarch64 (installed with apt-get
#    when the script runs as root; where it cannot be, said in the log and passed over).
# 5. The tests: doctests, then cargo nextest (installed if missing; with
#    PARLEY_NO_NEXTEST_INSTALL=1 or a failed install, `cargo test` runs everything instead).
#
# Knobs (all optional; the default runs everything):
#   SKIP_CARGO=1                  only the venv, moto and template checks (for script work)
#   PARLEY_SKIP_LAMBDA_BUILD=1    skip the arm64 builds (the webhook's release build is slow)
#   PARLEY_NO_NEXTEST_INSTALL=1   use `cargo test` when cargo-nextest is missing
#   MOTO_PORT=NNNN                use a fixed port instead of a free one
#   PYTHON=/path/to/python3       interpreter for creating .venv (>= 3.10)
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$PARLEY_ROOT"

started=$SECONDS
step() { log "$* [$((SECONDS - started))s]"; }

trap stop_moto EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

step "python tooling"
ensure_venv

step "starting moto"
start_moto

export SAM_CLI_TELEMETRY=0
# A fresh clone gains nothing from incremental compilation, and its caches were the larger
# part of a CI disk that filled up (gigabytes per workspace crate and profile). Set
# CARGO_INCREMENTAL=1 to keep them when running this script over and over by hand.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
export RUST_BACKTRACE="${RUST_BACKTRACE:-1}"

step "cfn-lint template.yaml"
"$VENV/bin/cfn-lint" template.yaml

# Plain `sam validate` runs the SAM translator (needs a region, never calls AWS for this
# template); --lint runs cfn-lint through SAM. Both work offline with the fake credentials.
step "sam validate --template template.yaml"
"$VENV/bin/sam" validate --template template.yaml --region "$AWS_REGION"
step "sam validate --lint --template template.yaml"
"$VENV/bin/sam" validate --lint --template template.yaml --region "$AWS_REGION"

if [[ "${SKIP_CARGO:-0}" == 1 ]]; then
  step "all checks passed (SKIP_CARGO=1: no cargo steps)"
  exit 0
fi

if command -v rustup >/dev/null 2>&1 && ! { cargo fmt --version && cargo clippy --version; } >/dev/null 2>&1; then
  step "installing rustfmt and clippy"
  rustup component add rustfmt clippy
fi

step "cargo fmt --all --check"
cargo fmt --all --check

step "cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace --all-targets -- -D warnings

# The maintainers' docs (private items included): a link to something renamed or gone
# fails here, not in a reader's browser.
step "cargo doc --workspace --no-deps --document-private-items (warnings are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --document-private-items

# The deployed build, for one function: the full `sam build` (scripts/sam_build.sh, three
# release builds with fat LTO) does not fit CI's time on 2 cores, so CI cross-compiles
# the webhook for arm64 exactly as `sam build` does (cargo-lambda from its package
# directory) and checks its size budget. The workers are built by scripts/sam_build.sh.
if [[ "${PARLEY_SKIP_LAMBDA_BUILD:-0}" != 1 ]]; then
  step "webhook bootstrap for arm64: cargo lambda build --release --arm64 (functions/webhook)"
  ensure_lambda_target
  (cd functions/webhook && PATH="$VENV/bin:$PATH" cargo lambda build --release --arm64 --bin webhook)
  lambda_size_check WebhookFunction "${CARGO_TARGET_DIR:-$PARLEY_ROOT/target}/lambda/webhook/bootstrap"

  # The workers carry the grammars' parse tables as bytes taken from a build on this
  # (x86_64) machine; these tests compare every grammar's trees with the grammar crate's
  # own, on arm64, where the functions run.
  step "grammars on arm64: parity tests under qemu-aarch64"
  if ensure_arm64_runner; then
    PATH="$VENV/bin:$PATH" cargo lambda build --arm64 -p parley-grammars --tests
    parity=""
    for built in $(ls -t "${CARGO_TARGET_DIR:-$PARLEY_ROOT/target}"/aarch64-unknown-linux-gnu/debug/deps/parity-*); do
      [[ "$built" == *.d ]] || { parity="$built" && break; }
    done
    [[ -n "$parity" ]] || die "the arm64 parity test binary was not built"
    qemu-aarch64 -L "$ARM64_SYSROOT" "$parity"
  else
    log "WARNING: the grammars' arm64 parity tests did not run (no qemu-aarch64 here)"
  fi
fi

if ! cargo nextest --version >/dev/null 2>&1 && [[ "${PARLEY_NO_NEXTEST_INSTALL:-0}" != 1 ]]; then
  step "installing cargo-nextest"
  cargo install cargo-nextest --locked || log "could not install cargo-nextest; falling back to cargo test"
fi
# The test runner's summary stays the last thing printed: CI reads the closing lines.
if cargo nextest --version >/dev/null 2>&1; then
  step "cargo test --workspace --doc (nextest does not run doctests)"
  cargo test --workspace --doc
  step "cargo nextest run --workspace"
  cargo nextest run --workspace --no-fail-fast --no-tests=warn
else
  step "cargo test --workspace"
  cargo test --workspace --no-fail-fast
fi
