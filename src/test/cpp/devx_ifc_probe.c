/* devx_ifc_probe.c — the Linux kernel's mlx5 command layout as data, for test_devx_layout.
 *
 * Compiled as C because the header is kernel C that g++ rejects (a struct ending in a flexible
 * array embedded in another struct). mlx5_ifc.h declares each field as `u8 name[bits]`, so
 * offsetof() is a field's bit offset and sizeof() its width in bits. CMake passes the header's
 * path in TE4J_MLX5_IFC_H; this list is written independently of te4j's own table. */
#include <stddef.h>
#include <stdint.h>

#include "devx_ifc_probe.h"

/* What the header expects from the kernel's own headers. */
typedef uint8_t u8;
#define BIT(n) (1UL << (n))
#define BIT_ULL(n) (1ULL << (n))
#define DECLARE_FLEX_ARRAY(TYPE, NAME) \
  struct {                             \
    struct {                           \
    } __empty_##NAME;                  \
    TYPE NAME[];                       \
  }

#include TE4J_MLX5_IFC_H

#define IFC(s) struct mlx5_ifc_##s##_bits
#define FIELD(s, m) \
  { #s "." #m, offsetof(IFC(s), m), sizeof(((IFC(s)*)0)->m) }
#define STRUCT(s) \
  { #s, 0, sizeof(IFC(s)) }

/* Command input header and output header of one command. */
#define IN_HEADER(s) FIELD(s, opcode), FIELD(s, op_mod)
#define OUT_HEADER(s) FIELD(s, status), FIELD(s, syndrome)

const struct te4j_ifc_entry te4j_ifc_fields[] = {
    IN_HEADER(create_cq_in),
    FIELD(create_cq_in, uid),
    FIELD(create_cq_in, cq_context),
    FIELD(create_cq_in, cq_umem_valid),
    OUT_HEADER(create_cq_out),
    FIELD(create_cq_out, cqn),

    FIELD(cqc, dbr_umem_valid),
    FIELD(cqc, cqe_sz),
    FIELD(cqc, log_cq_size),
    FIELD(cqc, uar_page),
    FIELD(cqc, c_eqn_or_apu_element),
    FIELD(cqc, log_page_size),
    FIELD(cqc, dbr_addr),

    IN_HEADER(create_qp_in),
    FIELD(create_qp_in, qpc),
    FIELD(create_qp_in, wq_umem_offset),
    FIELD(create_qp_in, wq_umem_id),
    FIELD(create_qp_in, wq_umem_valid),
    OUT_HEADER(create_qp_out),
    FIELD(create_qp_out, qpn),

    FIELD(qpc, st),
    FIELD(qpc, pm_state),
    FIELD(qpc, pd),
    FIELD(qpc, mtu),
    FIELD(qpc, log_msg_max),
    FIELD(qpc, log_rq_size),
    FIELD(qpc, log_rq_stride),
    FIELD(qpc, no_sq),
    FIELD(qpc, log_sq_size),
    FIELD(qpc, ts_format),
    FIELD(qpc, uar_page),
    FIELD(qpc, log_page_size),
    FIELD(qpc, remote_qpn),
    FIELD(qpc, primary_address_path),
    FIELD(qpc, log_sra_max),
    FIELD(qpc, retry_count),
    FIELD(qpc, rnr_retry),
    FIELD(qpc, next_send_psn),
    FIELD(qpc, cqn_snd),
    FIELD(qpc, log_rra_max),
    FIELD(qpc, atomic_mode),
    FIELD(qpc, rre),
    FIELD(qpc, rwe),
    FIELD(qpc, rae),
    FIELD(qpc, min_rnr_nak),
    FIELD(qpc, next_rcv_psn),
    FIELD(qpc, cqn_rcv),
    FIELD(qpc, dbr_addr),
    FIELD(qpc, rq_type),
    FIELD(qpc, dbr_umem_valid),

    FIELD(ads, pkey_index),
    FIELD(ads, grh),
    FIELD(ads, rlid),
    FIELD(ads, ack_timeout),
    FIELD(ads, src_addr_index),
    FIELD(ads, hop_limit),
    FIELD(ads, tclass),
    FIELD(ads, rgid_rip),
    FIELD(ads, dscp),
    FIELD(ads, udp_sport),
    FIELD(ads, eth_prio),
    FIELD(ads, sl),
    FIELD(ads, vhca_port_num),
    FIELD(ads, rmac_47_32),
    FIELD(ads, rmac_31_0),

    IN_HEADER(rst2init_qp_in),
    FIELD(rst2init_qp_in, qpn),
    FIELD(rst2init_qp_in, opt_param_mask),
    FIELD(rst2init_qp_in, qpc),
    OUT_HEADER(rst2init_qp_out),
    IN_HEADER(init2rtr_qp_in),
    FIELD(init2rtr_qp_in, qpn),
    FIELD(init2rtr_qp_in, opt_param_mask),
    FIELD(init2rtr_qp_in, qpc),
    OUT_HEADER(init2rtr_qp_out),
    IN_HEADER(rtr2rts_qp_in),
    FIELD(rtr2rts_qp_in, qpn),
    FIELD(rtr2rts_qp_in, opt_param_mask),
    FIELD(rtr2rts_qp_in, qpc),
    OUT_HEADER(rtr2rts_qp_out),
    IN_HEADER(qp_2err_in),
    FIELD(qp_2err_in, qpn),
    OUT_HEADER(qp_2err_out),
    IN_HEADER(qp_2rst_in),
    FIELD(qp_2rst_in, qpn),
    OUT_HEADER(qp_2rst_out),

    FIELD(qpc, state),
    FIELD(qpc, hw_sq_wqebb_counter),
    FIELD(qpc, sw_sq_wqebb_counter),
    IN_HEADER(query_qp_in),
    FIELD(query_qp_in, qpn),
    OUT_HEADER(query_qp_out),
    FIELD(query_qp_out, qpc),

    IN_HEADER(query_hca_cap_in),
    OUT_HEADER(query_hca_cap_out),
    FIELD(query_hca_cap_out, capability),
    FIELD(cmd_hca_cap, log_max_qp_sz),
    FIELD(cmd_hca_cap, log_max_cq_sz),
    FIELD(cmd_hca_cap, log_max_ra_req_qp),
    FIELD(cmd_hca_cap, log_max_ra_res_qp),
    FIELD(cmd_hca_cap, port_type),
    FIELD(cmd_hca_cap, log_max_msg),
    FIELD(cmd_hca_cap, atomic),
    FIELD(cmd_hca_cap, umem_uid_0),
    FIELD(cmd_hca_cap, sq_ts_format),
    FIELD(cmd_hca_cap, log_bf_reg_size),
    FIELD(roce_cap, qp_ts_format),
    FIELD(atomic_caps, atomic_operations),
    FIELD(atomic_caps, atomic_size_qp),
};
const size_t te4j_ifc_field_count = sizeof(te4j_ifc_fields) / sizeof(te4j_ifc_fields[0]);

const struct te4j_ifc_entry te4j_ifc_structs[] = {
    STRUCT(create_cq_in),
    STRUCT(create_cq_out),
    STRUCT(cqc),
    STRUCT(create_qp_in),
    STRUCT(create_qp_out),
    STRUCT(qpc),
    STRUCT(ads),
    STRUCT(rst2init_qp_in),
    STRUCT(rst2init_qp_out),
    STRUCT(init2rtr_qp_in),
    STRUCT(init2rtr_qp_out),
    STRUCT(rtr2rts_qp_in),
    STRUCT(rtr2rts_qp_out),
    STRUCT(qp_2err_in),
    STRUCT(qp_2err_out),
    STRUCT(qp_2rst_in),
    STRUCT(qp_2rst_out),
    STRUCT(query_hca_cap_in),
    STRUCT(query_hca_cap_out),
    STRUCT(cmd_hca_cap),
    STRUCT(atomic_caps),
    STRUCT(roce_cap),
    STRUCT(query_qp_in),
    STRUCT(query_qp_out),
};
const size_t te4j_ifc_struct_count = sizeof(te4j_ifc_structs) / sizeof(te4j_ifc_structs[0]);
