package io.github.te4j;

/** CUDA C++ sources of the user-kernel tests, written against te4j's device headers. */
final class UserKernelSources
{
    /**
     * Every thread copies its strided share of n bytes to rank dst's copy of dst_local (a local
     * symmetric address), then one thread per block signals once: the receiver waits for
     * gridDim.x * value.
     */
    static final String PUT_SIGNAL = KernelCompilerTest.PUT_SIGNAL;

    /** Every thread adds 1 to rank dst's copy of word, rounds times: a many-writer total. */
    static final String ADD_MANY = """
        #include "transport/device/comm_device.cuh"
        using namespace mooncake::device;
        extern "C" __global__ void add_many(CommCtx ctx, int dst, uint32_t* word, int rounds, int* failures)
        {
            for (int i = 0; i < rounds; ++i)
            {
                if (mc_red_add(ctx, dst, 0, 1, word, 1u) != 0)
                {
                    atomicAdd(failures, 1);
                }
            }
        }
        """;

    /**
     * Two phases separated by a grid-wide barrier, which only a cooperative launch makes safe
     * (every block resident). The barrier is bounded: a block that waits past timeout_ns traps.
     */
    static final String GRID_EXCHANGE = """
        #include "transport/device/comm_device.cuh"
        using namespace mooncake::device;
        extern "C" __global__ void grid_exchange(uint32_t* arrived, int* a, int* b, unsigned long long timeout_ns)
        {
            if (threadIdx.x == 0)
            {
                a[blockIdx.x] = (int)blockIdx.x * 7 + 1;
                __threadfence();
                atomicAdd(arrived, 1u);
                const unsigned long long deadline = mc_globaltimer_ns() + timeout_ns;
                while (mc_ld_acquire_u32(arrived) < gridDim.x)
                {
                    if (mc_globaltimer_ns() > deadline)
                    {
                        __trap();
                    }
                }
                __threadfence();
            }
            __syncthreads();
            if (threadIdx.x == 0)
            {
                b[blockIdx.x] = ((volatile int*)a)[(blockIdx.x + 1) % gridDim.x];
            }
        }
        """;

    /** Faults on purpose: a store to an address no allocation holds. */
    static final String POKE = """
        extern "C" __global__ void poke(int* p)
        {
            *(volatile int*)p = 1;
        }
        """;

    /** A bounded wait that gives up with a trap: how a user kernel reports a timeout. */
    static final String WAIT_OR_TRAP = """
        #include "transport/device/comm_device.cuh"
        using namespace mooncake::device;
        extern "C" __global__ void wait_or_trap(const uint32_t* sig, uint32_t expected, unsigned long long timeout_ns)
        {
            if (!mc_wait_signal(sig, expected, mc_globaltimer_ns() + timeout_ns))
            {
                __trap();
            }
        }
        """;

    private UserKernelSources()
    {
    }
}
