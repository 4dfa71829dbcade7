# shellcheck shell=bash
# Helpers shared by scripts/test.sh and scripts/moto.sh. Source it; don't run it.
#
#   ensure_venv   create/reuse .venv and install scripts/requirements.txt (skipped when
#                 the requirements file hasn't changed since the last successful install)
#   start_moto    start moto_server on a free 127.0.0.1 port, wait until it answers, and
#                 export AWS_ENDPOINT_URL and fake credentials/region for the AWS SDKs
#   stop_moto     stop it again (idempotent; register it with `trap`)
#   ensure_lambda_target   the Rust target the Lambda functions are built for (arm64)
#   lambda_size_check NAME FILE   a bootstrap's size against its budget
#   ensure_arm64_runner   qemu-aarch64 and an arm64 glibc, to run arm64 test binaries here

PARLEY_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${PARLEY_VENV:-$PARLEY_ROOT/.venv}"
REQUIREMENTS="$PARLEY_ROOT/scripts/requirements.txt"
MOTO_PID=""
MOTO_LOG=""

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Python >= 3.10 (aws-sam-cli's floor). PYTHON overrides the interpreter used to create .venv.
find_python() {
  local candidate
  for candidate in "${PYTHON:-}" python3 python3.13 python3.12 python3.11 python3.10; do
    [[ -n "$candidate" ]] || continue
    if command -v "$candidate" >/dev/null 2>&1 &&
      "$candidate" -c 'import sys, venv; sys.exit(0 if sys.version_info >= (3, 10) else 1)' 2>/dev/null; then
      command -v "$candidate"
      return 0
    fi
  done
  die "need Python >= 3.10 with the venv module (set PYTHON=/path/to/python3)"
}

ensure_venv() {
  if [[ ! -x "$VENV/bin/python" ]] || ! "$VENV/bin/python" -c '' 2>/dev/null; then
    log "creating Python venv at $VENV"
    rm -rf "$VENV"
    "$(find_python)" -m venv "$VENV"
  fi
  local stamp="$VENV/.parley-requirements.sha256" want have=""
  want="$( (cat "$REQUIREMENTS"; "$VENV/bin/python" -V) | sha256sum | cut -d' ' -f1)"
  [[ -f "$stamp" ]] && have="$(cat "$stamp")"
  if [[ "$want" == "$have" && -x "$VENV/bin/moto_server" && -x "$VENV/bin/cfn-lint" && -x "$VENV/bin/sam" && -x "$VENV/bin/cargo-lambda" ]]; then
    return 0
  fi
  log "installing Python tooling into $VENV (moto[server], cfn-lint, aws-sam-cli, cargo-lambda, ziglang)"
  "$VENV/bin/python" -m pip install --disable-pip-version-check --quiet -r "$REQUIREMENTS"
  printf '%s\n' "$want" >"$stamp"
}

free_port() {
  "$VENV/bin/python" - <<'PY'
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
PY
}

# Waits until moto answers HTTP on $1, or the process dies, or ~30 s pass.
wait_for_moto() {
  local url="$1" i
  for ((i = 0; i < 150; i++)); do
    if ! kill -0 "$MOTO_PID" 2>/dev/null; then
      return 1
    fi
    if "$VENV/bin/python" - "$url" <<'PY' 2>/dev/null; then
import sys, urllib.request
urllib.request.urlopen(sys.argv[1] + "/moto-api/", timeout=1).read()
PY
      return 0
    fi
    sleep 0.2
  done
  return 1
}

start_moto() {
  local attempt port
  # The port is free when we pick it but could be taken before moto binds it: retry.
  for attempt in 1 2 3; do
    MOTO_LOG="$(mktemp "${TMPDIR:-/tmp}/parley-moto.XXXXXX.log")"
    port="${MOTO_PORT:-$(free_port)}"
    "$VENV/bin/moto_server" -H 127.0.0.1 -p "$port" >"$MOTO_LOG" 2>&1 &
    MOTO_PID=$!
    if wait_for_moto "http://127.0.0.1:$port"; then
      export AWS_ENDPOINT_URL="http://127.0.0.1:$port"
      export AWS_ACCESS_KEY_ID=testing
      export AWS_SECRET_ACCESS_KEY=testing
      export AWS_REGION=us-east-1
      export AWS_DEFAULT_REGION=us-east-1
      unset AWS_SESSION_TOKEN AWS_PROFILE
      log "moto listening on $AWS_ENDPOINT_URL (pid $MOTO_PID, log $MOTO_LOG)"
      return 0
    fi
    log "moto did not come up on port $port (attempt $attempt):"
    tail -n 20 "$MOTO_LOG" >&2 || true
    stop_moto
    [[ -z "${MOTO_PORT:-}" ]] || break
  done
  die "could not start moto_server"
}

stop_moto() {
  if [[ -n "$MOTO_PID" ]]; then
    kill "$MOTO_PID" 2>/dev/null || true
    wait "$MOTO_PID" 2>/dev/null || true
    MOTO_PID=""
  fi
  if [[ -n "$MOTO_LOG" ]]; then
    rm -f "$MOTO_LOG"
    MOTO_LOG=""
  fi
}

# The functions run on arm64 (template.yaml: Architectures). cargo-lambda links with zig,
# so the Rust standard library for the target is all rustup has to add.
LAMBDA_TARGET=aarch64-unknown-linux-gnu

ensure_lambda_target() {
  if ! command -v rustup >/dev/null 2>&1; then
    log "no rustup: assuming the $LAMBDA_TARGET standard library is installed"
    return 0
  fi
  if ! rustup target list --installed | grep -qx "$LAMBDA_TARGET"; then
    log "adding the Rust target $LAMBDA_TARGET"
    rustup target add "$LAMBDA_TARGET" || die "could not add the Rust target $LAMBDA_TARGET (rustup target add $LAMBDA_TARGET)"
  fi
}

# Size budgets of the stripped arm64 bootstraps, in bytes (decimal MB): the webhook links
# no GitHub or LLM client, the workers do, and ten tree-sitter grammars (their parse
# tables carried deflated: 1.21 MB for 15.9 MB; infra/grammars). README, "Deploying".
# PARLEY_SIZE_CHECK=0 reports without failing.
lambda_size_check() {
  local name="$1" file="$2" budget size
  case "$name" in
    WebhookFunction | webhook) budget=8000000 ;;
    *) budget=12000000 ;;
  esac
  [[ -f "$file" ]] || die "$file not found"
  size="$(stat -c %s "$file")"
  awk -v n="$name" -v s="$size" -v b="$budget" \
    'BEGIN { printf "%-28s %10d bytes  %6.2f MB (%.2f MiB)  budget %d MB\n", n, s, s / 1e6, s / 1048576, b / 1e6 }' >&2
  if ((size > budget)) && [[ "${PARLEY_SIZE_CHECK:-1}" != 0 ]]; then
    printf 'error: %s is over its size budget\n' "$file" >&2
    return 1
  fi
}

# qemu-user and the arm64 C library (Debian packages), so that arm64 test binaries run on
# this machine: the grammars' parse tables are taken from a host build and must mean the
# same on arm64 (infra/grammars/build.rs). Installs them when it can (root and apt-get);
# returns 1, having said why, when it cannot.
ARM64_SYSROOT=/usr/aarch64-linux-gnu
ensure_arm64_runner() {
  local packages=(qemu-user libc6-arm64-cross libgcc-s1-arm64-cross)
  if command -v qemu-aarch64 >/dev/null 2>&1 && [[ -e "$ARM64_SYSROOT/lib/ld-linux-aarch64.so.1" ]]; then
    return 0
  fi
  if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
    log "no qemu-aarch64 or arm64 glibc, and no root apt-get to install them (${packages[*]})"
    return 1
  fi
  log "installing ${packages[*]} (apt-get)"
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${packages[@]}" >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get update >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${packages[@]}" >/dev/null 2>&1 || {
      log "apt-get could not install ${packages[*]}"
      return 1
    }
  fi
  command -v qemu-aarch64 >/dev/null 2>&1 && [[ -e "$ARM64_SYSROOT/lib/ld-linux-aarch64.so.1" ]]
}
