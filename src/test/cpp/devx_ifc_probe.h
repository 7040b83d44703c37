// devx_ifc_probe.h — what devx_ifc_probe.c reads out of the kernel's mlx5_ifc.h: bit offsets
// and widths of named fields, and struct sizes in bits. Shared by C and C++.
#ifndef TE4J_DEVX_IFC_PROBE_H
#define TE4J_DEVX_IFC_PROBE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct te4j_ifc_entry {
  const char* name; /* "qpc.log_sq_size"; a struct: "qpc" */
  size_t offset;    /* bits from the start of the struct (0 for a struct) */
  size_t bits;      /* width of the field, or size of the struct, in bits */
};

extern const struct te4j_ifc_entry te4j_ifc_fields[];
extern const size_t te4j_ifc_field_count;
extern const struct te4j_ifc_entry te4j_ifc_structs[];
extern const size_t te4j_ifc_struct_count;

#ifdef __cplusplus
}
#endif

#endif
