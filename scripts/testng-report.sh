#!/usr/bin/env bash
# What a TestNG run left undone, from its testng-results.xml: the counts, then each test or
# configuration method that failed or was skipped, with the first line of its reason (a skip names
# what is missing). Exit status 1 when something failed (a configuration method included) or no
# test passed; skips alone leave it 0 (the caller decides what a skip means where it runs).
#
#   scripts/testng-report.sh RESULTS_XML [NAME]
set -uo pipefail
xml=$1
name=${2:-$xml}
if [ ! -s "$xml" ]; then
  echo "$name: no TestNG results ($xml): the run did not finish"
  exit 1
fi
awk -v name="$name" '
  function attr(line, key,    m) {
    if (match(line, " " key "=\"[^\"]*\"")) return substr(line, RSTART + length(key) + 3, RLENGTH - length(key) - 4)
    return ""
  }
  /<testng-results / {
    printf "%s: %s passed, %s failed, %s skipped\n", name, attr($0, "passed"), attr($0, "failed"), attr($0, "skipped")
    passed = attr($0, "passed") + 0
  }
  /<class name=/ { cls = attr($0, "name") }
  /<test-method / {
    st = attr($0, "status"); method = attr($0, "name"); cfg = $0 ~ /is-config="true"/
    pending = st == "FAIL" || st == "SKIP"; inmsg = 0; why = ""
    if (st == "FAIL") failed = 1
  }
  pending && /<message>/ { inmsg = 1; next }
  pending && inmsg {
    why = $0; sub(/^[ \t]*(<!\[CDATA\[)?/, "", why); sub(/\]\]>.*$/, "", why); inmsg = 0
  }
  pending && /<\/test-method>/ {
    printf "  %s %s.%s%s: %s\n", st, cls, method, cfg ? " (configuration)" : "", why == "" ? "(no reason given)" : why
    pending = 0
  }
  END { exit (failed || passed == 0) ? 1 : 0 }
' "$xml"
