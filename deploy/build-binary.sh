#!/bin/sh
# Builds the proxysim binary exactly as the container image does
# (deploy/Dockerfile runs this script) and as CI checks it (.ci/run): a
# static binary (CGO_ENABLED=0), -trimpath, symbols stripped, and the VCS
# revision stamped in (reports carry it on their version line), given as
# the second argument since a Docker build context has no .git.
#
# Usage, from the repository root: sh deploy/build-binary.sh OUTPUT [REVISION]
set -eu
out=${1:?usage: sh deploy/build-binary.sh OUTPUT [REVISION]}
rev=${2:-}
CGO_ENABLED=0 exec go build -trimpath -buildvcs=false \
  -ldflags "-s -w -X github.com/proxysim/proxysim/internal/sim.revision=$rev" \
  -o "$out" ./cmd/proxysim
