package io.github.te4j.launcher;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.testng.SkipException;

/**
 * Two network namespaces joined by a veth pair (10.213.N.1/24 and 10.213.N.2/24), for ranks
 * that must not share a network stack. {@link #create()} throws {@link SkipException} with the
 * reason when namespaces cannot be made here (not root, no iproute2, no CAP_NET_ADMIN);
 * {@link #close()} deletes both namespaces (and with them the veth pair).
 */
public final class VethPair implements AutoCloseable
{
    private final String[] namespaces;
    private final String[] addresses;
    private final String[] devices;

    private VethPair(final String[] namespaces, final String[] addresses, final String[] devices)
    {
        this.namespaces = namespaces;
        this.addresses = addresses;
        this.devices = devices;
    }

    public static VethPair create()
    {
        final int id = ThreadLocalRandom.current().nextInt(1, 250);
        final String tag = Long.toString(ProcessHandle.current().pid() % 100000) + "x" + id;
        final String[] ns = {"te4j-" + tag + "-a", "te4j-" + tag + "-b"};
        final String[] dev = {"t4" + tag + "a", "t4" + tag + "b"};
        final String[] ip = {"10.213." + id + ".1", "10.213." + id + ".2"};
        final VethPair pair = new VethPair(ns, ip, dev);
        final List<List<String>> steps = new ArrayList<>();
        steps.add(List.of("ip", "netns", "add", ns[0]));
        steps.add(List.of("ip", "netns", "add", ns[1]));
        steps.add(List.of("ip", "link", "add", dev[0], "type", "veth", "peer", "name", dev[1]));
        for (int i = 0; i < 2; i++)
        {
            steps.add(List.of("ip", "link", "set", dev[i], "netns", ns[i]));
            steps.add(List.of("ip", "-n", ns[i], "addr", "add", ip[i] + "/24", "dev", dev[i]));
            steps.add(List.of("ip", "-n", ns[i], "link", "set", dev[i], "up"));
            steps.add(List.of("ip", "-n", ns[i], "link", "set", "lo", "up"));
        }
        for (final List<String> step : steps)
        {
            final String failure = run(step);
            if (failure != null)
            {
                pair.close();
                run(List.of("ip", "link", "del", dev[0]));
                throw new SkipException("cannot make network namespaces here (needs root / CAP_NET_ADMIN and "
                    + "iproute2): " + failure);
            }
        }
        return pair;
    }

    /** The namespace of rank {@code rank} (0 or 1). */
    public String namespace(final int rank)
    {
        return namespaces[rank];
    }

    /** The IPv4 address of rank {@code rank}'s end of the pair. */
    public String address(final int rank)
    {
        return addresses[rank];
    }

    /** Takes rank's end of the pair down: from then on nothing reaches or leaves its namespace. */
    public boolean linkDown(final int rank)
    {
        return run(List.of("ip", "-n", namespaces[rank], "link", "set", devices[rank], "down")) == null;
    }

    @Override
    public void close()
    {
        for (final String ns : namespaces)
        {
            run(List.of("ip", "netns", "del", ns));
        }
    }

    /** Runs a command with a 20 s bound; null on success, else what failed and its output. */
    private static String run(final List<String> cmd)
    {
        try
        {
            final Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            if (!p.waitFor(20, TimeUnit.SECONDS))
            {
                p.destroyForcibly();
                return String.join(" ", cmd) + ": timed out";
            }
            final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            return p.exitValue() == 0 ? null : String.join(" ", cmd) + " exited " + p.exitValue() + ": " + out;
        }
        catch (final IOException e)
        {
            return String.join(" ", cmd) + ": " + e.getMessage();
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
            return String.join(" ", cmd) + ": interrupted";
        }
    }
}
