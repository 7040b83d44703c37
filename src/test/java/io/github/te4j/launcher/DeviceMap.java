package io.github.te4j.launcher;

import io.github.te4j.Availability;

/**
 * Which CUDA device each rank uses when nothing else says: round-robin over the devices present,
 * so any number of ranks runs on any number of GPUs (all of them on device 0 where there is only
 * one). Ranks that share a device reach each other without a peer path: in one process through
 * direct pointers, across processes through CUDA IPC on that device. Ranks on different devices
 * need NVLink or PCIe peer access.
 *
 * <p>Several processes on one GPU only time-slice it: a kernel spinning on a signal word holds
 * its slice while the process that would write the word waits for the next one. Callers keep
 * their deadlines generous for that, never tight enough to measure it.
 */
public final class DeviceMap
{
    private DeviceMap()
    {
    }

    /** Device of {@code rank} with {@code deviceCount} devices present: {@code rank % deviceCount}. */
    public static int deviceOf(final int rank, final int deviceCount)
    {
        if (rank < 0)
        {
            throw new IllegalArgumentException("rank " + rank + " is negative");
        }
        if (deviceCount < 1)
        {
            throw new IllegalArgumentException("no CUDA device to map rank " + rank + " to (device count "
                + deviceCount + ")");
        }
        return rank % deviceCount;
    }

    /** Device of {@code rank} among the CUDA devices this process sees. */
    public static int deviceOf(final int rank)
    {
        return deviceOf(rank, Availability.cudaDeviceCount());
    }

    /** The devices of ranks {@code 0 .. world-1}, round-robin over {@code deviceCount}. */
    public static int[] devices(final int world, final int deviceCount)
    {
        final int[] d = new int[world];
        for (int r = 0; r < world; r++)
        {
            d[r] = deviceOf(r, deviceCount);
        }
        return d;
    }

    /** Whether memory on {@code b} can be mapped from {@code a}: the same device, or peer access. */
    public static boolean canReach(final int a, final int b)
    {
        return a == b || Availability.cudaCanAccessPeer(a, b) && Availability.cudaCanAccessPeer(b, a);
    }

    /**
     * Why ranks placed on {@code devices} cannot all map each other's memory, or null when every
     * pair can (the same device or peer access both ways).
     */
    public static String unreachable(final int[] devices)
    {
        for (int a = 0; a < devices.length; a++)
        {
            for (int b = a + 1; b < devices.length; b++)
            {
                if (!canReach(devices[a], devices[b]))
                {
                    return "ranks " + a + " and " + b + " are on CUDA devices " + devices[a] + " and " + devices[b]
                        + ", which have no peer access to each other (no NVLink or PCIe P2P path; see nvidia-smi"
                        + " topo -m)";
                }
            }
        }
        return null;
    }

    /**
     * Why {@code world} ranks cannot run here on CUDA with the round-robin map, or null when they
     * can: CUDA unavailable, or two devices of the map without peer access.
     */
    public static String cudaUnavailableFor(final int world)
    {
        final int n = Availability.cudaDeviceCount();
        if (n < 1)
        {
            return "no CUDA device: " + Availability.describe();
        }
        return unreachable(devices(world, n));
    }

    /** One line naming the map, e.g. "3 ranks on 1 CUDA device: 0 0 0". */
    public static String describe(final int[] devices, final int deviceCount)
    {
        final StringBuilder s = new StringBuilder();
        s.append(devices.length).append(devices.length == 1 ? " rank" : " ranks").append(" on ").append(deviceCount)
            .append(deviceCount == 1 ? " CUDA device:" : " CUDA devices:");
        for (final int d : devices)
        {
            s.append(' ').append(d);
        }
        return s.toString();
    }
}
