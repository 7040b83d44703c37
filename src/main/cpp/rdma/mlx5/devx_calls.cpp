// devx_calls.cpp — see devx_calls.h.
#if defined(TE4J_HAVE_RDMA_CORE_HEADERS)

#include "rdma/mlx5/devx_calls.h"

#include <cerrno>
#include <cstring>

namespace te4j {
namespace rdma {

namespace {

// The firmware's verdict when it gave one, else the kernel's errno (bad mailbox length, a
// DevX object of another context, no permission...).
std::string failure(const char* command, int err, const devx::Mailbox& out) {
  if (out.size() >= 8 && devx::outStatus(out) != 0) return devx::describeFailure(command, out);
  return std::string(command) + " failed: " + std::strerror(err) + " (errno " +
         std::to_string(err) + ")";
}

}  // namespace

mlx5dv_devx_obj* devxCreate(const VerbsApi& api, ibv_context* ctx, const char* command,
                            const devx::Mailbox& in, size_t out_bytes, devx::Mailbox* out,
                            std::string* why) {
  out->assign(out_bytes, 0);
  errno = 0;
  mlx5dv_devx_obj* obj = api.devx_obj_create(ctx, in.data(), in.size(), out->data(), out->size());
  const int err = errno != 0 ? errno : EIO;
  if (obj != nullptr && devx::outStatus(*out) == 0) return obj;
  if (obj != nullptr) api.devx_obj_destroy(obj);
  *why = failure(command, err, *out);
  return nullptr;
}

bool devxModify(const VerbsApi& api, mlx5dv_devx_obj* obj, const char* command,
                const devx::Mailbox& in, size_t out_bytes, std::string* why) {
  devx::Mailbox out(out_bytes, 0);
  const int rc = api.devx_obj_modify(obj, in.data(), in.size(), out.data(), out.size());
  if (rc == 0 && devx::outStatus(out) == 0) return true;
  *why = failure(command, rc > 0 ? rc : (errno != 0 ? errno : EIO), out);
  return false;
}

bool devxQuery(const VerbsApi& api, mlx5dv_devx_obj* obj, const char* command,
               const devx::Mailbox& in, size_t out_bytes, devx::Mailbox* out, std::string* why) {
  out->assign(out_bytes, 0);
  const int rc = api.devx_obj_query(obj, in.data(), in.size(), out->data(), out->size());
  if (rc == 0 && devx::outStatus(*out) == 0) return true;
  *why = failure(command, rc > 0 ? rc : (errno != 0 ? errno : EIO), *out);
  return false;
}

bool devxGeneral(const VerbsApi& api, ibv_context* ctx, const char* command,
                 const devx::Mailbox& in, devx::Mailbox* out, std::string* why) {
  const int rc = api.devx_general_cmd(ctx, in.data(), in.size(), out->data(), out->size());
  if (rc == 0 && devx::outStatus(*out) == 0) return true;
  *why = failure(command, rc > 0 ? rc : (errno != 0 ? errno : EIO), *out);
  return false;
}

}  // namespace rdma
}  // namespace te4j

#endif  // TE4J_HAVE_RDMA_CORE_HEADERS
