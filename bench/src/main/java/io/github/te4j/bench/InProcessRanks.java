package io.github.te4j.bench;

import io.github.te4j.bench.internal.NativeBench;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.IntFunction;

/**
 * Every rank a thread of this JVM with an engine of its own, as the in-process tests run two
 * ranks: they meet through the same rendezvous as child JVMs would, and their windows map each
 * other directly (one process). Ranks that share a GPU then share one CUDA context, so a round
 * trip between them times te4j instead of the GPU switching between two processes' contexts.
 * A thread cannot be killed: every wait inside a rank is bounded by --timeout, and the threads
 * are daemons, so one left running never holds the JVM. But a JVM that exits while a rank is
 * inside a CUDA call would tear the CUDA runtime down under it and crash: a shutdown hook gives
 * the ranks a moment, then ends the process without that teardown ({@link NativeBench#exitNow}),
 * saying which ranks it left behind.
 */
final class InProcessRanks implements LaunchedRanks
{
    /** Exit code of a rank that threw (never an exit code of BenchMain). */
    static final int THREW = -2;
    private static final int RUNNING = Integer.MIN_VALUE;

    /** How long an exiting JVM waits for ranks still running before it ends without teardown. */
    private static final Duration EXIT_GRACE = Duration.ofSeconds(2);

    private final List<Thread> threads = new ArrayList<>();
    private final AtomicIntegerArray exitCodes;
    private final AtomicReferenceArray<String> outputs;
    private final Thread exitGuard = new Thread(this::exitWithoutTeardownIfRunning, "te4j-bench-exit-guard");

    /** Starts {@code count} ranks, rank r with the command line {@code args.apply(r)}. */
    InProcessRanks(final int count, final IntFunction<List<String>> args)
    {
        exitCodes = new AtomicIntegerArray(count);
        outputs = new AtomicReferenceArray<>(count);
        for (int r = 0; r < count; r++)
        {
            exitCodes.set(r, RUNNING);
            final int rank = r;
            final List<String> a = args.apply(r);
            final Thread t = new Thread(() -> runRank(rank, a), "te4j-bench-rank-" + r);
            t.setDaemon(true);
            threads.add(t);
        }
        Runtime.getRuntime().addShutdownHook(exitGuard);
        threads.forEach(Thread::start);
    }

    /** The shutdown hook: returns at once when every rank has ended, else never returns. */
    private void exitWithoutTeardownIfRunning()
    {
        if (!anyAlive())
        {
            return;
        }
        threads.forEach(Thread::interrupt);
        final long deadline = System.nanoTime() + EXIT_GRACE.toNanos();
        try
        {
            for (final Thread t : threads)
            {
                final long left = deadline - System.nanoTime();
                if (left > 0)
                {
                    t.join(Math.max(1, left / 1_000_000));
                }
            }
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();  // exiting anyway: fall through to the check
        }
        final StringBuilder running = new StringBuilder();
        for (int r = 0; r < threads.size(); r++)
        {
            if (threads.get(r).isAlive())
            {
                running.append(running.length() == 0 ? "" : ", ").append(r);
            }
        }
        if (running.length() == 0)
        {
            return;
        }
        System.err.println("te4j-bench: exiting while rank(s) " + running + " still run (a bounded wait, up to"
            + " --timeout); ending the process without native teardown, which would crash under a running CUDA call");
        System.err.flush();
        System.out.flush();
        try
        {
            NativeBench.exitNow(BenchMain.EXIT_FAILED);
        }
        catch (final LinkageError e)  // no bench natives loaded: no rank reached CUDA either
        {
            System.err.println("te4j-bench: cannot end the process early (" + e + "); exiting normally");
        }
    }

    private void runRank(final int rank, final List<String> args)
    {
        int code;
        String output = "";
        try
        {
            code = new BenchRank(BenchMain.configOf(args)).run();
        }
        catch (final Throwable e)  // a rank's failure is reported by the launcher, never lost with its thread
        {
            final StringWriter w = new StringWriter();
            e.printStackTrace(new PrintWriter(w));
            output = w.toString();
            code = THREW;
        }
        outputs.set(rank, output);
        exitCodes.set(rank, code);
    }

    @Override
    public boolean anyAlive()
    {
        return threads.stream().anyMatch(Thread::isAlive);
    }

    @Override
    public boolean crashed()
    {
        for (int r = 0; r < threads.size(); r++)
        {
            final int c = exitCodes.get(r);
            if (c != RUNNING && c != 0 && !(r == 0 && c == BenchMain.EXIT_FAILED))
            {
                return true;
            }
        }
        return false;
    }

    @Override
    public List<Result> await(final Duration timeout) throws InterruptedException
    {
        final long deadline = System.nanoTime() + timeout.toNanos();
        for (final Thread t : threads)
        {
            final long left = deadline - System.nanoTime();
            if (left > 0)
            {
                t.join(Math.max(1, left / 1_000_000));
            }
        }
        final List<Result> out = new ArrayList<>();
        for (int r = 0; r < threads.size(); r++)
        {
            final int c = exitCodes.get(r);
            out.add(c == RUNNING
                ? new Result(r, -1, "[still running after " + timeout.toSeconds() + " s: given up on; its waits end at"
                    + " --timeout]")
                : new Result(r, c, outputs.get(r)));
        }
        return out;
    }

    @Override
    public void close()
    {
        for (final Thread t : threads)
        {
            t.interrupt();
        }
        if (!anyAlive())
        {
            try
            {
                Runtime.getRuntime().removeShutdownHook(exitGuard);
            }
            catch (final IllegalStateException e)  // the JVM is already exiting: the hook finds nothing running
            {
                return;
            }
        }
    }

    @Override
    public String describe(final int count)
    {
        return count + " ranks in this JVM (an engine each)";
    }
}
