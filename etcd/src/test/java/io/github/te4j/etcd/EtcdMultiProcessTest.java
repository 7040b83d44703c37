package io.github.te4j.etcd;

import io.github.te4j.launcher.EtcdServer;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.testng.annotations.AfterClass;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;

/**
 * Host-platform ranks as separate JVMs ({@link EtcdWorker}) meeting through a real etcd: they
 * exchange window handles over etcd and run put+signal, and the survivors of a rank that is
 * SIGKILLed or SIGSTOPped learn of it from its lease within the TTL plus two seconds.
 */
public class EtcdMultiProcessTest
{
    /** Short, to keep the test fast; long enough for JVMs that start on a loaded machine to renew in time. */
    private static final int TTL_SECONDS = 4;
    private static final Pattern LOST = Pattern.compile("LOST rank=(\\d+) at=(\\d+)");
    private EtcdServer etcd;

    @BeforeClass(alwaysRun = true)
    public void startEtcd() throws Exception
    {
        etcd = EtcdServer.start();
    }

    @AfterClass(alwaysRun = true)
    public void stopEtcd()
    {
        if (etcd != null)
        {
            etcd.close();
        }
    }

    /** The child JVMs of one test, their output gathered by a thread each. */
    static final class Ranks implements AutoCloseable
    {
        final List<Process> procs = new ArrayList<>();
        final List<StringBuilder> out = new ArrayList<>();

        void start(final String uri, final int world, final String modeOfRank0, final int special, final String mode)
            throws IOException
        {
            for (int r = 0; r < world; r++)
            {
                startOne(List.of(), uri, r, world, r == special ? mode : modeOfRank0);
            }
        }

        /** Starts rank {@code r} behind {@code prefix} (e.g. {@code ip netns exec NS}). */
        void startOne(final List<String> prefix, final String uri, final int r, final int world, final String mode)
            throws IOException
        {
            final Path java = Paths.get(System.getProperty("java.home"), "bin", "java");
            final List<String> cmd = new ArrayList<>(prefix);
            cmd.addAll(List.of(java.toString(), "--enable-native-access=ALL-UNNAMED",
                "-Xmx256m", "-XX:+UseSerialGC", "-XX:ActiveProcessorCount=1", "-cp", System.getProperty("java.class.path"),
                EtcdWorker.class.getName(), "uri=" + uri, "rank=" + r, "world=" + world, "mode=" + mode));
            final Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            final StringBuilder sb = new StringBuilder();
            final Thread t = new Thread(() -> pump(p.getInputStream(), sb), "rank-" + r + "-out");
            t.setDaemon(true);
            t.start();
            procs.add(p);
            out.add(sb);
        }

        static void pump(final InputStream in, final StringBuilder sb)
        {
            final byte[] buf = new byte[4096];
            try
            {
                int n;
                while ((n = in.read(buf)) > 0)
                {
                    synchronized (sb)
                    {
                        sb.append(new String(buf, 0, n, StandardCharsets.UTF_8));
                    }
                }
            }
            catch (final IOException ignored)
            {
                // the process ended
            }
        }

        String output(final int r)
        {
            synchronized (out.get(r))
            {
                return out.get(r).toString();
            }
        }

        void awaitAll(final String marker, final long seconds) throws InterruptedException
        {
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
            for (int r = 0; r < procs.size(); r++)
            {
                while (!output(r).contains(marker))
                {
                    assertTrue(System.nanoTime() < deadline && (procs.get(r).isAlive() || output(r).contains(marker)),
                        "rank " + r + " did not print " + marker + ":\n" + output(r));
                    Thread.sleep(20);
                }
            }
        }

        int exit(final int r, final long seconds) throws InterruptedException
        {
            if (!procs.get(r).waitFor(seconds, TimeUnit.SECONDS))
            {
                procs.get(r).destroyForcibly();
                return -1;
            }
            return procs.get(r).exitValue();
        }

        @Override
        public void close()
        {
            for (final Process p : procs)
            {
                p.destroyForcibly();
            }
        }
    }

    private static void signal(final Process p, final String sig) throws Exception
    {
        final Process k = new ProcessBuilder("kill", "-" + sig, Long.toString(p.pid())).inheritIO().start();
        assertEquals(k.waitFor(), 0, "kill -" + sig);
    }

    private String etcdUri(final String job, final int ttlSeconds)
    {
        // generous joining: on a machine shared by many builds, starting eight JVMs can take a minute
        return etcd.uri(job, "ttl=" + ttlSeconds + "s&connectTimeout=300s");
    }

    private static String timeLine(final String output)
    {
        final Matcher m = Pattern.compile("TIME .*").matcher(output);
        return m.find() ? m.group() : "(no TIME line)";
    }

    private void exchangeAndPutSignal(final int world) throws Exception
    {
        try (Ranks ranks = new Ranks())
        {
            ranks.start(etcdUri("putsignal-" + world, 10), world, "done", -1, "done");
            for (int r = 0; r < world; r++)
            {
                final int rc = ranks.exit(r, 400);
                if (rc != 0)
                {
                    final StringBuilder all = new StringBuilder();
                    for (int q = 0; q < world; q++)
                    {
                        all.append("rank ").append(q).append(":\n").append(ranks.output(q)).append('\n');
                    }
                    throw new AssertionError("rank " + r + " exited with " + rc + "\n" + all);
                }
                assertTrue(ranks.output(r).contains("OK put+signal"), ranks.output(r));
            }
            System.out.println("etcd, " + world + " ranks: " + timeLine(ranks.output(0)));
        }
    }

    @Test
    public void twoRanksExchangeHandlesAndPutSignalOverEtcd() throws Exception
    {
        exchangeAndPutSignal(2);
    }

    @Test
    public void fourRanksExchangeHandlesAndPutSignalOverEtcd() throws Exception
    {
        exchangeAndPutSignal(4);
    }

    @Test
    public void eightRanksOverEtcdBesideTheEmbeddedRendezvous() throws Exception
    {
        exchangeAndPutSignal(8);
        try (Ranks ranks = new Ranks())
        {
            ranks.start("tcp://127.0.0.1:" + EtcdServer.freePort(), 8, "done", -1, "done");
            for (int r = 0; r < 8; r++)
            {
                assertEquals(ranks.exit(r, 400), 0, "rank " + r + ":\n" + ranks.output(r));
            }
            System.out.println("tcp, 8 ranks: " + timeLine(ranks.output(0)));
        }
    }

    private void survivorsLearnOfALostRank(final boolean stop) throws Exception
    {
        final int world = 3;
        final int victim = 2;
        try (Ranks ranks = new Ranks())
        {
            ranks.start(etcdUri(stop ? "sigstop" : "sigkill", TTL_SECONDS), world, "survivor", victim, "victim");
            ranks.awaitAll("READY", 400);
            final Process v = ranks.procs.get(victim);
            final long at = System.currentTimeMillis();
            signal(v, stop ? "STOP" : "KILL");
            for (int r = 0; r < world; r++)
            {
                if (r == victim)
                {
                    continue;
                }
                assertEquals(ranks.exit(r, 60), 0, "rank " + r + ":\n" + ranks.output(r));
                final Matcher m = LOST.matcher(ranks.output(r));
                assertTrue(m.find(), ranks.output(r));
                assertEquals(Integer.parseInt(m.group(1)), victim);
                final long ms = Long.parseLong(m.group(2)) - at;
                System.out.println((stop ? "SIGSTOP" : "SIGKILL") + ": rank " + r + " got PeerLostException for rank "
                    + victim + " " + ms + " ms after the signal (TTL " + TTL_SECONDS + " s)");
                assertTrue(ms <= TTL_SECONDS * 1000L + 2000, "detected after " + ms + " ms");
            }
            if (stop)
            {
                // the stopped rank comes back past its TTL and must learn that it is out of the job
                final long past = at + TTL_SECONDS * 1000L + 1000 - System.currentTimeMillis();
                if (past > 0)
                {
                    Thread.sleep(past);
                }
                signal(v, "CONT");
                try (OutputStream in = v.getOutputStream())
                {
                    in.write('\n');
                }
                assertEquals(ranks.exit(victim, 60), 0, ranks.output(victim));
                assertTrue(ranks.output(victim).contains("VICTIM") && ranks.output(victim).contains("lost its lease"),
                    ranks.output(victim));
            }
        }
    }

    @Test
    public void survivorsOfASigkilledRankGetPeerLostWithinTheTtl() throws Exception
    {
        survivorsLearnOfALostRank(false);
    }

    @Test
    public void survivorsOfASigstoppedRankGetPeerLostAndItLearnsItIsOut() throws Exception
    {
        survivorsLearnOfALostRank(true);
    }
}
