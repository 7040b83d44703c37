#!/usr/bin/env bash
# The main job: builds te4j (if needed) and runs the benchmark jar. Arguments go to the jar
# (none: it detects the platforms, starts the ranks itself and prints a table).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh
[ -x /usr/local/cuda/bin/nvcc ] && export PATH=/usr/local/cuda/bin:$PATH
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
jar=$(ls bench/target/te4j-bench-*.jar 2>/dev/null | grep -v -- 'original-\|-tests.jar\|-sources.jar\|-javadoc.jar' | head -1 || true)
if [ -z "$jar" ] || [ -n "$(find pom.xml */pom.xml src CMakeLists.txt bench/src -newer "$jar" -print -quit)" ]; then
  mvn -q -B -ntp -f parent/pom.xml package -DskipTests -pl :te4j-bench -am
  jar=$(ls bench/target/te4j-bench-*.jar | grep -v -- 'original-\|-tests.jar\|-sources.jar\|-javadoc.jar' | head -1)
fi
exec java --enable-native-access=ALL-UNNAMED -jar "$jar" "$@"
