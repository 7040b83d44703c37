#!/usr/bin/env bash
# Installs te4j into the local Maven repository and builds + runs examples/consumer, a separate
# project that only depends on the jar: it must load the natives from the jar and run the
# two-rank example without building anything native.
set -euo pipefail
cd "$(dirname "$0")/.."
mvn -q -B -ntp install -DskipTests
cd examples/consumer
mvn -q -B -ntp compile exec:exec 2>&1 | tee target-consumer.log
grep -q "example passed" target-consumer.log
rm -f target-consumer.log
echo "consumer project: OK"
