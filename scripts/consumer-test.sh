#!/usr/bin/env bash
# Installs te4j into the local Maven repository, then builds examples/consumer, a separate
# project that depends on te4j-platform alone, and runs its quick start twice: on the class path
# and on the module path, and its serving quick start (a prepared transfer list + notifications).
# Each must load the natives from the platform jar and pass without building anything native.
# The README's serving snippet must be ServingQuickStart's marked lines, word for word.
set -euo pipefail
cd "$(dirname "$0")/.."
# te4j-platform and what it needs (the library at the root, the parent pom)
mvn -q -B -ntp -f parent/pom.xml install -DskipTests -pl :te4j-platform -am
cd examples/consumer
snippet=src/main/java/com/example/ServingQuickStart.java
missing=$(sed -n '/README:begin/,/README:end/p' "$snippet" | grep -v 'README:' | sed 's/^ *//' | while IFS= read -r line; do
  grep -qF -- "$line" ../../README.md || echo "  $line"
done)
if [ -n "$missing" ]; then
  echo "README.md's serving snippet differs from $snippet; lines not in the README:" >&2
  echo "$missing" >&2
  exit 1
fi
mvn -q -B -ntp package
jar=target/te4j-consumer-1.0.jar
run() {
  local log; log=$(mktemp)
  java --enable-native-access=ALL-UNNAMED "$@" 2>&1 | tee "$log"
  grep -q "example passed" "$log"; local st=$?
  rm -f "$log"; return $st
}
run -cp "$jar:target/lib/*" com.example.QuickStart
echo "consumer on the class path: OK"
run -p "$jar:target/lib" --add-modules ALL-MODULE-PATH -m com.example.consumer/com.example.QuickStart
echo "consumer on the module path: OK"
run -cp "$jar:target/lib/*" com.example.ServingQuickStart
echo "serving quick start (list + notifications) on the class path: OK"
