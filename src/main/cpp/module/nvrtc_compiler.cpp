// nvrtc_compiler.cpp — NVRTC through dlopen: te4j/module_api.h's nvrtcLoad and
// NvrtcCompilation. Plain C++ (no CUDA header): NVRTC's C ABI is declared here, so the host-only
// build compiles kernels too and libte4j never links libnvrtc.
#include <dlfcn.h>
#include <limits.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <sstream>

#include "te4j/module_api.h"
#include "module/module_errors.h"

namespace te4j {
namespace {

// NVRTC's C ABI (nvrtc.h): results are an int enum, programs an opaque pointer.
using NvrtcProgram = void*;
constexpr int kNvrtcSuccess = 0;
using VersionFn = int (*)(int*, int*);
using CreateFn = int (*)(NvrtcProgram*, const char*, const char*, int, const char* const*,
                         const char* const*);
using DestroyFn = int (*)(NvrtcProgram*);
using CompileFn = int (*)(NvrtcProgram, int, const char* const*);
using SizeFn = int (*)(NvrtcProgram, std::size_t*);
using GetFn = int (*)(NvrtcProgram, char*);
using AddNameFn = int (*)(NvrtcProgram, const char*);
using LoweredFn = int (*)(NvrtcProgram, const char*, const char**);
using ErrorStringFn = const char* (*)(int);

struct NvrtcApi {
  void* handle = nullptr;
  void* builtins = nullptr;
  std::string library;
  int version = 0;
  VersionFn version_fn = nullptr;
  CreateFn create = nullptr;
  DestroyFn destroy = nullptr;
  CompileFn compile = nullptr;
  SizeFn log_size = nullptr;
  GetFn log = nullptr;
  SizeFn cubin_size = nullptr;
  GetFn cubin = nullptr;
  SizeFn ptx_size = nullptr;
  GetFn ptx = nullptr;
  AddNameFn add_name = nullptr;
  LoweredFn lowered = nullptr;
  ErrorStringFn error_string = nullptr;
};

std::mutex g_mu;
NvrtcApi g_api;  // filled once under g_mu, never changed after handle is set
thread_local std::string t_error;

std::vector<std::string> splitLines(const char* joined) {
  std::vector<std::string> out;
  if (joined == nullptr) return out;
  std::istringstream in(joined);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

// The sonames te4j knows, newest first: CUDA 13's, CUDA 12's, CUDA 11.2-11.8's (one soname for
// all of 11.x from 11.2 on), then the unversioned development link.
constexpr const char* kSonames[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2",
                                    "libnvrtc.so"};

std::vector<std::string> defaultCandidates() {
  std::vector<std::string> out;
  const char* env = std::getenv("TE4J_NVRTC_LIBRARY");
  if (env != nullptr && *env != '\0') out.push_back(env);
  for (const char* name : kSonames) out.push_back(name);
  for (const char* dir : {"/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib",
                          "/usr/local/cuda-13.0/targets/x86_64-linux/lib"}) {
    for (const char* name : kSonames) out.push_back(std::string(dir) + "/" + name);
  }
  return out;
}

// NVRTC opens its builtins library (libnvrtc-builtins.so.<major>.<minor>) by soname during the
// first compile, so a libnvrtc outside the loader's path (an unpacked package, a wheel) fails
// there unless its builtins are on that path too. Opening the builtins beside it first lets that
// later dlopen find the loaded copy by its soname. Returns the handle (kept open while NVRTC is in
// use), or null with why in *why when they are neither beside the library nor on the path.
void* openBuiltins(void* nvrtc, int major, int minor, std::string* why) {
  const std::string soname =
      "libnvrtc-builtins.so." + std::to_string(major) + "." + std::to_string(minor);
  char origin[PATH_MAX + 1] = {0};  // RTLD_DI_ORIGIN writes up to PATH_MAX bytes
  if (dlinfo(nvrtc, RTLD_DI_ORIGIN, origin) == 0 && origin[0] != '\0') {
    const std::string beside = std::string(origin) + "/" + soname;
    if (void* h = dlopen(beside.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
  }
  if (void* h = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
  const char* err = dlerror();
  *why = "NVRTC " + std::to_string(major) + "." + std::to_string(minor) +
         " loaded but its builtins library " + soname +
         " is neither beside it nor on the "
         "loader's path (" +
         (err != nullptr ? err : "not found") +
         "); NVRTC cannot compile "
         "without it";
  return nullptr;
}

template <typename Fn>
bool bind(void* handle, const char* symbol, Fn* out, std::string* missing) {
  *out = reinterpret_cast<Fn>(dlsym(handle, symbol));
  if (*out == nullptr) *missing += std::string(missing->empty() ? "" : ", ") + symbol;
  return *out != nullptr;
}

// Binds every function te4j uses from an opened library; false (with the missing names) when
// the library is not a usable NVRTC.
bool bindAll(void* handle, NvrtcApi* api, std::string* missing) {
  bool ok = bind(handle, "nvrtcVersion", &api->version_fn, missing);
  ok &= bind(handle, "nvrtcCreateProgram", &api->create, missing);
  ok &= bind(handle, "nvrtcDestroyProgram", &api->destroy, missing);
  ok &= bind(handle, "nvrtcCompileProgram", &api->compile, missing);
  ok &= bind(handle, "nvrtcGetProgramLogSize", &api->log_size, missing);
  ok &= bind(handle, "nvrtcGetProgramLog", &api->log, missing);
  ok &= bind(handle, "nvrtcGetCUBINSize", &api->cubin_size, missing);
  ok &= bind(handle, "nvrtcGetCUBIN", &api->cubin, missing);
  ok &= bind(handle, "nvrtcGetPTXSize", &api->ptx_size, missing);
  ok &= bind(handle, "nvrtcGetPTX", &api->ptx, missing);
  ok &= bind(handle, "nvrtcAddNameExpression", &api->add_name, missing);
  ok &= bind(handle, "nvrtcGetLoweredName", &api->lowered, missing);
  ok &= bind(handle, "nvrtcGetErrorString", &api->error_string, missing);
  return ok;
}

std::string resultText(int r) {
  const char* s = g_api.error_string != nullptr ? g_api.error_string(r) : nullptr;
  return std::string(s != nullptr ? s : "NVRTC error") + " (" + std::to_string(r) + ")";
}

// Whether `options` chooses a real architecture (sm_XY: a cubin) rather than a virtual one.
bool targetsRealArch(const std::vector<std::string>& options) {
  bool real = false;
  for (std::size_t i = 0; i < options.size(); ++i) {
    std::string o = options[i];
    std::string value;
    for (const char* prefix : {"--gpu-architecture=", "-arch=", "--gpu-architecture", "-arch"}) {
      const std::size_t n = std::strlen(prefix);
      if (o.compare(0, n, prefix) == 0) {
        value = o.substr(n);
        if (value.empty() && i + 1 < options.size()) value = options[i + 1];
        break;
      }
    }
    if (!value.empty()) real = value.compare(0, 3, "sm_") == 0;
  }
  return real;
}

}  // namespace

int moduleFail(int status, const std::string& message) {
  t_error = message;
  return status;
}

const char* moduleLastError() { return t_error.c_str(); }

int nvrtcLoad(const char* candidates) {
  std::lock_guard<std::mutex> lock(g_mu);
  std::vector<std::string> names = splitLines(candidates);
  const bool probe = !names.empty();
  if (!probe && g_api.handle != nullptr) return g_api.version;
  if (!probe) names = defaultCandidates();
  std::string tried;
  std::string absent;
  for (const std::string& name : names) {
    void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* err = dlerror();
      const std::string why = err != nullptr ? err : "";
      if (why.empty() || why.find("No such file") != std::string::npos) {
        absent += (absent.empty() ? "" : ", ") + name;  // the common case, listed on one line
      } else {
        tried += "\n  " + why;  // dlerror names the library itself
      }
      continue;
    }
    NvrtcApi api;
    std::string missing;
    if (!bindAll(handle, &api, &missing)) {
      tried += "\n  " + name + ": not a usable NVRTC (missing " + missing + ")";
      dlclose(handle);
      continue;
    }
    int major = 0;
    int minor = 0;
    if (api.version_fn(&major, &minor) != kNvrtcSuccess) {
      tried += "\n  " + name + ": nvrtcVersion failed";
      dlclose(handle);
      continue;
    }
    std::string why;
    void* builtins = openBuiltins(handle, major, minor, &why);
    if (builtins == nullptr) {
      tried += "\n  " + name + ": " + why;
      dlclose(handle);
      continue;
    }
    api.handle = handle;
    api.builtins = builtins;
    api.library = name;
    api.version = major * 1000 + minor * 10;
    if (g_api.handle == nullptr) {
      g_api = api;
    } else {
      // A probe while one is loaded: the loaded one stays in use. Closing only drops this
      // probe's references; a library that is also the one in use stays mapped.
      dlclose(builtins);
      dlclose(handle);
    }
    return api.version;
  }
  if (!absent.empty()) tried = "\n  not found: " + absent + tried;
  return moduleFail(
      kUnavailable,
      "NVRTC (CUDA's run-time compiler) is unavailable: no library loaded, tried:" + tried +
          "\nfix: install NVRTC 12 or newer with its builtins library (the CUDA "
          "toolkit's libnvrtc, e.g. NVIDIA's package cuda-nvrtc-13-0, or Debian's "
          "non-free libnvrtc12 + libnvrtc-builtins12.4), add its folder to "
          "LD_LIBRARY_PATH, or name the library with -Dte4j.nvrtc.library="
          "/path/libnvrtc.so.12 (environment: TE4J_NVRTC_LIBRARY); or compile "
          "offline with nvcc and load the cubin/PTX instead");
}

std::string nvrtcLibrary() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_api.library;
}

NvrtcCompilation* NvrtcCompilation::compile(const char* source, const char* name,
                                            const char* options, const char* name_expressions) {
  auto* c = new (std::nothrow) NvrtcCompilation();
  if (c == nullptr) return nullptr;
  if (source == nullptr || name == nullptr) {
    c->status_ = c->fail(kInvalidArgument, "compile: source or name is null");
    return c;
  }
  if (nvrtcLoad("") < 0) {
    c->status_ = c->fail(kUnavailable, t_error);
    return c;
  }
  const std::vector<std::string> opts = splitLines(options);
  const std::vector<std::string> exprs = splitLines(name_expressions);
  std::vector<const char*> argv;
  for (const std::string& o : opts) argv.push_back(o.c_str());

  NvrtcProgram prog = nullptr;
  int r = g_api.create(&prog, source, name, 0, nullptr, nullptr);
  if (r != kNvrtcSuccess) {
    c->status_ = c->fail(kInvalidArgument,
                         std::string("nvrtcCreateProgram(") + name + "): " + resultText(r));
    return c;
  }
  for (const std::string& e : exprs) {
    r = g_api.add_name(prog, e.c_str());
    if (r != kNvrtcSuccess) {
      c->status_ =
          c->fail(kInvalidArgument, "nvrtcAddNameExpression(\"" + e + "\"): " + resultText(r));
      g_api.destroy(&prog);
      return c;
    }
  }
  const int compiled = g_api.compile(prog, static_cast<int>(argv.size()), argv.data());
  std::size_t log_bytes = 0;
  if (g_api.log_size(prog, &log_bytes) == kNvrtcSuccess && log_bytes > 1) {
    std::vector<char> log(log_bytes);
    if (g_api.log(prog, log.data()) == kNvrtcSuccess) c->log_.assign(log.data());
  }
  if (compiled != kNvrtcSuccess) {
    c->status_ = c->fail(kInvalidArgument, std::string("NVRTC could not compile ") + name + ": " +
                                               resultText(compiled) + "\n" + c->log_);
    g_api.destroy(&prog);
    return c;
  }
  c->cubin_ = targetsRealArch(opts);
  std::size_t bytes = 0;
  r = c->cubin_ ? g_api.cubin_size(prog, &bytes) : g_api.ptx_size(prog, &bytes);
  if (r == kNvrtcSuccess && bytes > 0) {
    c->image_.resize(bytes);
    r = c->cubin_ ? g_api.cubin(prog, c->image_.data()) : g_api.ptx(prog, c->image_.data());
  }
  if (r != kNvrtcSuccess || bytes == 0) {
    c->status_ = c->fail(kInvalidArgument, std::string("NVRTC produced no ") +
                                               (c->cubin_ ? "cubin" : "PTX") + " for " + name +
                                               (r != kNvrtcSuccess ? ": " + resultText(r) : ""));
    c->image_.clear();
    g_api.destroy(&prog);
    return c;
  }
  for (const std::string& e : exprs) {
    const char* lowered = nullptr;
    r = g_api.lowered(prog, e.c_str(), &lowered);
    if (r != kNvrtcSuccess || lowered == nullptr) {
      c->status_ =
          c->fail(kInvalidArgument, "nvrtcGetLoweredName(\"" + e + "\"): " + resultText(r) +
                                        " (the expression must name a __global__ function or a "
                                        "template instance of one, e.g. \"&kernel<int>\")");
      g_api.destroy(&prog);
      return c;
    }
    c->lowered_.emplace_back(lowered);
  }
  g_api.destroy(&prog);
  c->ok();
  return c;
}

int NvrtcCompilation::copyImage(void* dst, int64_t capacity) {
  if (dst == nullptr || capacity < imageBytes()) {
    return fail(kInvalidArgument, "copyImage: destination is null or smaller than " +
                                      std::to_string(image_.size()) + " bytes");
  }
  std::memcpy(dst, image_.data(), image_.size());
  return static_cast<int>(image_.size());
}

const char* NvrtcCompilation::loweredName(int index) const {
  if (index < 0 || index >= static_cast<int>(lowered_.size())) return "";
  return lowered_[static_cast<std::size_t>(index)].c_str();
}

}  // namespace te4j
