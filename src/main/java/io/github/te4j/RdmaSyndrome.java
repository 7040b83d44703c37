package io.github.te4j;

/**
 * Words of an error CQE's syndrome (mlx5 / InfiniBand work completion status), for messages of
 * requests that failed over RDMA. The same names as the native side's {@code syndrome_text.cuh}.
 */
final class RdmaSyndrome
{
    /** The syndrome of a request flushed because the queue pair was already in the error state. */
    static final int WR_FLUSH = 0x05;

    private RdmaSyndrome()
    {
    }

    /** "syndrome 0x13 (remote access error ...), vendor syndrome 0x..": word = syndrome | vendor << 8 | opcode << 16. */
    static String describe(final int word)
    {
        final int syndrome = word & 0xff;
        final int vendor = (word >>> 8) & 0xff;
        return "syndrome 0x" + Integer.toHexString(syndrome) + " (" + text(syndrome) + "), vendor syndrome 0x"
            + Integer.toHexString(vendor);
    }

    static String text(final int syndrome)
    {
        switch (syndrome)
        {
            case 0x01:
                return "local length error";
            case 0x02:
                return "local QP operation error";
            case 0x04:
                return "local protection error: the local memory is not registered for this access";
            case WR_FLUSH:
                return "work request flushed: an earlier request on the same queue pair failed, every rank must"
                    + " reconnect the RdmaTransport";
            case 0x10:
                return "bad response";
            case 0x11:
                return "local access error";
            case 0x12:
                return "remote invalid request";
            case 0x13:
                return "remote access error: bad rkey or address outside the owner's registered memory (deregistered"
                    + " since it was published?)";
            case 0x14:
                return "remote operation error";
            case 0x15:
                return "transport retry counter exceeded: the owner is unreachable";
            case 0x16:
                return "RNR retry counter exceeded";
            case 0x22:
                return "remote aborted";
            default:
                return "unknown syndrome";
        }
    }
}
