#!/usr/bin/env bash
# Builds the Go example bot offline, in GOPATH mode, against Debian's Go packages:
#
#   apt-get install golang-go golang-google-grpc-dev golang-google-protobuf-dev \
#     golang-github-golang-protobuf-1-5-dev protoc-gen-go protoc-gen-go-grpc
#
#   examples/go/build.sh [OUT_DIR]     # default: examples/go/build; prints the binary's path
#
# The Go code of the contract is generated here from ../../proto (never committed): protoc with
# protoc-gen-go and protoc-gen-go-grpc writes it under OUT_DIR/src at the import path the
# .proto files' go_package names, rami.invalid/gen/go/rami/v1 (no M mapping needed). Then
# `go build` runs with GOPATH=OUT_DIR:/usr/share/gocode, GO111MODULE=off and GOPROXY=off: no
# module is downloaded. PROTOC picks another protoc, e.g. PROTOC="python3 -m grpc_tools.protoc".
# Exit 2 when a tool or package is missing (the message says which).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
proto_root="${RAMI_PROTO_DIR:-$here/../../proto}"
out="${1:-$here/build}"
gocode="${RAMI_GOCODE:-/usr/share/gocode}"

missing=()
command -v go >/dev/null 2>&1 || missing+=("go (golang-go)")
command -v protoc-gen-go >/dev/null 2>&1 || missing+=("protoc-gen-go")
command -v protoc-gen-go-grpc >/dev/null 2>&1 || missing+=("protoc-gen-go-grpc")
for pkg in google.golang.org/grpc:golang-google-grpc-dev \
  google.golang.org/protobuf:golang-google-protobuf-dev \
  google.golang.org/genproto/googleapis/rpc/errdetails:golang-google-genproto-dev \
  github.com/golang/protobuf/ptypes:golang-github-golang-protobuf-1-5-dev; do
  [ -d "$gocode/src/${pkg%%:*}" ] || missing+=("${pkg#*:} ($gocode/src/${pkg%%:*})")
done
# golang-github-golang-protobuf-1-3-dev provides the same import path with an older runtime, not
# built on google.golang.org/protobuf as the generated code and grpc-go 1.33 expect: 1-5 is.
if [ -d "$gocode/src/github.com/golang/protobuf/ptypes" ] &&
  ! grep -q 'google.golang.org/protobuf' "$gocode/src/github.com/golang/protobuf/proto/proto.go" 2>/dev/null; then
  missing+=("golang-github-golang-protobuf-1-5-dev (the installed github.com/golang/protobuf is older)")
fi
read -r -a protoc <<<"${PROTOC:-protoc}"
command -v "${protoc[0]}" >/dev/null 2>&1 || missing+=("protoc (protobuf-compiler, or set PROTOC)")
[ -f "$proto_root/rami/v1/table_service.proto" ] ||
  missing+=("the contract's .proto files under $proto_root (set RAMI_PROTO_DIR to the proto folder of a Rami checkout)")
if [ ${#missing[@]} -gt 0 ]; then
  joined="$(printf '%s; ' "${missing[@]}")"
  echo "rami-go-bot build: missing ${joined%; }" >&2
  exit 2
fi

mkdir -p "$out/src" "$out/bin"
rm -rf "$out/src/rami.invalid"
"${protoc[@]}" -I"$proto_root" --go_out="$out/src" --go-grpc_out="$out/src" \
  "$proto_root"/rami/v1/*.proto

cd "$here"
# go needs a build cache; without HOME (a bare CI shell) keep one beside the build.
if [ -z "${GOCACHE:-}" ] && [ -z "${XDG_CACHE_HOME:-}" ] && [ -z "${HOME:-}" ]; then
  export GOCACHE="$out/.gocache"
fi
env GOPATH="$out:$gocode" GO111MODULE=off GOPROXY=off GOFLAGS= \
  go build -o "$out/bin/rami-go-bot" .
echo "$out/bin/rami-go-bot"
