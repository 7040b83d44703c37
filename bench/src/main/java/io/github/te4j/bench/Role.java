package io.github.te4j.bench;

/** Whose figure a result row is. */
public enum Role
{
    /** te4j's own operation. */
    TE4J,
    /** A baseline measured by te4j-bench in the same run (copy engine, SM kernel, memcpy, raw flag). */
    BASELINE,
    /** A peer program's own figure (NVSHMEM, NCCL), parsed from its output: not verified by te4j-bench. */
    PEER
}
