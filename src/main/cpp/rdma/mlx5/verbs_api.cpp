// verbs_api.cpp — see verbs_api.h.
#if defined(TE4J_HAVE_RDMA_CORE_HEADERS)

#include "rdma/mlx5/verbs_api.h"

#include <dlfcn.h>

#include <atomic>
#include <mutex>

namespace te4j {
namespace rdma {

namespace {

std::mutex g_load_mu;
VerbsApi g_real;  // filled once, under g_load_mu
bool g_real_loaded = false;
std::atomic<const VerbsApi*> g_injected{nullptr};

// Resolves `name` from `lib` into *slot; false (with *missing naming it) when absent.
template <typename Fn>
bool resolve(void* lib, const char* name, Fn* slot, std::string* missing) {
  *slot = reinterpret_cast<Fn>(dlsym(lib, name));
  if (*slot == nullptr && missing->empty()) *missing = name;
  return *slot != nullptr;
}

bool loadReal(std::string* why) {
  void* verbs = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
  if (verbs == nullptr) {
    *why = std::string("libibverbs.so.1 not found (") + dlerror() +
           "); fix: install rdma-core (Debian/Ubuntu: libibverbs1 ibverbs-providers)";
    return false;
  }
  void* mlx5 = dlopen("libmlx5.so.1", RTLD_NOW | RTLD_LOCAL);
  if (mlx5 == nullptr) {
    *why = std::string("libmlx5.so.1 not found (") + dlerror() +
           "); fix: install rdma-core's mlx5 provider (Debian/Ubuntu: ibverbs-providers)";
    dlclose(verbs);
    return false;
  }
  VerbsApi api;
  std::string missing;
  resolve(verbs, "ibv_get_device_list", &api.get_device_list, &missing);
  resolve(verbs, "ibv_free_device_list", &api.free_device_list, &missing);
  resolve(verbs, "ibv_get_device_name", &api.get_device_name, &missing);
  resolve(verbs, "ibv_open_device", &api.open_device, &missing);
  resolve(verbs, "ibv_close_device", &api.close_device, &missing);
  resolve(verbs, "ibv_query_port", &api.query_port, &missing);
  resolve(verbs, "ibv_query_gid", &api.query_gid, &missing);
  resolve(verbs, "ibv_alloc_pd", &api.alloc_pd, &missing);
  resolve(verbs, "ibv_dealloc_pd", &api.dealloc_pd, &missing);
  resolve(verbs, "ibv_reg_mr", &api.reg_mr, &missing);
  resolve(verbs, "ibv_dereg_mr", &api.dereg_mr, &missing);
  resolve(verbs, "ibv_create_ah", &api.create_ah, &missing);
  resolve(verbs, "ibv_destroy_ah", &api.destroy_ah, &missing);
  resolve(mlx5, "mlx5dv_open_device", &api.dv_open_device, &missing);
  resolve(mlx5, "mlx5dv_init_obj", &api.dv_init_obj, &missing);
  resolve(mlx5, "mlx5dv_devx_umem_reg", &api.devx_umem_reg, &missing);
  resolve(mlx5, "mlx5dv_devx_umem_dereg", &api.devx_umem_dereg, &missing);
  resolve(mlx5, "mlx5dv_devx_alloc_uar", &api.devx_alloc_uar, &missing);
  resolve(mlx5, "mlx5dv_devx_free_uar", &api.devx_free_uar, &missing);
  resolve(mlx5, "mlx5dv_devx_query_eqn", &api.devx_query_eqn, &missing);
  resolve(mlx5, "mlx5dv_devx_obj_create", &api.devx_obj_create, &missing);
  resolve(mlx5, "mlx5dv_devx_obj_modify", &api.devx_obj_modify, &missing);
  resolve(mlx5, "mlx5dv_devx_obj_destroy", &api.devx_obj_destroy, &missing);
  resolve(mlx5, "mlx5dv_devx_general_cmd", &api.devx_general_cmd, &missing);
  if (!missing.empty()) {
    *why = "rdma-core is too old: " + missing +
           " is missing (fix: rdma-core 28 or newer, with the mlx5 DevX API)";
    dlclose(mlx5);
    dlclose(verbs);
    return false;
  }
  // Optional: without them te4j skips dma-buf registration / relies on device names /
  // registers umems with the legacy call (one per object) / reports less after a timeout.
  std::string ignored;
  resolve(verbs, "ibv_reg_dmabuf_mr", &api.reg_dmabuf_mr, &ignored);
  resolve(mlx5, "mlx5dv_is_supported", &api.dv_is_supported, &ignored);
  resolve(mlx5, "mlx5dv_devx_umem_reg_ex", &api.devx_umem_reg_ex, &ignored);
  resolve(mlx5, "mlx5dv_devx_obj_query", &api.devx_obj_query, &ignored);
  resolve(verbs, "ibv_get_async_event", &api.get_async_event, &ignored);
  resolve(verbs, "ibv_ack_async_event", &api.ack_async_event, &ignored);
  g_real = api;
  return true;
}

}  // namespace

const VerbsApi* loadVerbsApi(std::string* why) {
  if (const VerbsApi* injected = g_injected.load(std::memory_order_acquire)) return injected;
  std::lock_guard<std::mutex> lock(g_load_mu);
  if (!g_real_loaded) g_real_loaded = loadReal(why);
  return g_real_loaded ? &g_real : nullptr;
}

void injectVerbsApi(const VerbsApi* api) { g_injected.store(api, std::memory_order_release); }

}  // namespace rdma
}  // namespace te4j

#endif  // TE4J_HAVE_RDMA_CORE_HEADERS
