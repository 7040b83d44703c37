// devx_calls.h — sending devx_commands.h mailboxes through the VerbsApi table, with failures
// described the same way everywhere (firmware status + syndrome, or the kernel's errno).
#pragma once

#if defined(TE4J_HAVE_RDMA_CORE_HEADERS)

#include <string>

#include "rdma/mlx5/devx_commands.h"
#include "rdma/mlx5/verbs_api.h"

namespace te4j {
namespace rdma {

/// Creates a DevX object from `in`; *out receives the output mailbox (out_bytes). nullptr with
/// *why naming `command` and the firmware status or errno.
mlx5dv_devx_obj* devxCreate(const VerbsApi& api, ibv_context* ctx, const char* command,
                            const devx::Mailbox& in, size_t out_bytes, devx::Mailbox* out,
                            std::string* why);
/// Modifies `obj` (e.g. a QP state transition); false with *why.
bool devxModify(const VerbsApi& api, mlx5dv_devx_obj* obj, const char* command,
                const devx::Mailbox& in, size_t out_bytes, std::string* why);
/// Queries `obj` (QUERY_QP on a QP object); *out receives out_bytes. False with *why.
bool devxQuery(const VerbsApi& api, mlx5dv_devx_obj* obj, const char* command,
               const devx::Mailbox& in, size_t out_bytes, devx::Mailbox* out, std::string* why);
/// A general command (queries); false with *why.
bool devxGeneral(const VerbsApi& api, ibv_context* ctx, const char* command,
                 const devx::Mailbox& in, devx::Mailbox* out, std::string* why);

}  // namespace rdma
}  // namespace te4j

#endif  // TE4J_HAVE_RDMA_CORE_HEADERS
