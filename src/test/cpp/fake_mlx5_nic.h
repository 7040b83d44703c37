// fake_mlx5_nic.h — a VerbsApi whose entry points emulate one ConnectX device "mlx5_0" for
// test_mlx5_backend.cpp: no NIC, no kernel, no rdma-core library involved.
//
// Every context opened gets its own port identity (LID 0x100 + n; RoCE GID ::ffff:10.0.0.(n+1)
// at index 3 after a RoCE v1 entry and a link-local RoCE v2 entry), its own UAR page of ordinary
// memory, and objects numbered from its own counters. DevX commands are decoded with te4j's
// own field table (devx_layout.h); the QP state machine RST→INIT→RTR→RTS is enforced (other
// orders get status "bad resource state"). Every live object is counted, so a test can see
// that a failed step left nothing behind. Knobs make chosen steps fail. QUERY_QP reports the
// state the fake keeps (a test may force one), async events come through a real pipe (the
// context's async_fd), and 2RST counts resets.
#pragma once

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "rdma/mlx5/devx_layout.h"
#include "rdma/mlx5/verbs_api.h"

namespace fake {

namespace devx = te4j::rdma::devx;

enum class Kind { kCq, kQp };
enum class State { kReset, kInit, kRtr, kRts, kErr };

struct Obj {
  Kind kind = Kind::kCq;
  int ctx = 0;
  uint32_t id = 0;  // cqn / qpn
  State state = State::kReset;
  uint32_t umem_id = 0;  // CQ buffer / send ring
  uint64_t umem_offset = 0;
  uint32_t dbr_umem_id = 0;
  uint64_t dbr_offset = 0;
  uint32_t cqn = 0;  // QP: its CQ
  uint32_t log_size = 0;
  uint32_t ts_format = 0;  // QP: qpc.ts_format of CREATE_QP
  devx::Mailbox init2rtr;  // QP: the last INIT2RTR input
  devx::Mailbox rtr2rts;   // QP: the last RTR2RTS input
  int resets = 0;          // QP: 2RST commands from a state other than RESET
};

struct Umem {
  mlx5dv_devx_umem pub{};
  uint8_t* addr = nullptr;
  size_t size = 0;
  uint64_t pgsz_bitmap = 0;  // 0: registered with the legacy call (the kernel picks pages)
};

struct Uar {
  mlx5dv_devx_uar pub{};
  void* page = nullptr;
  bool blueflame = false;
  int ctx = 0;
};

struct Nic {
  // configuration
  std::vector<std::string> device_names{"mlx5_0"};
  bool is_mlx5 = true;  // dv_is_supported's answer (names decide too)
  bool roce = false;
  int dv_open_errno = 0;  // mlx5dv_open_device fails with it (plain open works)
  bool fail_alloc_pd = false, fail_uar_nc = false, fail_uar_bf = false, fail_eqn = false;
  bool fail_general_cmd = false, fail_umem = false, fail_ctrl_mr = false, fail_reg_mr = false;
  bool fail_dmabuf_mr = false;
  bool split_mr_keys = false;           // an MR gets an rkey other than its lkey
  int fail_create_qp_after = -1;        // the (n+1)-th CREATE_QP gets status 0x3, syndrome 0x5a5a
  bool fail_umem_ex = false;            // mlx5dv_devx_umem_reg_ex refuses (EOPNOTSUPP)
  std::vector<std::string> ports_down;  // devices whose port 1 reports DOWN
  uint32_t log_bf_reg_size = 9;
  std::string sysfs_root;

  // state
  std::vector<ibv_device> devices;
  std::map<ibv_context*, int> contexts;
  std::map<ibv_context*, int> event_pipes;  // write end of each context's async_fd pipe
  std::map<ibv_context*, std::vector<ibv_async_event>> events;
  std::map<ibv_pd*, int> pds;
  std::map<ibv_mr*, int> mrs;
  std::map<mlx5dv_devx_umem*, Umem*> umems;
  std::map<mlx5dv_devx_uar*, Uar*> uars;
  std::map<void*, Obj*> objs;
  std::map<ibv_ah*, ibv_gid> ahs;
  int next_context = 0;
  uint32_t next_key = 0x1000, next_umem = 1, next_cqn = 0x40, next_qpn = 0x200;
  int create_qps = 0;
  mlx5_wqe_av av{};  // what dv_init_obj(AH) exposes
  // what the last ibv_reg_dmabuf_mr saw
  uint64_t dmabuf_offset = 0, dmabuf_iova = 0;
  int dmabuf_fd = -1;

  size_t live() const {
    return contexts.size() + pds.size() + mrs.size() + umems.size() + uars.size() + objs.size() +
           ahs.size();
  }
};

inline Nic& nic() {
  static Nic n;
  return n;
}

// ---- identities ------------------------------------------------------------------------------

inline uint16_t lidOf(int ctx) { return (uint16_t)(0x100 + ctx); }
inline ibv_gid roceGidOf(int ctx) {
  ibv_gid g{};
  g.raw[10] = g.raw[11] = 0xff;
  g.raw[12] = 10;
  g.raw[15] = (uint8_t)(ctx + 1);
  return g;
}
inline ibv_gid linkLocalGidOf(int ctx) {
  ibv_gid g{};
  g.raw[0] = 0xfe;
  g.raw[1] = 0x80;
  g.raw[15] = (uint8_t)(0x10 + ctx);
  return g;
}
inline void macOf(const uint8_t gid[16], uint8_t mac[6]) {
  const uint8_t m[6] = {0x02, 0x00, 0x5e, 0x00, 0x00, gid[15]};
  std::memcpy(mac, m, 6);
}

// ---- libibverbs --------------------------------------------------------------------------------

inline ibv_device** getDeviceList(int* n) {
  Nic& f = nic();
  f.devices.assign(f.device_names.size(), ibv_device{});
  auto** list = (ibv_device**)std::calloc(f.devices.size() + 1, sizeof(ibv_device*));
  for (size_t i = 0; i < f.devices.size(); ++i) {
    std::snprintf(f.devices[i].name, sizeof(f.devices[i].name), "%s", f.device_names[i].c_str());
    list[i] = &f.devices[i];
  }
  *n = (int)f.devices.size();
  return list;
}
inline void freeDeviceList(ibv_device** list) { std::free(list); }
inline const char* getDeviceName(ibv_device* d) { return d->name; }

inline ibv_context* newContext(ibv_device* d) {
  auto* c = new ibv_context();
  c->device = d;
  int fds[2] = {-1, -1};
  if (pipe(fds) == 0) nic().event_pipes[c] = fds[1];
  c->async_fd = fds[0];
  nic().contexts[c] = nic().next_context++;
  return c;
}
inline ibv_context* openDevice(ibv_device* d) { return newContext(d); }
inline int closeDevice(ibv_context* c) {
  if (c->async_fd >= 0) close(c->async_fd);
  if (nic().event_pipes.count(c) != 0) close(nic().event_pipes[c]);
  nic().event_pipes.erase(c);
  nic().events.erase(c);
  nic().contexts.erase(c);
  delete c;
  return 0;
}

/// Queues an async event on every open context (as a port event reaches each of them).
inline void raiseAsyncEvent(ibv_event_type type, int port) {
  for (auto& e : nic().contexts) {
    ibv_async_event ev{};
    ev.event_type = type;
    ev.element.port_num = port;
    nic().events[e.first].push_back(ev);
    const char byte = 1;
    if (write(nic().event_pipes[e.first], &byte, 1) != 1) std::abort();
  }
}
inline int getAsyncEvent(ibv_context* c, ibv_async_event* out) {
  std::vector<ibv_async_event>& q = nic().events[c];
  char byte;
  if (q.empty() || read(c->async_fd, &byte, 1) != 1) return -1;
  *out = q.front();
  q.erase(q.begin());
  return 0;
}
inline int acked_events = 0;
inline void ackAsyncEvent(ibv_async_event*) { ++acked_events; }

inline int queryPort(ibv_context* c, uint8_t port, _compat_ibv_port_attr* out) {
  if (port != 1) return EINVAL;
  auto* attr = reinterpret_cast<ibv_port_attr*>(out);
  bool down = false;
  for (const std::string& name : nic().ports_down) down |= name == c->device->name;
  attr->state = down ? IBV_PORT_DOWN : IBV_PORT_ACTIVE;
  attr->active_mtu = IBV_MTU_4096;
  attr->gid_tbl_len = 8;
  attr->link_layer = nic().roce ? IBV_LINK_LAYER_ETHERNET : IBV_LINK_LAYER_INFINIBAND;
  attr->lid = nic().roce ? 0 : lidOf(nic().contexts.at(c));
  return 0;
}

inline int queryGid(ibv_context* c, uint8_t, int index, ibv_gid* gid) {
  const int ctx = nic().contexts.at(c);
  std::memset(gid, 0, sizeof(*gid));
  if (!nic().roce) {
    if (index == 0) {
      gid->raw[0] = 0xfe;
      gid->raw[1] = 0x80;
      gid->raw[15] = (uint8_t)ctx;
    }
    return 0;
  }
  if (index == 0 || index == 2) *gid = linkLocalGidOf(ctx);  // v1 and v2 link-local
  if (index == 1 || index == 3) *gid = roceGidOf(ctx);       // v1 and v2 IPv4-mapped
  return 0;
}

inline ibv_pd* allocPd(ibv_context* c) {
  if (nic().fail_alloc_pd) {
    errno = ENOMEM;
    return nullptr;
  }
  auto* pd = new ibv_pd();
  pd->context = c;
  nic().pds[pd] = 1;
  return pd;
}
inline int deallocPd(ibv_pd* pd) {
  nic().pds.erase(pd);
  delete pd;
  return 0;
}

inline ibv_mr* newMr(ibv_pd* pd, void* addr, size_t len) {
  auto* mr = new ibv_mr();
  mr->pd = pd;
  mr->addr = addr;
  mr->length = len;
  // One mkey serves as both keys, as mlx5_ib gives them (unless a test splits them).
  mr->lkey = mr->rkey = nic().next_key++;
  if (nic().split_mr_keys) mr->rkey = nic().next_key++;
  nic().mrs[mr] = 1;
  return mr;
}
inline ibv_mr* regMr(ibv_pd* pd, void* addr, size_t len, int access) {
  // The control buffer asks for local write only; the window for remote access too.
  const bool control = access == IBV_ACCESS_LOCAL_WRITE;
  if ((control && nic().fail_ctrl_mr) || (!control && nic().fail_reg_mr)) {
    errno = control ? ENOMEM : EFAULT;
    return nullptr;
  }
  return newMr(pd, addr, len);
}
inline ibv_mr* regDmabufMr(ibv_pd* pd, uint64_t offset, size_t len, uint64_t iova, int fd, int) {
  nic().dmabuf_offset = offset;
  nic().dmabuf_iova = iova;
  nic().dmabuf_fd = fd;
  if (nic().fail_dmabuf_mr) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  return newMr(pd, (void*)(uintptr_t)iova, len);
}
inline int deregMr(ibv_mr* mr) {
  nic().mrs.erase(mr);
  delete mr;
  return 0;
}

inline ibv_ah* createAh(ibv_pd* pd, ibv_ah_attr* attr) {
  auto* ah = new ibv_ah();
  ah->pd = pd;
  nic().ahs[ah] = attr->grh.dgid;
  return ah;
}
inline int destroyAh(ibv_ah* ah) {
  nic().ahs.erase(ah);
  delete ah;
  return 0;
}

// ---- libmlx5 -----------------------------------------------------------------------------------

inline bool isSupported(ibv_device*) { return nic().is_mlx5; }

inline ibv_context* dvOpenDevice(ibv_device* d, mlx5dv_context_attr* attr) {
  if (nic().dv_open_errno != 0 || (attr->flags & MLX5DV_CONTEXT_FLAGS_DEVX) == 0) {
    errno = nic().dv_open_errno != 0 ? nic().dv_open_errno : EINVAL;
    return nullptr;
  }
  return newContext(d);
}

inline int dvInitObj(mlx5dv_obj* obj, uint64_t type) {
  if (type & MLX5DV_OBJ_PD) obj->pd.out->pdn = 0x11;
  if (type & MLX5DV_OBJ_AH) {
    const ibv_gid& dgid = nic().ahs.at(obj->ah.in);
    macOf(dgid.raw, nic().av.rmac);
    obj->ah.out->av = &nic().av;
  }
  return 0;
}

inline mlx5dv_devx_umem* umemReg(ibv_context*, void* addr, size_t size, uint32_t) {
  if (nic().fail_umem) {
    errno = ENOMEM;
    return nullptr;
  }
  auto* u = new Umem();
  u->pub.umem_id = nic().next_umem++;
  u->addr = (uint8_t*)addr;
  u->size = size;
  nic().umems[&u->pub] = u;
  return &u->pub;
}
inline mlx5dv_devx_umem* umemRegEx(ibv_context* c, mlx5dv_devx_umem_in* in) {
  if (nic().fail_umem_ex) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  mlx5dv_devx_umem* umem = umemReg(c, in->addr, in->size, in->access);
  if (umem != nullptr) nic().umems.at(umem)->pgsz_bitmap = in->pgsz_bitmap;
  return umem;
}
inline int umemDereg(mlx5dv_devx_umem* umem) {
  Umem* u = nic().umems.at(umem);
  nic().umems.erase(umem);
  delete u;
  return 0;
}
inline Umem* umemById(uint32_t id) {
  for (auto& e : nic().umems)
    if (e.second->pub.umem_id == id) return e.second;
  return nullptr;
}

inline mlx5dv_devx_uar* allocUar(ibv_context* c, uint32_t type) {
  const bool bf = type == MLX5DV_UAR_ALLOC_TYPE_BF;
  if ((bf && nic().fail_uar_bf) || (!bf && nic().fail_uar_nc)) {
    errno = ENOMEM;
    return nullptr;
  }
  auto* u = new Uar();
  u->page = std::aligned_alloc(4096, 4096);
  std::memset(u->page, 0, 4096);
  u->blueflame = bf;
  u->ctx = nic().contexts.at(c);
  u->pub.base_addr = u->page;
  u->pub.reg_addr = (uint8_t*)u->page + 0x800;
  u->pub.page_id = 7;
  nic().uars[&u->pub] = u;
  return &u->pub;
}
inline void freeUar(mlx5dv_devx_uar* uar) {
  Uar* u = nic().uars.at(uar);
  nic().uars.erase(uar);
  std::free(u->page);
  delete u;
}

inline int queryEqn(ibv_context*, uint32_t, uint32_t* eqn) {
  if (nic().fail_eqn) return EINVAL;
  *eqn = 5;
  return 0;
}

// The fake's reply: status and syndrome in the output header.
inline void reply(void* out, size_t outlen, uint8_t status, uint32_t syndrome) {
  devx::Mailbox m(outlen, 0);
  devx::setField(m, devx::kOutStatus, status);
  devx::setField(m, devx::kOutSyndrome, syndrome);
  std::memcpy(out, m.data(), outlen);
}

inline int generalCmd(ibv_context*, const void* in, size_t inlen, void* out, size_t outlen) {
  const devx::Mailbox m((const uint8_t*)in, (const uint8_t*)in + inlen);
  if (nic().fail_general_cmd) {
    reply(out, outlen, devx::kStatusBadOp, 0x77);
    return EREMOTEIO;
  }
  if (devx::getField(m, devx::kInOpcode) != devx::kOpQueryHcaCap) return EINVAL;
  devx::Mailbox o(outlen, 0);
  const devx::Field cap = devx::kQueryHcaCapOutCapability;
  if (devx::getField(m, devx::kInOpMod) == (devx::kCapTypeGeneral << 1 | devx::kCapCurrent)) {
    devx::setField(o, devx::at(cap, devx::kCapLogMaxQpSz), 15);
    devx::setField(o, devx::at(cap, devx::kCapLogMaxCqSz), 22);
    devx::setField(o, devx::at(cap, devx::kCapLogMaxMsg), 30);
    devx::setField(o, devx::at(cap, devx::kCapAtomic), 1);
    devx::setField(o, devx::at(cap, devx::kCapLogMaxRaReqQp), 4);
    devx::setField(o, devx::at(cap, devx::kCapLogMaxRaResQp), 4);
    devx::setField(o, devx::at(cap, devx::kCapLogBfRegSize), nic().log_bf_reg_size);
    devx::setField(o, devx::at(cap, devx::kCapSqTsFormat), 0);  // free-running clock only
  } else if (devx::getField(m, devx::kInOpMod) == (devx::kCapTypeRoce << 1 | devx::kCapCurrent)) {
    devx::setField(o, devx::at(cap, devx::kRoceCapQpTsFormat), 2);  // RoCE: both clocks
  } else {
    devx::setField(o, devx::at(cap, devx::kAtomicCapOperations), 0xf);
    devx::setField(o, devx::at(cap, devx::kAtomicCapSizeQp), 0xc);  // 4 and 8 bytes
  }
  std::memcpy(out, o.data(), outlen);
  return 0;
}

inline mlx5dv_devx_obj* objCreate(ibv_context* c, const void* in, size_t inlen, void* out,
                                  size_t outlen) {
  const devx::Mailbox m((const uint8_t*)in, (const uint8_t*)in + inlen);
  const uint64_t opcode = devx::getField(m, devx::kInOpcode);
  auto* o = new Obj();
  o->ctx = nic().contexts.at(c);
  devx::Mailbox r(outlen, 0);
  if (opcode == devx::kOpCreateCq) {
    const devx::Field cqc = devx::kCreateCqInCqContext;
    o->kind = Kind::kCq;
    o->id = nic().next_cqn++;
    o->umem_id = (uint32_t)devx::getField(m, devx::kCreateCqInUmemId);
    o->umem_offset = devx::getField(m, devx::kCreateCqInUmemOffset);
    o->dbr_umem_id = (uint32_t)devx::getField(m, devx::at(cqc, devx::kCqcDbrUmemId));
    o->dbr_offset = devx::getField(m, devx::at(cqc, devx::kCqcDbrAddr));
    o->log_size = (uint32_t)devx::getField(m, devx::at(cqc, devx::kCqcLogCqSize));
    devx::setField(r, devx::kCreateCqOutCqn, o->id);
  } else if (opcode == devx::kOpCreateQp) {
    if (nic().fail_create_qp_after >= 0 && nic().create_qps++ >= nic().fail_create_qp_after) {
      delete o;
      reply(out, outlen, devx::kStatusBadParam, 0x5a5a);
      errno = EREMOTEIO;
      return nullptr;
    }
    const devx::Field qpc = devx::kCreateQpInQpc;
    o->kind = Kind::kQp;
    o->id = nic().next_qpn++;
    o->umem_id = (uint32_t)devx::getField(m, devx::kCreateQpInWqUmemId);
    o->umem_offset = devx::getField(m, devx::kCreateQpInWqUmemOffset);
    o->dbr_umem_id = (uint32_t)devx::getField(m, devx::at(qpc, devx::kQpcDbrUmemId));
    o->dbr_offset = devx::getField(m, devx::at(qpc, devx::kQpcDbrAddr));
    o->cqn = (uint32_t)devx::getField(m, devx::at(qpc, devx::kQpcCqnSnd));
    o->log_size = (uint32_t)devx::getField(m, devx::at(qpc, devx::kQpcLogSqSize));
    o->ts_format = (uint32_t)devx::getField(m, devx::at(qpc, devx::kQpcTsFormat));
    devx::setField(r, devx::kCreateQpOutQpn, o->id);
  } else {
    delete o;
    reply(out, outlen, devx::kStatusBadOp, 0);
    errno = EINVAL;
    return nullptr;
  }
  std::memcpy(out, r.data(), outlen);
  nic().objs[o] = o;
  return reinterpret_cast<mlx5dv_devx_obj*>(o);
}

inline int objModify(mlx5dv_devx_obj* handle, const void* in, size_t inlen, void* out,
                     size_t outlen) {
  Obj* o = nic().objs.at(handle);
  const devx::Mailbox m((const uint8_t*)in, (const uint8_t*)in + inlen);
  const uint64_t opcode = devx::getField(m, devx::kInOpcode);
  if (o->kind != Kind::kQp || devx::getField(m, devx::kModifyQpInQpn) != o->id) {
    reply(out, outlen, devx::kStatusBadResource, 1);
    return EINVAL;
  }
  State from = State::kReset, to = State::kReset;
  switch (opcode) {
    case devx::kOpRst2InitQp:
      from = State::kReset;
      to = State::kInit;
      break;
    case devx::kOpInit2RtrQp:
      from = State::kInit;
      to = State::kRtr;
      break;
    case devx::kOpRtr2RtsQp:
      from = State::kRtr;
      to = State::kRts;
      break;
    case devx::kOp2RstQp:
      from = o->state;
      to = State::kReset;
      break;
    case devx::kOp2ErrQp:
      from = o->state;
      to = State::kErr;
      break;
    default: reply(out, outlen, devx::kStatusBadOp, 2); return EINVAL;
  }
  if (o->state != from) {
    reply(out, outlen, devx::kStatusBadResourceState, 3);
    return EINVAL;
  }
  if (opcode == devx::kOpInit2RtrQp) o->init2rtr = m;
  if (opcode == devx::kOpRtr2RtsQp) o->rtr2rts = m;
  if (opcode == devx::kOp2RstQp && o->state != State::kReset) ++o->resets;
  o->state = to;
  reply(out, outlen, devx::kStatusOk, 0);
  return 0;
}

inline int objQuery(mlx5dv_devx_obj* handle, const void* in, size_t inlen, void* out,
                    size_t outlen) {
  Obj* o = nic().objs.at(handle);
  const devx::Mailbox m((const uint8_t*)in, (const uint8_t*)in + inlen);
  if (o->kind != Kind::kQp || devx::getField(m, devx::kInOpcode) != devx::kOpQueryQp ||
      devx::getField(m, devx::kQueryQpInQpn) != o->id || outlen < devx::kQueryQpOutBytes) {
    reply(out, outlen, devx::kStatusBadParam, 4);
    return EINVAL;
  }
  devx::Mailbox r(outlen, 0);
  const uint32_t states[] = {devx::kQpStateRst, devx::kQpStateInit, devx::kQpStateRtr,
                             devx::kQpStateRts, devx::kQpStateErr};
  devx::setField(r, devx::at(devx::kQueryQpOutQpc, devx::kQpcState), states[(int)o->state]);
  std::memcpy(out, r.data(), outlen);
  return 0;
}

inline int objDestroy(mlx5dv_devx_obj* handle) {
  Obj* o = nic().objs.at(handle);
  nic().objs.erase(handle);
  delete o;
  return 0;
}

/// The QP object with number qpn (nullptr when none).
inline Obj* qpByNumber(uint32_t qpn) {
  for (auto& e : nic().objs)
    if (e.second->kind == Kind::kQp && e.second->id == qpn) return e.second;
  return nullptr;
}
inline Obj* cqByNumber(uint32_t cqn) {
  for (auto& e : nic().objs)
    if (e.second->kind == Kind::kCq && e.second->id == cqn) return e.second;
  return nullptr;
}

/// The UAR context `ctx` holds (nullptr when none).
inline Uar* uarOf(int ctx) {
  for (auto& e : nic().uars)
    if (e.second->ctx == ctx) return e.second;
  return nullptr;
}

// ---- setup
// ---------------------------------------------------------------------------------------

/// Writes the GID types the RoCE port reports under a fresh sysfs-like directory.
inline std::string makeSysfs() {
  char dir[] = "/tmp/te4j-fake-sysfs-XXXXXX";
  if (mkdtemp(dir) == nullptr) return "";
  std::string path = dir;
  for (const char* part : {"/mlx5_0", "/mlx5_0/ports", "/mlx5_0/ports/1",
                           "/mlx5_0/ports/1/gid_attrs", "/mlx5_0/ports/1/gid_attrs/types"}) {
    mkdir((path + part).c_str(), 0700);
  }
  const char* types[4] = {"IB/RoCE v1", "IB/RoCE v1", "RoCE v2", "RoCE v2"};
  for (int i = 0; i < 4; ++i)
    std::ofstream(path + "/mlx5_0/ports/1/gid_attrs/types/" + std::to_string(i))
        << types[i] << "\n";
  return path;
}

inline void removeSysfs(const std::string& path) {
  if (path.empty()) return;
  for (int i = 0; i < 4; ++i)
    unlink((path + "/mlx5_0/ports/1/gid_attrs/types/" + std::to_string(i)).c_str());
  for (const char* part : {"/mlx5_0/ports/1/gid_attrs/types", "/mlx5_0/ports/1/gid_attrs",
                           "/mlx5_0/ports/1", "/mlx5_0/ports", "/mlx5_0", ""}) {
    rmdir((path + part).c_str());
  }
}

inline te4j::rdma::VerbsApi api(const std::string& sysfs_root) {
  te4j::rdma::VerbsApi a;
  a.get_device_list = &getDeviceList;
  a.free_device_list = &freeDeviceList;
  a.get_device_name = &getDeviceName;
  a.open_device = &openDevice;
  a.close_device = &closeDevice;
  a.query_port = &queryPort;
  a.query_gid = &queryGid;
  a.alloc_pd = &allocPd;
  a.dealloc_pd = &deallocPd;
  a.reg_mr = &regMr;
  a.reg_dmabuf_mr = &regDmabufMr;
  a.dereg_mr = &deregMr;
  a.create_ah = &createAh;
  a.destroy_ah = &destroyAh;
  a.dv_is_supported = &isSupported;
  a.dv_open_device = &dvOpenDevice;
  a.dv_init_obj = &dvInitObj;
  a.devx_umem_reg = &umemReg;
  a.devx_umem_reg_ex = &umemRegEx;
  a.devx_obj_query = &objQuery;
  a.get_async_event = &getAsyncEvent;
  a.ack_async_event = &ackAsyncEvent;
  a.devx_umem_dereg = &umemDereg;
  a.devx_alloc_uar = &allocUar;
  a.devx_free_uar = &freeUar;
  a.devx_query_eqn = &queryEqn;
  a.devx_obj_create = &objCreate;
  a.devx_obj_modify = &objModify;
  a.devx_obj_destroy = &objDestroy;
  a.devx_general_cmd = &generalCmd;
  a.sysfs_root = sysfs_root;
  return a;
}

}  // namespace fake
