# libFuzzer targets of src/test/fuzz: one program per decoder of bytes that come from outside
# the process (wire frames, WQE rings, handle blobs, ...). Only with clang: -fsanitize=fuzzer is
# clang's. libte4j itself is instrumented for coverage and built with ASan+UBSan, so a bug the
# fuzzer reaches inside the library is reported where it happens, not where it shows. Meant for
# a build folder of its own (scripts/fuzz.sh); the normal build never sees these flags.
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "TE4J_FUZZ needs clang (CXX=clang++): ${CMAKE_CXX_COMPILER_ID} has no libFuzzer")
endif()
if(TE4J_WITH_CUDA)
  message(FATAL_ERROR "TE4J_FUZZ builds the host platform only: configure with -DTE4J_WITH_CUDA=OFF")
endif()
if(TE4J_SANITIZE)
  message(FATAL_ERROR "TE4J_FUZZ chooses its own sanitizers: leave TE4J_SANITIZE empty")
endif()

# clang without compiler-rt's libFuzzer (Debian: libclang-rt-dev) compiles but cannot link.
include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_FLAGS "-fsanitize=fuzzer")
check_cxx_source_compiles([[
#include <cstddef>
#include <cstdint>
extern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }
]] TE4J_HAVE_LIBFUZZER)
unset(CMAKE_REQUIRED_FLAGS)
if(NOT TE4J_HAVE_LIBFUZZER)
  message(FATAL_ERROR "clang cannot link -fsanitize=fuzzer: install compiler-rt (Debian/Ubuntu: libclang-rt-dev)")
endif()

# Any UBSan finding aborts (a crash to libFuzzer) instead of printing and going on.
set(TE4J_FUZZ_SANITIZERS -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
target_compile_options(te4j PRIVATE -fsanitize=fuzzer-no-link ${TE4J_FUZZ_SANITIZERS})
target_link_options(te4j PUBLIC -fsanitize=address,undefined)
# The sanitizer and coverage runtimes are static parts of each fuzz program, so libte4j's own
# link must leave their symbols undefined: -z undefs undoes the library's --no-undefined here.
target_link_options(te4j PRIVATE -Wl,-z,undefs)

# The differential HMAC target compares the NIC's own HMAC-SHA256 with OpenSSL's; OpenSSL is a
# dependency of this target only, never of libte4j.
find_package(OpenSSL QUIET COMPONENTS Crypto)

file(GLOB TE4J_FUZZ_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/test/fuzz/fuzz_*.cpp)
foreach(fuzz_source ${TE4J_FUZZ_SOURCES})
  get_filename_component(fuzz_name ${fuzz_source} NAME_WE)
  if(fuzz_name STREQUAL "fuzz_hmac_sha256" AND NOT OpenSSL_FOUND)
    message(STATUS "te4j: OpenSSL's libcrypto headers not found (libssl-dev): ${fuzz_name} is not built")
    continue()
  endif()
  add_executable(${fuzz_name} ${fuzz_source})
  target_compile_options(${fuzz_name} PRIVATE -fsanitize=fuzzer ${TE4J_FUZZ_SANITIZERS})
  target_link_options(${fuzz_name} PRIVATE -fsanitize=fuzzer)
  target_include_directories(${fuzz_name} PRIVATE ${TE4J_NATIVE_DIRS})
  target_link_libraries(${fuzz_name} PRIVATE te4j Threads::Threads)
  if(fuzz_name STREQUAL "fuzz_hmac_sha256")
    target_link_libraries(${fuzz_name} PRIVATE OpenSSL::Crypto)
  endif()
  set_target_properties(${fuzz_name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz
                        BUILD_RPATH "\$ORIGIN/..")
endforeach()

# Writes the seed corpus (valid encodings and edge cases) with the library's own encoders.
add_executable(fuzz_seeds ${CMAKE_CURRENT_SOURCE_DIR}/src/test/fuzz/seeds/make_seeds.cpp)
target_include_directories(fuzz_seeds PRIVATE ${TE4J_NATIVE_DIRS})
target_link_libraries(fuzz_seeds PRIVATE te4j Threads::Threads)
set_target_properties(fuzz_seeds PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz
                      BUILD_RPATH "\$ORIGIN/..")
